import pg from 'pg';
import { logger } from '../shared/logger.js';

/**
 * Runs `drain` whenever the outbox trigger NOTIFYs, and every `pollMs` as a safety net (a NOTIFY is lost
 * while the listener reconnects). `drain` returns true while more work may be waiting.
 */
export function drainOnNotify(databaseUrl: string, channel: string, drain: () => Promise<boolean>, pollMs = 1000) {
  let stopped = false;
  let running: Promise<void> | null = null;
  let again = false;
  let client: pg.Client | null = null;

  const kick = () => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = (async () => {
      do {
        again = false;
        try {
          while (!stopped && (await drain()));
        } catch (err) {
          logger.warn({ err: String(err), channel }, 'drain failed; retrying');
          await new Promise((r) => setTimeout(r, 500));
          again = true;
        }
      } while (again && !stopped);
    })().finally(() => {
      running = null;
    });
  };

  const listen = async () => {
    while (!stopped) {
      try {
        client = new pg.Client({ connectionString: databaseUrl });
        client.on('notification', kick);
        await client.connect();
        await client.query(`LISTEN ${channel}`);
        kick();
        await new Promise<void>((resolve) => {
          client!.on('error', () => resolve());
          client!.on('end', () => resolve());
        });
      } catch (err) {
        logger.warn({ err: String(err), channel }, 'listen connection failed');
      }
      await client?.end().catch(() => {});
      if (!stopped) await new Promise((r) => setTimeout(r, 1000));
    }
  };
  void listen();
  const timer = setInterval(kick, pollMs);

  return {
    kick,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
      await client?.end().catch(() => {});
    },
  };
}
