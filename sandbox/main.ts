import { config } from '../shared/config.js';
import { logger } from '../shared/logger.js';
import { runProcess } from '../shared/process.js';
import { createPspSandbox } from './app.js';

// The sandbox provider as its own process (`psp` in the Procfile; npm start runs it when PSP_URL is unset).
await runProcess('psp', async () => {
  const c = config();
  const sandbox = createPspSandbox({
    apiKey: c.PSP_API_KEY,
    webhookSecret: c.PAYMENT_WEBHOOK_SECRET,
    webhookUrl: `${c.PUBLIC_BASE_URL.replace(/\/+$/, '')}/payments/webhook`,
    publicUrl: c.PSP_PUBLIC_URL ?? `http://127.0.0.1:${c.PSP_PORT}`,
    logger,
  });
  const { url } = await sandbox.listen(c.PSP_PORT, c.PSP_HOST);
  logger.info({ url, publicUrl: sandbox.settings.publicUrl, webhookUrl: sandbox.settings.webhookUrl }, 'psp sandbox listening');
  return () => sandbox.close();
});
