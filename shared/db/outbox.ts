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

/** An outbox row as the pump claims it: the payload as stored (JSON text), and which lanes still need it. */
export interface PendingRow {
  id: number;
  eventId: string;
  topic: string;
  key: string;
  payload: string;
  /** The request the event was written for and its trace context (Kafka headers, job data); null outside one. */
  requestId: string | null;
  traceparent: string | null;
  toPublish: boolean;
  toDispatch: boolean;
}

/** The pump's lanes: publishing to Kafka (published_at) and turning events into jobs (dispatched_at). */
export interface Lanes {
  publish: boolean;
  dispatch: boolean;
}

// The pump's statements run as named statements on plain node-postgres (PreparedQueries): a pass is four of
// them, 25 passes a second at the peak, and through slonik they cost ~5× the client CPU.

// Arbitrary namespace of the pump's lane locks: one pump at a time works a lane.
const PUMP_LOCK_NAMESPACE = 7_240_002;
const LANE_LOCK = { publish: 1, dispatch: 2 } as const;
const laneName = (l: Lanes) => (l.publish && l.dispatch ? 'both' : l.publish ? 'publish' : 'dispatch');

/**
 * Takes the lanes asked for, for this transaction; a lane another pump holds right now is not taken. One
 * publisher at a time, claiming in id order, keeps the events of one key (booking) in order on Kafka.
 * Also turns bitmap scans off for the transaction: without statistics the planner reads the claim's partial
 * indexes with bitmap scans, which visit every entry left by marked rows until the next VACUUM; an index scan
 * in id order stops at the LIMIT and marks the dead entries it passes, so the next claim skips them.
 */
export async function lockLanes(tx: PreparedQueries, want: Lanes): Promise<Lanes> {
  if (!want.publish && !want.dispatch) return want;
  const lock = (lane: keyof Lanes) => (want[lane] ? `pg_try_advisory_xact_lock(${PUMP_LOCK_NAMESPACE}, ${LANE_LOCK[lane]})` : 'false');
  const [row] = await tx.query<Lanes>(`pump-lock-${laneName(want)}`, `
    SELECT set_config('enable_bitmapscan', 'off', true) AS planner, ${lock('publish')} AS publish, ${lock('dispatch')} AS dispatch`, []);
  return { publish: row!.publish, dispatch: row!.dispatch };
}

/**
 * The oldest rows each lane still needs (up to `limit` per lane), locked in id order. FOR UPDATE waits, never
 * SKIP LOCKED: skipping a row some other transaction holds would let a later event of its key overtake it.
 * The lanes' own LIMITs come first, so a lane whose sink is down (its rows piling up) never starves the other.
 */
export async function claimPending(tx: PreparedQueries, lanes: Lanes, limit: number): Promise<PendingRow[]> {
  if (!lanes.publish && !lanes.dispatch) return [];
  const pick = [
    ...(lanes.publish ? ['(SELECT id FROM outbox WHERE published_at IS NULL ORDER BY id LIMIT $1)'] : []),
    ...(lanes.dispatch ? ['(SELECT id FROM outbox WHERE dispatched_at IS NULL ORDER BY id LIMIT $1)'] : []),
  ];
  return tx.query<PendingRow>(`pump-claim-${laneName(lanes)}`, `
    SELECT id, event_id::text AS "eventId", topic, message_key AS key, payload::text AS payload,
           request_id AS "requestId", traceparent, published_at IS NULL AS "toPublish", dispatched_at IS NULL AS "toDispatch"
    FROM outbox
    WHERE id = ANY (ARRAY(${pick.join(' UNION ')}))
    ORDER BY id
    FOR UPDATE`, [limit]);
}

/** Marks what each lane delivered, in one statement. */
export async function markDone(tx: PreparedQueries, published: readonly number[], dispatched: readonly number[]): Promise<void> {
  if (published.length === 0 && dispatched.length === 0) return;
  await tx.query('pump-mark', `
    UPDATE outbox SET
      published_at = CASE WHEN id = ANY($1::int8[]) THEN clock_timestamp() ELSE published_at END,
      dispatched_at = CASE WHEN id = ANY($2::int8[]) THEN clock_timestamp() ELSE dispatched_at END
    WHERE id = ANY($1::int8[]) OR id = ANY($2::int8[])`, [published, dispatched]);
}

/**
 * Removes the dead versions of marked rows and, with them, their entries in the two partial indexes; with
 * autovacuum off nothing else would, and every claim would walk them. INDEX_CLEANUP ON: otherwise VACUUM skips
 * the indexes when few heap pages changed, which is always the case here. Not in a transaction (VACUUM cannot).
 */
export async function vacuumOutbox(db: PreparedQueries): Promise<void> {
  await db.query('', 'VACUUM (INDEX_CLEANUP ON, TRUNCATE OFF, SKIP_LOCKED, PARALLEL 0) outbox', []);
}

const backlogRow = z.object({
  unpublished: z.number(), oldestUnpublishedAgeSeconds: z.number(), undispatched: z.number(), oldestUndispatchedAgeSeconds: z.number(),
});

/**
 * Events waiting for the pump's publish lane (unpublished) and its dispatch lane (undispatched): counts and the age of the
 * oldest, 0 when none. Each subquery matches a partial index's predicate, so only waiting rows are read.
 */
export async function outboxBacklog(db: CommonQueryMethods) {
  return db.one(sql.type(backlogRow)`
    SELECT (SELECT count(*) FROM outbox WHERE published_at IS NULL)::int AS unpublished,
           coalesce(extract(epoch FROM clock_timestamp() - (SELECT min(created_at) FROM outbox WHERE published_at IS NULL)), 0)::float8
             AS "oldestUnpublishedAgeSeconds",
           (SELECT count(*) FROM outbox WHERE dispatched_at IS NULL)::int AS undispatched,
           coalesce(extract(epoch FROM clock_timestamp() - (SELECT min(created_at) FROM outbox WHERE dispatched_at IS NULL)), 0)::float8
             AS "oldestUndispatchedAgeSeconds"`);
}
