import { config } from '../../shared/config.js';
import { logger } from '../../shared/logger.js';
import { createPspSandbox } from './app.js';

const c = config();
const log = logger.child({ proc: 'psp-sandbox' });
const sandbox = createPspSandbox({
  apiKey: c.PSP_API_KEY,
  webhookSecret: c.PAYMENT_WEBHOOK_SECRET,
  webhookUrl: `${c.PUBLIC_BASE_URL.replace(/\/+$/, '')}/payments/webhook`,
  publicUrl: process.env.PSP_PUBLIC_URL || `http://127.0.0.1:${c.PSP_PORT}`,
  logger: log,
});

const { url } = await sandbox.listen(c.PSP_PORT, '0.0.0.0');
log.info({ url, publicUrl: sandbox.settings.publicUrl, webhookUrl: sandbox.settings.webhookUrl }, 'psp sandbox listening');

let stopping = false;
async function stop(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  log.info({ signal }, 'psp sandbox stopping');
  await sandbox.close();
  process.exit(0);
}
process.once('SIGTERM', () => void stop('SIGTERM'));
process.once('SIGINT', () => void stop('SIGINT'));
