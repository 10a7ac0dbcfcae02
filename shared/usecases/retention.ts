import type { Deps } from './deps.js';
import { RETAINED_TABLES, deleteSettled, type RetainedTable } from '../db/retention.js';

/** Rows deleted per statement: short transactions, no long lock on the hot outbox. */
export const RETENTION_BATCH = 1000;

/**
 * Deletes what is settled and older than RETENTION_DAYS from the tables that would otherwise grow for ever
 * (outbox, webhook_inbox, notification), a batch at a time until a batch comes back short. Returns the count per table.
 */
export async function purgeSettled(deps: Pick<Deps, 'db' | 'clock' | 'config'>, batch = RETENTION_BATCH): Promise<Record<RetainedTable, number>> {
  const before = new Date(deps.clock.now().getTime() - deps.config.RETENTION_DAYS * 86_400_000);
  const purged = Object.fromEntries(RETAINED_TABLES.map((t) => [t, 0])) as Record<RetainedTable, number>;
  for (const table of RETAINED_TABLES) {
    for (;;) {
      const n = await deleteSettled(deps.db, table, before, batch);
      purged[table] += n;
      if (n < batch) break;
    }
  }
  return purged;
}
