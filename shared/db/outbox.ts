import { z } from 'zod';
import { sql, type CommonQueryMethods } from './pool.js';
import type { PreparedQueries } from './prepared.js';

export interface NewOutboxRow {
  eventId: string;
  topic: string;
  key: string;
  payload: Record<string, unknown>;
  /** The request (or job) the event was written for, and its trace context. */
  requestId: string | null;
  traceparent: string | null;
}

/** An event that the statement writing it completes (key and payload fields) from the row it inserts (see insertCarHoldWithEvent). */
export type RowEventDraft = Omit<NewOutboxRow, 'key'>;

/** One INSERT in the caller's transaction: the event exists exactly when the change it describes does. */
export async function insertOutboxEvent(tx: CommonQueryMethods, row: NewOutboxRow): Promise<void> {
  await tx.query(sql.typeAlias('void')`
    INSERT INTO outbox (event_id, topic, message_key, payload, request_id, traceparent)
    VALUES (${row.eventId}, ${row.topic}, ${row.key}, ${sql.jsonb(row.payload as never)}, ${row.requestId}, ${row.traceparent})`);
}

/** An outbox row as the pump claims it: the payload as stored (JSON text), the message value as is. */
export interface PendingRow {
  id: number;
  eventId: string;
  topic: string;
  key: string;
  payload: string;
  /** The request the event was written for and its trace context (Kafka headers); null outside one. */
  requestId: string | null;
  traceparent: string | null;
}

// The pump's statements run as named statements on plain node-postgres (PreparedQueries): a pass is four of
// them, 25 passes a second at the peak, and through slonik they cost ~5× the client CPU.

// Arbitrary namespace and key of the pump's publisher lock: one pump at a time publishes. (Key 1 was the publish
// lane's when the pump had two lanes: a pump of that version, during a rolling update, still excludes this one.)
const PUMP_LOCK_NAMESPACE = 7_240_002;
const PUBLISHER_LOCK = 1;

/**
 * Takes the publisher lock for this transaction; false when another pump holds it right now. One publisher at a
 * time, claiming in id order, keeps the events of one key (booking) in order on Kafka.
 * Also turns bitmap scans off for the transaction: without statistics the planner reads the claim's partial
 * index with a bitmap scan, which visits every entry left by marked rows until the next VACUUM; an index scan
 * in id order stops at the LIMIT and marks the dead entries it passes, so the next claim skips them.
 */
export async function lockPublisher(tx: PreparedQueries): Promise<boolean> {
  const [row] = await tx.query<{ locked: boolean }>('pump-lock', `
    SELECT set_config('enable_bitmapscan', 'off', true) AS planner,
           pg_try_advisory_xact_lock(${PUMP_LOCK_NAMESPACE}, ${PUBLISHER_LOCK}) AS locked`, []);
  return row!.locked;
}

/**
 * The oldest unpublished rows (up to `limit`), locked in id order. FOR UPDATE waits, never SKIP LOCKED: skipping
 * a row some other transaction holds would let a later event of its key overtake it. The ids come from the
 * partial index first (an index-only scan that stops at the LIMIT), then the rows by primary key.
 */
export async function claimPending(tx: PreparedQueries, limit: number): Promise<PendingRow[]> {
  return tx.query<PendingRow>('pump-claim', `
    SELECT id, event_id::text AS "eventId", topic, message_key AS key, payload::text AS payload,
           request_id AS "requestId", traceparent
    FROM outbox
    WHERE id = ANY (ARRAY(SELECT id FROM outbox WHERE published_at IS NULL ORDER BY id LIMIT $1)) AND published_at IS NULL
    ORDER BY id
    FOR UPDATE`, [limit]);
}

/**
 * Marks the rows Kafka acknowledged, in one statement, all with one time: the uncorrelated subquery is evaluated
 * once (an InitPlan), while a bare clock_timestamp() is read per row, and on a busy machine the rows of one batch
 * would be marked milliseconds apart in the order the scan visits them, not in id order. One time per pass, and
 * passes marked one after another (the publisher lock), make published_at order the order of publication.
 */
export async function markPublished(tx: PreparedQueries, ids: readonly number[]): Promise<void> {
  if (ids.length === 0) return;
  await tx.query('pump-mark', `UPDATE outbox SET published_at = (SELECT clock_timestamp()) WHERE id = ANY($1::int8[])`, [ids]);
}

/**
 * Removes the dead versions of marked rows and, with them, their entries in the partial index; with
 * autovacuum off nothing else would, and every claim would walk them. INDEX_CLEANUP ON: otherwise VACUUM skips
 * the indexes when few heap pages changed, which is always the case here. Not in a transaction (VACUUM cannot).
 */
export async function vacuumOutbox(db: PreparedQueries): Promise<void> {
  await db.query('', 'VACUUM (INDEX_CLEANUP ON, TRUNCATE OFF, SKIP_LOCKED, PARALLEL 0) outbox', []);
}

const backlogRow = z.object({ unpublished: z.number(), oldestUnpublishedAgeSeconds: z.number() });

/**
 * Events waiting for the pump (not yet on Kafka): their count and the age of the oldest, 0 when none. Each
 * subquery matches the partial index's predicate, so only waiting rows are read.
 */
export async function outboxBacklog(db: CommonQueryMethods) {
  return db.one(sql.type(backlogRow)`
    SELECT (SELECT count(*) FROM outbox WHERE published_at IS NULL)::int AS unpublished,
           coalesce(extract(epoch FROM clock_timestamp() - (SELECT min(created_at) FROM outbox WHERE published_at IS NULL)), 0)::float8
             AS "oldestUnpublishedAgeSeconds"`);
}
