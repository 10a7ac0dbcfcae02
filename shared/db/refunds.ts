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

export async function noteRefundAttempt(
  db: CommonQueryMethods,
  id: number,
  a: { providerRefundId?: string | null; error?: string | null },
): Promise<void> {
  await db.query(sql.typeAlias('void')`
    UPDATE refund SET attempts = attempts + 1, updated_at = now(),
      provider_refund_id = coalesce(provider_refund_id, ${a.providerRefundId ?? null}),
      last_error = ${a.error ?? null}
    WHERE id = ${id}`);
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

/** PENDING refunds nobody has tried for `idleSeconds` (their job was lost, or gave up). */
export async function stalePendingRefunds(db: CommonQueryMethods, idleSeconds: number, limit: number) {
  return db.any(sql.type(z.object({ id: z.number(), attempts: z.number() }))`
    SELECT id, attempts FROM refund
    WHERE status = 'PENDING' AND updated_at < now() - make_interval(secs => ${idleSeconds})
    ORDER BY id LIMIT ${limit}`);
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
