import { z } from 'zod';
import { sql, type CommonQueryMethods } from './pool.js';
import { claimLease, leaseState, LEASED, releaseLease, renewLease } from './leases.js';

export const refundRow = z.object({
  id: z.number(),
  bookingId: z.number(),
  paymentIntentId: z.string(),
  amount: z.number(),
  currency: z.string(),
  status: z.enum(['PENDING', 'SUCCEEDED', 'FAILED']),
  providerRefundId: z.string().nullable(),
  gen: z.number(),
  /** When an attempt last sent POST /v1/refunds for it (recorded before sending; null: never POSTed). */
  postedAt: z.string().nullable().transform((s) => (s === null ? null : new Date(s))),
});
export type RefundRow = z.infer<typeof refundRow>;

const columns = sql.fragment`id, booking_id AS "bookingId", payment_intent_id AS "paymentIntentId", amount, currency, status,
  provider_refund_id AS "providerRefundId", job_gen AS gen, posted_at AS "postedAt"`;

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

/** A refund claimed by its job: the row, the attempts so far (this one included) and the claim's lease token. */
export type ClaimedRefund = RefundRow & { attempts: number; leaseToken: string };

/** Claims the refund for its job (shared/db/leases.ts): null when not claimable now (see refundLeaseState). */
export async function claimRefund(db: CommonQueryMethods, id: number, gen: number, leaseMs: number): Promise<ClaimedRefund | null> {
  const lease = await claimLease(db, LEASED.refund, [id], gen, leaseMs);
  if (!lease) return null;
  const row = await findRefund(db, id);
  return row && { ...row, attempts: lease.attempts, leaseToken: lease.token };
}

export const refundLeaseState = (db: CommonQueryMethods, id: number) => leaseState(db, LEASED.refund, [id]);

/**
 * The claim's holder is about to send POST /v1/refunds: only while its claim still holds the row (same token, lease
 * not run out, PENDING) does it record posted_at and renew the lease to a full `leaseMs`, in one statement committed
 * before the request leaves; null otherwise, and then it must not POST (another attempt may hold the row and POST).
 * The renewed lease covers the POST: no other attempt claims the row until it ends (see releaseRefund's keepLease).
 */
export async function fenceRefundPost(db: CommonQueryMethods, claim: { id: number; leaseToken: string }, leaseMs: number) {
  return renewLease(db, LEASED.refund, [claim.id], claim.leaseToken, leaseMs, sql.fragment`posted_at = now(), updated_at = now()`);
}

/**
 * Ends a claim without settling: the provider refund id when an answer gave one (kept once known), the attempt's
 * error, the next try `retryInMs` from now. Only the claim's holder writes (its token). `keepLease`: a POST whose
 * outcome is unknown was sent under this claim; the row stays unclaimable until the lease fenceRefundPost renewed
 * runs out, so no attempt looks for that POST's refund while the provider may still be carrying it out.
 */
export async function releaseRefund(
  db: CommonQueryMethods,
  claim: { id: number; leaseToken: string },
  a: { providerRefundId?: string | null; error?: string | null; retryInMs: number; uncount?: boolean; keepLease?: boolean },
): Promise<boolean> {
  return releaseLease(db, LEASED.refund, [claim.id], claim.leaseToken, {
    retryInMs: a.retryInMs, error: a.error ?? null, uncount: a.uncount, keepLease: a.keepLease,
    set: sql.fragment`updated_at = now(), provider_refund_id = coalesce(provider_refund_id, ${a.providerRefundId ?? null})`,
  });
}

/**
 * Provider refund ids some refund row other than `refundId` already owns (a listed refund another row adopted is not
 * ours; one this row already owns is, e.g. recorded by an attempt that overlapped this one).
 */
export async function ownedProviderRefundIds(db: CommonQueryMethods, ids: readonly string[], refundId: number): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await db.any(sql.type(z.object({ id: z.string() }))`
    SELECT provider_refund_id AS id FROM refund WHERE provider_refund_id = ANY(${sql.array(ids, 'text')}) AND id <> ${refundId}`);
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
    UPDATE refund SET status = ${status}, updated_at = now(), lease_until = NULL, lease_token = NULL,
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
