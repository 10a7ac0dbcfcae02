import { createHash } from 'node:crypto';
import type { Deps } from './deps.js';
import type { CommonQueryMethods } from '../db/pool.js';
import { claimKey, completeKey, purgeKeys, releaseKey } from '../db/idempotency.js';
import { DomainError, type ErrorCode } from '../domain/errors.js';

// Idempotency-Key (POST /bookings): a request is run at most once per (customer, key); its outcome is
// remembered and answered again to a replay of the same request. Everything about it is here.

/** A refusal as remembered: a DomainError's code, message and details. */
export interface Refusal {
  code: ErrorCode;
  message: string;
  details?: unknown;
}

/** What a request led to. */
export type Outcome<T> = { ok: true; value: T } | { ok: false; error: Refusal };

export interface IdempotencyScope {
  customerId: number;
  key: string;
  /** The request as received; a replay must carry the same (key order and whitespace aside). */
  request: unknown;
}

/**
 * Completes the key with the result inside the transaction that creates the effect, so "effect
 * committed" and "answer remembered" are one fact. Throws IDEMPOTENCY_IN_PROGRESS when another request
 * completed the key first (it took over an expired lease): the effect rolls back with it.
 */
export type Remember<T> = (tx: CommonQueryMethods, value: T) => Promise<void>;

// A claim older than this is presumed abandoned by a crashed process and may be taken over.
const LEASE_SECONDS = 120;
// Refusals that say "try again later" are not remembered: the key stays usable.
const TRANSIENT: ReadonlySet<ErrorCode> = new Set(['RATE_LIMITED', 'UNAVAILABLE', 'INTERNAL', 'IDEMPOTENCY_IN_PROGRESS']);
/** Keys are kept at least 24 h (the contract), and purged by the idempotency-purge schedule once this old. */
export const KEEP_KEYS_HOURS = 48;

const canonical = (v: unknown): unknown =>
  Array.isArray(v) ? v.map(canonical)
  : v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b)).map(([k, x]) => [k, canonical(x)]))
  : v;

/** SHA-256 of the canonical JSON of the request. */
export const requestHash = (request: unknown) => createHash('sha256').update(JSON.stringify(canonical(request ?? null))).digest('hex');

const refusalOf = (e: DomainError): Refusal => ({ code: e.code, message: e.message, ...(e.details === undefined ? {} : { details: e.details }) });

/** A refusal remembered for a key, to throw again: same code, message and details, so the same answer. */
export const refusalError = (r: Refusal) => new DomainError(r.code, r.message, r.details);

/**
 * Runs `run` at most once per scope (always when there is none). `run` gets the `remember` it must call
 * in its transaction. A refusal (DomainError) is remembered after the fact; transient failures release
 * the key so the client can retry. A replay returns the first outcome with `replayed: true`.
 */
export async function idempotent<T>(
  deps: Pick<Deps, 'db'>,
  scope: IdempotencyScope | undefined,
  run: (remember?: Remember<T>) => Promise<T>,
): Promise<{ outcome: Outcome<T>; replayed: boolean }> {
  if (!scope) return { outcome: { ok: true, value: await run() }, replayed: false };
  const { customerId, key } = scope;
  const hash = requestHash(scope.request);
  const claim = await claimKey(deps.db, customerId, key, hash, LEASE_SECONDS);
  if (claim.kind !== 'claimed' && claim.requestHash !== hash) {
    throw new DomainError('IDEMPOTENCY_KEY_REUSED', 'this Idempotency-Key was used with a different request body');
  }
  if (claim.kind === 'replay') return { outcome: claim.outcome as Outcome<T>, replayed: true };
  if (claim.kind === 'in_progress') {
    throw new DomainError('IDEMPOTENCY_IN_PROGRESS', 'a request with this Idempotency-Key is being processed');
  }
  const remember: Remember<T> = async (tx, value) => {
    if (!(await completeKey(tx, customerId, key, { ok: true, value } satisfies Outcome<T>))) {
      throw new DomainError('IDEMPOTENCY_IN_PROGRESS', 'a request with this Idempotency-Key was completed by another request');
    }
  };
  try {
    return { outcome: { ok: true, value: await run(remember) }, replayed: false };
  } catch (e) {
    if (e instanceof DomainError && !TRANSIENT.has(e.code)) {
      await completeKey(deps.db, customerId, key, { ok: false, error: refusalOf(e) } satisfies Outcome<T>);
    } else {
      await releaseKey(deps.db, customerId, key).catch(() => {});
    }
    throw e;
  }
}

/** The idempotency-purge job: deletes keys older than KEEP_KEYS_HOURS. */
export const purgeIdempotencyKeys = (deps: Pick<Deps, 'db'>): Promise<number> => purgeKeys(deps.db, KEEP_KEYS_HOURS);
