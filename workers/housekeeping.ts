import type { Deps } from '../shared/usecases/deps.js';
import { purgeSettled } from '../shared/usecases/retention.js';
import { purgeIdempotencyKeys } from '../shared/usecases/idempotency.js';
import { purgeExpiredQuotes } from '../shared/usecases/quotes.js';
import { logger } from '../shared/logger.js';

/** How often the maintenance process purges (every process of the kind does; the purges are idempotent). */
export const HOUSEKEEPING_EVERY_MS = 10 * 60_000;

export type HousekeepingPass = Awaited<ReturnType<typeof purgeSettled>> & { idempotency_key: number; quote: number };

/** One pass: settled outbox, webhook_inbox and notification rows past RETENTION_DAYS, old idempotency keys, expired quotes. */
export async function housekeepingPass(deps: Deps): Promise<HousekeepingPass> {
  const settled = await purgeSettled(deps);
  return { ...settled, idempotency_key: await purgeIdempotencyKeys(deps), quote: await purgeExpiredQuotes(deps) };
}

/**
 * The maintenance process's own loop, in the process and not in Redis: a job scheduler lives only in Redis and is
 * gone when Redis loses its data, so the purges would stop for ever. The first pass runs at start.
 */
export function startHousekeeping(deps: Deps, everyMs = HOUSEKEEPING_EVERY_MS): { stop(): Promise<void> } {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const pass = async () => {
    try {
      const purged = await housekeepingPass(deps);
      logger[Object.values(purged).some((n) => n > 0) ? 'info' : 'debug']({ purged }, 'housekeeping pass');
    } catch (err) {
      logger.warn({ err }, 'housekeeping pass failed; retried at the next one');
    }
  };
  const loop = () => {
    running = pass().finally(() => {
      if (!stopped) timer = setTimeout(loop, everyMs * (0.9 + Math.random() * 0.2));
    });
  };
  loop();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
