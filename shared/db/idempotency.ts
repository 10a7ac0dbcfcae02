import { z } from 'zod';
import { sql, type CommonQueryMethods } from './pool.js';

const row = z.object({
  requestHash: z.string(),
  state: z.enum(['IN_PROGRESS', 'DONE']),
  responseBody: z.unknown(),
  stale: z.boolean(),
});
const returned = z.object({ done: z.literal(true) });

export type ClaimResult =
  | { kind: 'claimed' }
  /** `outcome` as completeKey stored it. */
  | { kind: 'replay'; outcome: unknown; requestHash: string }
  | { kind: 'in_progress'; requestHash: string };

/**
 * Claims (customer, key) for one request. An IN_PROGRESS claim whose lease ran out (its process died
 * before finishing) can be taken over: the use case commits its result together with the claim's
 * completion, so a stale claim never hides a committed booking.
 */
export async function claimKey(
  db: CommonQueryMethods,
  customerId: number,
  key: string,
  requestHash: string,
  leaseSeconds: number,
): Promise<ClaimResult> {
  const inserted = await db.maybeOne(sql.type(returned)`
    INSERT INTO idempotency_key (customer_id, key, request_hash, state, locked_until)
    VALUES (${customerId}, ${key}, ${requestHash}, 'IN_PROGRESS', now() + make_interval(secs => ${leaseSeconds}))
    ON CONFLICT DO NOTHING RETURNING true AS done`);
  if (inserted) return { kind: 'claimed' };
  const existing = await db.maybeOne(sql.type(row)`
    SELECT request_hash AS "requestHash", state, response_body AS "responseBody",
           (state = 'IN_PROGRESS' AND locked_until < now()) AS stale
    FROM idempotency_key WHERE customer_id = ${customerId} AND key = ${key}`);
  if (!existing) return claimKey(db, customerId, key, requestHash, leaseSeconds);
  if (existing.state === 'DONE') {
    return { kind: 'replay', outcome: existing.responseBody, requestHash: existing.requestHash };
  }
  if (existing.stale && existing.requestHash === requestHash) {
    const taken = await db.maybeOne(sql.type(returned)`
      UPDATE idempotency_key SET locked_until = now() + make_interval(secs => ${leaseSeconds})
      WHERE customer_id = ${customerId} AND key = ${key} AND state = 'IN_PROGRESS' AND locked_until < now()
      RETURNING true AS done`);
    if (taken) return { kind: 'claimed' };
  }
  return { kind: 'in_progress', requestHash: existing.requestHash };
}

/** Records the request's outcome; false when another request already completed the key (a lease taken over). */
export async function completeKey(db: CommonQueryMethods, customerId: number, key: string, outcome: unknown): Promise<boolean> {
  const r = await db.query(sql.typeAlias('void')`
    UPDATE idempotency_key SET state = 'DONE', response_status = NULL, response_body = ${sql.jsonb(outcome as never)},
      locked_until = NULL
    WHERE customer_id = ${customerId} AND key = ${key} AND state = 'IN_PROGRESS'`);
  return r.rowCount === 1;
}

export async function releaseKey(db: CommonQueryMethods, customerId: number, key: string): Promise<void> {
  await db.query(sql.typeAlias('void')`
    DELETE FROM idempotency_key WHERE customer_id = ${customerId} AND key = ${key} AND state = 'IN_PROGRESS'`);
}

export async function purgeKeys(db: CommonQueryMethods, olderThanHours: number): Promise<number> {
  const r = await db.query(sql.typeAlias('void')`
    DELETE FROM idempotency_key WHERE created_at < now() - make_interval(hours => ${olderThanHours})`);
  return r.rowCount;
}
