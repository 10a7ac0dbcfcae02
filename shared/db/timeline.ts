import { z } from 'zod';
import { sql, type CommonQueryMethods } from './pool.js';

// Pages of a booking's story (booking_timeline, migration 020), oldest first by (at, kind, id), with no gap
// between pages while new entries arrive — the inventory audit's method (db/ledger-pages.ts) on this table's key.
//
// An entry becomes visible when its transaction commits, which may be after a page past its key was read. Such an
// entry belongs to a transaction that was in progress at that read: `at` is drawn by clock_timestamp() after the
// writing transaction took its xid, so a transaction that had not started by then draws a later `at`. A cursor
// therefore carries, beside the last key, the transactions in progress at that read (32-bit xids, as `xmin`
// shows them: the table is append-only, so a row's xmin is the transaction that wrote it); the next page first
// returns their entries at or below that key ("late" entries), then goes on after it.

/** An entry's place in the order: `at` to the microsecond (ISO-8601, UTC), then kind, then id. */
export interface TimelineKey {
  at: string;
  kind: string;
  id: number;
}

export interface TimelineCursor {
  /** Entries after this key come next. */
  after: TimelineKey;
  /** Transactions in progress when `after` was read: their entries at or below it are still owed. */
  inFlight: string[];
  /** Late entries owed up to this key were already returned (a page full of late entries). */
  lateAfter: TimelineKey | null;
}

const row = z.object({
  id: z.number(),
  late: z.boolean(),
  at: z.string(),
  kind: z.enum(['event', 'payment', 'refund', 'intent', 'notification']),
  type: z.string(),
  detail: z.record(z.unknown()),
  inFlight: z.array(z.string()),
});
export type TimelineRow = z.infer<typeof row>;

const ZERO: TimelineKey = { at: '1970-01-01T00:00:00.000000Z', kind: '', id: 0 };
const keyOf = (k: TimelineKey) => sql.fragment`(${k.at}::timestamptz, ${k.kind}::text, ${k.id}::bigint)`;

// What a payment, a refund or an intent cancellation is now, from its own row (CASE: a source id is cast only for
// the kind it belongs to).
const live = sql.fragment`
  CASE t.kind
    WHEN 'payment' THEN (SELECT jsonb_build_object('paymentId', p.id, 'amount', p.amount, 'currency', p.currency, 'outcome', p.outcome,
        'paymentIntentId', p.payment_intent_id, 'providerTxnId', p.provider_txn_id)
      FROM payment p WHERE p.id = CASE WHEN t.kind = 'payment' THEN t.source_id::bigint END)
    WHEN 'refund' THEN (SELECT jsonb_build_object('refundId', r.id, 'amount', r.amount, 'currency', r.currency, 'reason', r.reason,
        'status', r.status, 'attempts', r.attempts, 'lastError', r.last_error, 'providerRefundId', r.provider_refund_id,
        'paymentIntentId', r.payment_intent_id)
      FROM refund r WHERE r.id = CASE WHEN t.kind = 'refund' THEN t.source_id::bigint END)
    WHEN 'intent' THEN (SELECT jsonb_build_object('status', CASE WHEN c.done_at IS NULL THEN 'pending' ELSE 'done' END,
        'attempts', c.attempts, 'lastError', c.last_error, 'doneAt', c.done_at)
      FROM intent_cancellation c WHERE c.booking_id = t.booking_id)
  END`;

const columns = sql.fragment`t.id, to_char(t.at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS at, t.kind, t.type,
  t.detail || coalesce(${live}, '{}'::jsonb) AS detail`;

/**
 * Up to `limit + 1` late entries, then up to `limit + 1` entries after the cursor, all read in one snapshot, each
 * with that snapshot's in-progress transactions.
 */
export async function readTimelinePage(
  db: CommonQueryMethods,
  q: { bookingId: number; limit: number; cursor: TimelineCursor | null },
): Promise<readonly TimelineRow[]> {
  const c = q.cursor ?? { after: ZERO, inFlight: [], lateAfter: null };
  const order = sql.fragment`ORDER BY t.at, t.kind, t.id`;
  return db.any(sql.type(row)`
    WITH late AS (
      SELECT ${columns}, true AS late, t.at AS sort_at, t.kind AS sort_kind FROM booking_timeline t
      WHERE t.booking_id = ${q.bookingId} AND (t.at, t.kind, t.id) <= ${keyOf(c.after)}
        AND (t.at, t.kind, t.id) > ${keyOf(c.lateAfter ?? ZERO)} AND t.xmin::text = ANY(${sql.array(c.inFlight, 'text')})
      ${order} LIMIT ${q.limit + 1}
    ), fresh AS (
      SELECT ${columns}, false AS late, t.at AS sort_at, t.kind AS sort_kind FROM booking_timeline t
      WHERE t.booking_id = ${q.bookingId} AND (t.at, t.kind, t.id) > ${keyOf(c.after)}
      ${order} LIMIT ${q.limit + 1}
    ), in_flight AS (
      SELECT coalesce(array_agg(((x::text)::numeric % 4294967296)::bigint::text), '{}') AS xids FROM pg_snapshot_xip(pg_current_snapshot()) x
    )
    SELECT p.id, p.late, p.at, p.kind, p.type, p.detail, in_flight.xids AS "inFlight"
    FROM (SELECT * FROM late UNION ALL SELECT * FROM fresh) p, in_flight
    ORDER BY p.late DESC, p.sort_at, p.sort_kind, p.id`);
}

/**
 * Which of these events this database wrote (its outbox has the row, or the booking's story the entry once the row
 * was purged): events on a Kafka that other deployments share are told apart by it. Both lookups use an index.
 */
export async function recordedEventIds(db: CommonQueryMethods, events: readonly { eventId: string; bookingId: number | null }[]): Promise<Set<string>> {
  if (events.length === 0) return new Set();
  const rows = await db.any(sql.type(z.object({ eventId: z.string() }))`
    SELECT e.event_id::text AS "eventId"
    FROM unnest(${sql.array(events.map((e) => e.eventId), 'uuid')}, ${sql.array(events.map((e) => e.bookingId), 'int8')}) AS e (event_id, booking_id)
    WHERE EXISTS (SELECT 1 FROM outbox o WHERE o.event_id = e.event_id)
       OR EXISTS (SELECT 1 FROM booking_timeline t
                  WHERE t.booking_id = e.booking_id AND t.kind = 'event' AND t.source_id = e.event_id::text)`);
  return new Set(rows.map((r) => r.eventId));
}

/** The ids of the events this database recorded about a booking, oldest first. */
export async function bookingEventIds(db: CommonQueryMethods, bookingId: number): Promise<string[]> {
  const rows = await db.any(sql.type(z.object({ eventId: z.string() }))`
    SELECT source_id AS "eventId" FROM booking_timeline WHERE booking_id = ${bookingId} AND kind = 'event' ORDER BY at, kind, id`);
  return rows.map((r) => r.eventId);
}
