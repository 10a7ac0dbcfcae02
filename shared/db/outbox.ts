import { z } from 'zod';
import { sql, type CommonQueryMethods } from './pool.js';

export const outboxRow = z.object({
  id: z.number(),
  eventId: z.string(),
  topic: z.string(),
  key: z.string(),
  payload: z.record(z.unknown()),
  createdAt: z.string(),
  requestId: z.string().nullable(),
  traceparent: z.string().nullable(),
});
export type OutboxRow = z.infer<typeof outboxRow>;

export interface NewOutboxRow {
  eventId: string;
  topic: string;
  key: string;
  payload: Record<string, unknown>;
  /** The request (or job) the event was written for, and its trace context. */
  requestId: string | null;
  traceparent: string | null;
}

/** One INSERT in the caller's transaction: the event exists exactly when the change it describes does. */
export async function insertOutboxEvent(tx: CommonQueryMethods, row: NewOutboxRow): Promise<void> {
  await tx.query(sql.typeAlias('void')`
    INSERT INTO outbox (event_id, topic, message_key, payload, request_id, traceparent)
    VALUES (${row.eventId}, ${row.topic}, ${row.key}, ${sql.jsonb(row.payload as never)}, ${row.requestId}, ${row.traceparent})`);
}

const columns = sql.fragment`id, event_id::text AS "eventId", topic, message_key AS key, payload, created_at AS "createdAt",
  request_id AS "requestId", traceparent`;

/** Rows not yet turned into jobs; SKIP LOCKED lets several dispatchers share the table. */
export async function claimUndispatched(tx: CommonQueryMethods, limit: number) {
  return tx.any(sql.type(outboxRow)`
    SELECT ${columns} FROM outbox WHERE dispatched_at IS NULL ORDER BY id LIMIT ${limit} FOR UPDATE SKIP LOCKED`);
}

export async function markDispatched(tx: CommonQueryMethods, ids: readonly number[]): Promise<void> {
  await tx.query(sql.typeAlias('void')`UPDATE outbox SET dispatched_at = now() WHERE id = ANY(${sql.array(ids, 'int8')})`);
}

export const SHARDS = 8;
// Arbitrary namespace for the relay's per-shard advisory locks.
const RELAY_LOCK_NAMESPACE = 7_240_001;

/**
 * Takes the shard for this transaction, or returns false when another relay has it. One relay per shard
 * publishes in id order, so the events of one key (bookingId) reach Kafka in the order they were written.
 */
export async function lockShard(tx: CommonQueryMethods, shard: number): Promise<boolean> {
  return tx.oneFirst(sql.type(z.object({ locked: z.boolean() }))`
    SELECT pg_try_advisory_xact_lock(${RELAY_LOCK_NAMESPACE}, ${shard}) AS locked`);
}

/**
 * The shard's oldest unpublished rows. FOR UPDATE waits, never SKIP LOCKED: the dispatcher locks rows while
 * it enqueues them, and skipping one would let later events of the same key overtake it on Kafka.
 */
export async function claimUnpublished(tx: CommonQueryMethods, shard: number, limit: number) {
  return tx.any(sql.type(outboxRow)`
    SELECT ${columns} FROM outbox WHERE published_at IS NULL AND shard = ${shard}
    ORDER BY id LIMIT ${limit} FOR UPDATE`);
}

export async function markPublished(tx: CommonQueryMethods, ids: readonly number[]): Promise<void> {
  await tx.query(sql.typeAlias('void')`UPDATE outbox SET published_at = clock_timestamp() WHERE id = ANY(${sql.array(ids, 'int8')})`);
}

const backlogRow = z.object({
  unpublished: z.number(), oldestUnpublishedAgeSeconds: z.number(), undispatched: z.number(), oldestUndispatchedAgeSeconds: z.number(),
});

/**
 * Events waiting for the relay (unpublished) and for the dispatcher (undispatched): counts and the age of the
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
