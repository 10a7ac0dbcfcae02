import { z } from 'zod';
import { sql, type CommonQueryMethods } from './pool.js';

export const refundRow = z.object({
  id: z.number(),
  bookingId: z.number(),
  paymentIntentId: z.string(),
  amount: z.number(),
  currency: z.string(),
  status: z.enum(['PENDING', 'SUCCEEDED', 'FAILED']),
  providerRefundId: z.string().nullable(),
});
export type RefundRow = z.infer<typeof refundRow>;

const columns = sql.fragment`id, booking_id AS "bookingId", payment_intent_id AS "paymentIntentId", amount, currency, status,
  provider_refund_id AS "providerRefundId"`;

export interface NewRefund {
  bookingId: number;
  paymentId: number | null;
  paymentIntentId: string;
  amount: number;
  currency: string;
  reason: string;
}

export async function insertRefund(db: CommonQueryMethods, r: NewRefund): Promise<RefundRow> {
  return db.one(sql.type(refundRow)`
    INSERT INTO refund (booking_id, payment_id, payment_intent_id, amount, currency, reason)
    VALUES (${r.bookingId}, ${r.paymentId}, ${r.paymentIntentId}, ${r.amount}, ${r.currency}, ${r.reason})
    RETURNING ${columns}`);
}

export async function findRefund(db: CommonQueryMethods, id: number): Promise<RefundRow | null> {
  return db.maybeOne(sql.type(refundRow)`SELECT ${columns} FROM refund WHERE id = ${id}`);
}

/** The refund a provider refund webhook is about: by the provider's id, else the booking's pending one. */
export async function findRefundForWebhook(
  db: CommonQueryMethods,
  q: { providerRefundId: string | null; bookingId: number | null; paymentIntentId: string; amount: number },
): Promise<RefundRow | null> {
  if (q.providerRefundId) {
    const byId = await db.maybeOne(sql.type(refundRow)`
      SELECT ${columns} FROM refund WHERE provider_refund_id = ${q.providerRefundId}`);
    if (byId) return byId;
  }
  if (q.bookingId === null) return null;
  return db.maybeOne(sql.type(refundRow)`
    SELECT ${columns} FROM refund
    WHERE booking_id = ${q.bookingId} AND status = 'PENDING' AND payment_intent_id = ${q.paymentIntentId}
      AND amount = ${q.amount}
    ORDER BY id LIMIT 1`);
}

/** A refund claimed by a due loop: the row, how many passes claimed it (this one included), and the claim's token. */
export const claimedRefund = refundRow.extend({ attempts: z.number(), leaseToken: z.string() });
export type ClaimedRefund = z.infer<typeof claimedRefund>;

/**
 * Claims up to `limit` due PENDING refunds for `leaseSeconds`: SKIP LOCKED, so two worker processes never claim the
 * same row, and the lease (lease_until) makes a row another process claimed and never released (killed mid-call)
 * due again once it runs out. Counts the attempt at the claim: a pass that dies mid-call still counts.
 */
export async function claimDueRefunds(db: CommonQueryMethods, limit: number, leaseSeconds: number): Promise<readonly ClaimedRefund[]> {
  return db.any(sql.type(claimedRefund)`
    UPDATE refund r SET attempts = r.attempts + 1, lease_token = gen_random_uuid(), updated_at = now(),
      lease_until = now() + make_interval(secs => ${leaseSeconds}),
      next_attempt_at = now() + make_interval(secs => ${leaseSeconds})
    FROM (SELECT id FROM refund
          WHERE status = 'PENDING' AND next_attempt_at <= now()
          ORDER BY next_attempt_at LIMIT ${limit}
          FOR UPDATE SKIP LOCKED) due
    WHERE r.id = due.id
    RETURNING r.id, r.booking_id AS "bookingId", r.payment_intent_id AS "paymentIntentId", r.amount, r.currency, r.status,
      r.provider_refund_id AS "providerRefundId", r.attempts, r.lease_token::text AS "leaseToken"`);
}

/**
 * Ends a claim: the provider refund id when an answer gave one (kept once known), the error of the pass (null
 * when none), and the next try `retryInSeconds` from now. Only the claim's owner writes (its token).
 */
export async function releaseRefund(
  db: CommonQueryMethods,
  claim: { id: number; leaseToken: string },
  a: { providerRefundId?: string | null; error?: string | null; retryInSeconds: number },
): Promise<void> {
  await db.query(sql.typeAlias('void')`
    UPDATE refund SET updated_at = now(), lease_until = NULL, lease_token = NULL,
      provider_refund_id = coalesce(provider_refund_id, ${a.providerRefundId ?? null}),
      last_error = ${a.error ?? null},
      next_attempt_at = now() + make_interval(secs => ${a.retryInSeconds})
    WHERE id = ${claim.id} AND lease_token = ${claim.leaseToken}::uuid`);
}

/** Provider refund ids some refund row already owns (a listed refund adopted by another row is not ours). */
export async function ownedProviderRefundIds(db: CommonQueryMethods, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await db.any(sql.type(z.object({ id: z.string() }))`
    SELECT provider_refund_id AS id FROM refund WHERE provider_refund_id = ANY(${sql.array(ids, 'text')})`);
  return new Set(rows.map((r) => r.id));
}

/** PENDING → final, once: whichever of the provider's answer or its webhook comes first wins. */
export async function settleRefund(
  db: CommonQueryMethods,
  id: number,
  status: 'SUCCEEDED' | 'FAILED',
  providerRefundId: string | null,
): Promise<boolean> {
  const r = await db.query(sql.typeAlias('void')`
    UPDATE refund SET status = ${status}, updated_at = now(),
      provider_refund_id = coalesce(provider_refund_id, ${providerRefundId})
    WHERE id = ${id} AND status = 'PENDING'`);
  return r.rowCount === 1;
}

const pendingRow = z.object({ pending: z.number(), oldestAgeSeconds: z.number(), overOneHour: z.number() });

/** PENDING refunds: how many, the oldest one's age (0 when none), and how many are over an hour old (partial index). */
export async function pendingRefundStats(db: CommonQueryMethods) {
  return db.one(sql.type(pendingRow)`
    SELECT count(*)::int AS pending,
           coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8 AS "oldestAgeSeconds",
           count(*) FILTER (WHERE created_at < now() - interval '1 hour')::int AS "overOneHour"
    FROM refund WHERE status = 'PENDING'`);
}
