import { config } from '../../shared/config.js';
import { logger } from '../../shared/logger.js';
import { onShutdown } from '../../shared/runtime.js';
import { createPspSandbox } from './app.js';

const c = config();
const log = logger.child({ proc: 'psp-sandbox' });
const sandbox = createPspSandbox({
  apiKey: c.PSP_API_KEY,
  webhookSecret: c.PAYMENT_WEBHOOK_SECRET,
  webhookUrl: `${c.PUBLIC_BASE_URL.replace(/\/+$/, '')}/payments/webhook`,
  publicUrl: c.PSP_PUBLIC_URL ?? `http://127.0.0.1:${c.PSP_PORT}`,
  logger: log,
});

// 127.0.0.1 unless PSP_HOST says otherwise (compose, on its private network): the control routes move money.
const { url } = await sandbox.listen(c.PSP_PORT, c.PSP_HOST);
log.info({ url, publicUrl: sandbox.settings.publicUrl, webhookUrl: sandbox.settings.webhookUrl }, 'psp sandbox listening');

onShutdown(() => sandbox.close(), (m) => log.info(m));
