import { z } from 'zod';
import { sql, type CommonQueryMethods } from './pool.js';

// The one lease design (every job's claim on its row). A job that must call out (the provider, the notification
// gateway) claims its row first: a fresh lease_token and lease_until = now() + LEASE_S, on the database's clock.
// Only the token's holder records the outcome; a claim whose process died is free again once lease_until has
// passed; the row's due column is pushed to lease_until meanwhile, so the reconciler reads "overdue" as "its job is
// late or lost", never "its job is working on it". Attempts are counted at the claim (a pass that dies mid-call
// still counts). The claim also refuses a job of an older generation than the row's (a stale duplicate).
// A lease is time, not a lock: its holder can outlive it (a slow call, a stalled process) while another claims the
// row. A holder about to do what must happen once (a refund's POST) renews first (renewLease), and does nothing when
// the renewal finds the lease no longer its own.

export interface LeasedTable {
  table: 'refund' | 'notification' | 'intent_cancellation' | 'booking';
  /** The row's key columns. */
  key: readonly string[];
  /** The row is still owed. */
  open: ReturnType<typeof sql.fragment>;
  /** Its due column: when its job should next run. */
  due: 'next_attempt_at' | 'next_expiry_check_at';
  /** It counts attempts and keeps the last error (bookings do neither). */
  attempts: boolean;
}

export const LEASED = {
  refund: { table: 'refund', key: ['id'], open: sql.fragment`status = 'PENDING'`, due: 'next_attempt_at', attempts: true },
  notification: { table: 'notification', key: ['event_id', 'channel'], open: sql.fragment`sent_at IS NULL`, due: 'next_attempt_at', attempts: true },
  intentCancellation: {
    table: 'intent_cancellation', key: ['booking_id'], open: sql.fragment`done_at IS NULL`, due: 'next_attempt_at', attempts: true,
  },
  /** A HOLD's payment check (asking the provider happens outside any row lock). */
  booking: { table: 'booking', key: ['id'], open: sql.fragment`status = 'HOLD'`, due: 'next_expiry_check_at', attempts: false },
} as const satisfies Record<string, LeasedTable>;

/** The key's values, in the order of `LeasedTable.key`. */
export type KeyValues = readonly (string | number)[];

function whereKey(t: LeasedTable, key: KeyValues) {
  return sql.join(t.key.map((c, i) => sql.fragment`${sql.identifier([c])} = ${key[i]!}`), sql.fragment` AND `);
}
const secs = (ms: number) => sql.fragment`make_interval(secs => ${Math.max(0, ms) / 1000})`;

const claimRow = z.object({ token: z.string(), attempts: z.number(), leaseUntil: z.string().transform((s) => new Date(s)) });
export type Lease = z.infer<typeof claimRow>;

/**
 * Claims the row for `leaseMs` if it is still owed, not leased by a live claim, and not of a newer generation than
 * `gen`; null otherwise (see leaseState for why). Counts an attempt where the table counts them.
 */
export async function claimLease(db: CommonQueryMethods, t: LeasedTable, key: KeyValues, gen: number, leaseMs: number): Promise<Lease | null> {
  const due = sql.identifier([t.due]);
  return db.maybeOne(sql.type(claimRow)`
    UPDATE ${sql.identifier([t.table])}
    SET lease_token = gen_random_uuid(), lease_until = now() + ${secs(leaseMs)}, ${due} = now() + ${secs(leaseMs)}
        ${t.attempts ? sql.fragment`, attempts = attempts + 1` : sql.fragment``}
    WHERE ${whereKey(t, key)} AND ${t.open} AND job_gen <= ${gen} AND (lease_until IS NULL OR lease_until <= now())
    RETURNING lease_token::text AS token, ${t.attempts ? sql.fragment`attempts` : sql.fragment`0`} AS attempts, lease_until AS "leaseUntil"`);
}

const stateRow = z.object({
  open: z.boolean(), gen: z.number(), leaseUntil: z.string().nullable().transform((s) => (s === null ? null : new Date(s))), leased: z.boolean(),
});
export type LeaseState = z.infer<typeof stateRow>;

/** Why a claim failed: the row is gone (null), settled (`open` false), of a newer gen, or leased until `leaseUntil`. */
export async function leaseState(db: CommonQueryMethods, t: LeasedTable, key: KeyValues): Promise<LeaseState | null> {
  return db.maybeOne(sql.type(stateRow)`
    SELECT (${t.open}) AS open, job_gen AS gen, lease_until AS "leaseUntil", coalesce(lease_until > now(), false) AS leased
    FROM ${sql.identifier([t.table])} WHERE ${whereKey(t, key)}`);
}

export interface Release {
  /** The row's next attempt, from now (the same delay its job is given). */
  retryInMs: number;
  /** The attempt's error (tables that keep one); null clears it. */
  error?: string | null;
  /** The attempt does not count (a provider 429 with Retry-After pauses the queue without counting). */
  uncount?: boolean;
  /** More columns to set, e.g. the provider's refund id once an answer gave it. */
  set?: ReturnType<typeof sql.fragment>;
  /**
   * The row stays unclaimable until its lease_until (and due no earlier): only the token is dropped. For a call whose
   * outcome is unknown (a timeout) that the other side may still carry out until then.
   */
  keepLease?: boolean;
}

/** Ends a claim without settling the row: due again after `retryInMs`. False when the token no longer holds it. */
export async function releaseLease(db: CommonQueryMethods, t: LeasedTable, key: KeyValues, token: string, r: Release): Promise<boolean> {
  const due = sql.identifier([t.due]);
  const sets = [
    sql.fragment`lease_token = NULL`,
    ...(r.keepLease
      ? [sql.fragment`${due} = greatest(lease_until, now() + ${secs(r.retryInMs)})`]
      : [sql.fragment`lease_until = NULL`, sql.fragment`${due} = now() + ${secs(r.retryInMs)}`]),
    ...(t.attempts && r.error !== undefined ? [sql.fragment`last_error = ${r.error === null ? null : r.error.slice(0, 1000)}`] : []),
    ...(t.attempts && r.uncount ? [sql.fragment`attempts = greatest(0, attempts - 1)`] : []),
    ...(r.set ? [r.set] : []),
  ];
  const res = await db.query(sql.typeAlias('void')`
    UPDATE ${sql.identifier([t.table])} SET ${sql.join(sets, sql.fragment`, `)}
    WHERE ${whereKey(t, key)} AND lease_token = ${token}::uuid`);
  return res.rowCount === 1;
}

/**
 * The token's holder renews its claim to `leaseMs` from now, if it still holds it: same token, lease not yet run out,
 * row still owed. False otherwise: another claim may hold the row now (or it is settled), so the holder must not
 * act on it. `set`: more columns written in the same statement. The due column follows the lease, as at the claim.
 */
export async function renewLease(
  db: CommonQueryMethods, t: LeasedTable, key: KeyValues, token: string, leaseMs: number, set?: ReturnType<typeof sql.fragment>,
): Promise<Lease | null> {
  const due = sql.identifier([t.due]);
  return db.maybeOne(sql.type(claimRow)`
    UPDATE ${sql.identifier([t.table])}
    SET lease_until = now() + ${secs(leaseMs)}, ${due} = now() + ${secs(leaseMs)}${set ? sql.fragment`, ${set}` : sql.fragment``}
    WHERE ${whereKey(t, key)} AND ${t.open} AND lease_token = ${token}::uuid AND lease_until > now()
    RETURNING lease_token::text AS token, ${t.attempts ? sql.fragment`attempts` : sql.fragment`0`} AS attempts, lease_until AS "leaseUntil"`);
}
