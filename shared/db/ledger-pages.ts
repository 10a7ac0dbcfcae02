import { z } from 'zod';
import { sql, type CommonQueryMethods } from './pool.js';

// Pages of the inventory ledger (the audit API), oldest first by id, with no gap between pages.
//
// Ids are drawn when a row is written, but rows become visible when their transactions commit, in another order:
// a reader that resumed after the highest id it saw would skip a row committed later with a smaller id. Such a row
// belongs to a transaction that was in progress when the page was read. So a cursor carries, beside the last id,
// the transactions in progress at that read (as the 32-bit xids rows carry in `xmin`); the next page first
// returns their rows at or below that id ("late" rows), then continues after it. A transaction not in progress
// then and not ended had not started, so its rows draw ids above the last one.

export interface LedgerCursor {
  /** Rows with ids above this come next. */
  afterId: number;
  /** Transactions in progress when `afterId` was read: their rows at or below it are still owed. */
  inFlight: string[];
  /** Late rows owed up to this id were already returned (a page full of late rows). */
  lateAfterId: number;
}

const entry = z.object({
  id: z.number(),
  late: z.boolean(),
  at: z.string(),
  date: z.string(),
  actor: z.string(),
  reason: z.string(),
  bookingId: z.number().nullable(),
  before: z.object({ sellable: z.number(), held: z.number(), confirmed: z.number() }),
  after: z.object({ sellable: z.number(), held: z.number(), confirmed: z.number() }),
  inFlight: z.array(z.string()),
});
export type LedgerPageRow = z.infer<typeof entry>;

/**
 * Up to `limit + 1` late rows, then up to `limit + 1` rows after the cursor, all read in one snapshot, each with that
 * snapshot's in-progress transactions (as 32-bit xids, comparable with `xmin`).
 */
export async function readLedgerPage(
  db: CommonQueryMethods,
  q: { roomTypeId: number; from: string; to: string; limit: number; cursor: LedgerCursor | null },
): Promise<readonly LedgerPageRow[]> {
  const c = q.cursor ?? { afterId: 0, inFlight: [], lateAfterId: 0 };
  const columns = sql.fragment`id, at, night::text AS date, actor, reason,
    booking_id AS "bookingId",
    json_build_object('sellable', before_sellable, 'held', before_held, 'confirmed', before_confirmed) AS before,
    json_build_object('sellable', after_sellable, 'held', after_held, 'confirmed', after_confirmed) AS after`;
  const range = sql.fragment`room_type_id = ${q.roomTypeId} AND night >= ${q.from}::date AND night < ${q.to}::date`;
  return db.any(sql.type(entry)`
    WITH late AS (
      SELECT ${columns}, true AS late FROM inventory_ledger
      WHERE ${range} AND id <= ${c.afterId} AND id > ${c.lateAfterId} AND xmin::text = ANY(${sql.array(c.inFlight, 'text')})
      ORDER BY id LIMIT ${q.limit + 1}
    ), fresh AS (
      SELECT ${columns}, false AS late FROM inventory_ledger WHERE ${range} AND id > ${c.afterId} ORDER BY id LIMIT ${q.limit + 1}
    ), in_flight AS (
      SELECT coalesce(array_agg(((x::text)::numeric % 4294967296)::bigint::text), '{}') AS xids FROM pg_snapshot_xip(pg_current_snapshot()) x
    )
    SELECT p.*, in_flight.xids AS "inFlight"
    FROM (SELECT * FROM late UNION ALL SELECT * FROM fresh) p, in_flight
    ORDER BY p.late DESC, p.id`);
}
