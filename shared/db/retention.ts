import { sql, type CommonQueryMethods } from './pool.js';

// What "settled" means for each table the retention purge trims: the one place to adapt when a table changes.
//   outbox         published to Kafka (an unpublished row is never purged)
//   webhook_inbox  every row: its event was applied when it was written (effects are keyed by providerTxnId)
//   notification   settled (sent, logged or skipped: sent_at is the moment it was settled)
export const RETAINED_TABLES = ['outbox', 'webhook_inbox', 'notification'] as const;
export type RetainedTable = (typeof RETAINED_TABLES)[number];

/** Deletes up to `limit` settled rows of `table` older than `before`; returns how many. */
export async function deleteSettled(db: CommonQueryMethods, table: RetainedTable, before: Date, limit: number): Promise<number> {
  const iso = before.toISOString();
  const settled = {
    outbox: sql.fragment`SELECT ctid FROM outbox WHERE published_at IS NOT NULL AND created_at < ${iso}::timestamptz LIMIT ${limit}`,
    webhook_inbox: sql.fragment`SELECT ctid FROM webhook_inbox WHERE received_at < ${iso}::timestamptz LIMIT ${limit}`,
    notification: sql.fragment`SELECT ctid FROM notification WHERE sent_at < ${iso}::timestamptz LIMIT ${limit}`,
  }[table];
  const r = await db.query(sql.typeAlias('void')`DELETE FROM ${sql.identifier([table])} WHERE ctid = ANY(ARRAY(${settled}))`);
  return r.rowCount;
}
