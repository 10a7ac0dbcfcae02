import { createHash } from 'node:crypto';
import type { DatabasePool } from '../../shared/db/pool.js';
import { claimKey, completeKey, releaseKey } from '../../shared/db/idempotency.js';
import { DomainError } from '../../shared/domain/errors.js';
import { errorBody, httpStatusOf } from './errors.js';

export interface Answer {
  status: number;
  body: unknown;
  replayed?: boolean;
}

// A claim older than this is presumed abandoned by a crashed process and may be taken over.
const LEASE_SECONDS = 120;
// Answers that say "try again later" are not remembered: the key stays usable.
const TRANSIENT = new Set(['RATE_LIMITED', 'UNAVAILABLE', 'INTERNAL', 'IDEMPOTENCY_IN_PROGRESS']);

const canonical = (v: unknown): unknown =>
  Array.isArray(v) ? v.map(canonical)
  : v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b)).map(([k, x]) => [k, canonical(x)]))
  : v;

export const requestHash = (body: unknown) => createHash('sha256').update(JSON.stringify(canonical(body ?? null))).digest('hex');

/**
 * Runs `run` at most once per (customer, Idempotency-Key). `run` must complete the key itself in the
 * transaction that creates its effect, so "effect committed" and "answer remembered" are one fact.
 * Refusals (4xx) are remembered here after the fact; transient failures release the key.
 */
export async function idempotent(
  db: DatabasePool,
  customerId: number,
  key: string | undefined,
  body: unknown,
  run: () => Promise<Answer>,
): Promise<Answer> {
  if (key === undefined) return run();
  const hash = requestHash(body);
  const claim = await claimKey(db, customerId, key, hash, LEASE_SECONDS);
  if (claim.kind !== 'claimed' && claim.requestHash !== hash) {
    throw new DomainError('IDEMPOTENCY_KEY_REUSED', 'this Idempotency-Key was used with a different request body');
  }
  if (claim.kind === 'replay') return { status: claim.status, body: claim.body, replayed: true };
  if (claim.kind === 'in_progress') {
    throw new DomainError('IDEMPOTENCY_IN_PROGRESS', 'a request with this Idempotency-Key is being processed');
  }
  try {
    return await run();
  } catch (e) {
    if (e instanceof DomainError && !TRANSIENT.has(e.code)) {
      await completeKey(db, customerId, key, httpStatusOf(e), errorBody(e));
    } else {
      await releaseKey(db, customerId, key).catch(() => {});
    }
    throw e;
  }
}
