import pg from 'pg';
import { logger } from '../shared/logger.js';

export interface DrainOptions {
  /** Safety-net poll: a NOTIFY is lost while the listener reconnects. */
  pollMs?: number;
  /**
   * After a notification, wait up to this long before draining, so that one pass carries the events of many
   * commits (a pass costs about the same for 1 row as for 50) ...
   */
  coalesceMs?: number;
  /** ... or until this many notifications (commits) have arrived. */
  coalesceCount?: number;
}

/**
 * Runs `drain` whenever the outbox trigger NOTIFYs (coalesced, see DrainOptions), and every `pollMs`.
 * `drain` returns true while more work is waiting (a full batch): then it runs again at once.
 */
export function drainOnNotify(databaseUrl: string, channel: string, drain: () => Promise<boolean>, opts: DrainOptions = {}) {
  const { pollMs = 1000, coalesceMs = 0, coalesceCount = Infinity } = opts;
  let stopped = false;
  let running: Promise<void> | null = null;
  let again = false;
  let pending: NodeJS.Timeout | null = null;
  let client: pg.Client | null = null;
  /** Notifications since the last pass started; `enough` resolves a gathering wait early. */
  let notifications = 0;
  let enough: (() => void) | null = null;
  const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const gather = () => new Promise<void>((resolve) => {
    if (notifications >= coalesceCount) return resolve();
    const t = setTimeout(done, coalesceMs);
    function done() {
      clearTimeout(t);
      enough = null;
      resolve();
    }
    enough = done;
  });

  const kick = () => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = (async () => {
      do {
        again = false;
        notifications = 0;
        try {
          while (!stopped && (await drain()));
        } catch (err) {
          logger.warn({ err: String(err), channel }, 'drain failed; retrying');
          await pause(500);
          again = true;
        }
        // Commits that arrived during the pass: gather a few more before the next one.
        if (again && coalesceMs > 0) await gather();
      } while (again && !stopped);
    })().finally(() => {
      running = null;
    });
  };

  const fire = () => {
    if (pending) clearTimeout(pending);
    pending = null;
    kick();
  };
  const notified = () => {
    if (stopped) return;
    notifications++;
    if (enough && notifications >= coalesceCount) enough();
    if (running || coalesceMs <= 0 || notifications >= coalesceCount) {
      fire();
      return;
    }
    pending ??= setTimeout(fire, coalesceMs);
  };

  const listen = async () => {
    while (!stopped) {
      try {
        client = new pg.Client({ connectionString: databaseUrl });
        client.on('notification', notified);
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
      if (!stopped) await pause(1000);
    }
  };
  void listen();
  const timer = setInterval(kick, pollMs);

  return {
    kick,
    async stop() {
      stopped = true;
      clearInterval(timer);
      if (pending) clearTimeout(pending);
      await running;
      await client?.end().catch(() => {});
    },
  };
}
