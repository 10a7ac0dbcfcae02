import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { waitFor } from '../helpers/http.js';
import { count, drained, getBooking, notificationsOf, outboxOf, settledRefunds, statusOf, topicsOf } from '../helpers/bookings.js';
import { holdCar } from '../helpers/cars.js';
import { sandbox } from '../helpers/sandbox.js';
import { paymentSucceeded, signedWebhook } from '../helpers/webhooks.js';
import { REFUNDS_QUEUE, refundJobId } from '../../shared/queues/registry.js';
import { sweepStaleRefunds } from '../../workers/refunds.js';

// Refunds are paid asynchronously, once, whatever the provider answers; FAILED only when it says so.
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ workers: true, env: { HOLD_RATE_LIMIT: '1000' } });
});
afterEach(async () => {
  await sandbox(h).resetFaults();
  await sandbox(h).idle();
});
afterAll(async () => h?.close());

describe('refunds', () => {
  it('cancelling a HOLD refunds nothing; a payment arriving afterwards is refunded in full', async () => {
    const b = await holdCar(h);
    const c = await h.req('POST', `/bookings/${b.id}/cancel`, { token: b.token, body: {} });
    expect(c.status, c.text).toBe(200);
    expect(c.json).toEqual({ bookingId: b.id, status: 'CANCELLED', refundAmount: 0, currency: 'VND' });
    expect(await count(h, `SELECT 1 FROM refund WHERE booking_id = $1`, [b.id])).toBe(0);

    const late = paymentSucceeded(b.id, b.deposit);
    expect((await signedWebhook(h, late)).status).toBe(200);
    expect(await statusOf(h, b.id)).toBe('CANCELLED');
    const refunds = await settledRefunds(h, b.id);
    expect(refunds).toEqual([expect.objectContaining({ amount: b.deposit, status: 'SUCCEEDED', paymentIntentId: late.data.paymentIntentId })]);
    expect(await getBooking(h, b.id)).toMatchObject({
      status: 'CANCELLED', payment: { status: 'SUCCEEDED', amount: b.deposit }, refund: { amount: b.deposit, status: 'SUCCEEDED' },
    });
    expect(topicsOf(await outboxOf(h, b.id))).toEqual(['booking.held', 'booking.cancelled', 'refund.requested', 'refund.succeeded']);
    // The same late payment redelivered is not refunded twice.
    expect((await signedWebhook(h, late)).status).toBe(200);
    expect((await signedWebhook(h, paymentSucceeded(b.id, b.deposit, { txn: late.data.providerTxnId, intent: late.data.paymentIntentId }))).status).toBe(200);
    await drained(h);
    expect(await count(h, `SELECT 1 FROM refund WHERE booking_id = $1`, [b.id])).toBe(1);
    expect(await sandbox(h).refundsFor(b.id)).toHaveLength(1);
    expect(await notificationsOf(h, b.id)).toEqual(['booking.cancelled/push', 'booking.cancelled/sms', 'refund.succeeded/push', 'refund.succeeded/sms']);
  });

  it('provider answers pending, then settles (webhook and retry both report it): SUCCEEDED exactly once', async () => {
    await sandbox(h).setFaults({ refundOutcome: 'pending', refundSettleMs: 300 });
    const b = await holdCar(h);
    await h.req('POST', `/bookings/${b.id}/cancel`, { token: b.token });
    expect((await signedWebhook(h, paymentSucceeded(b.id, b.deposit))).status).toBe(200);
    const [refund] = await settledRefunds(h, b.id);
    expect(refund!.status).toBe('SUCCEEDED');
    // The worker's job saw `pending` first and retried; let the retry finish before counting.
    const { rows: [requested] } = await h.sql(`SELECT event_id::text AS id FROM outbox WHERE topic = 'refund.requested' AND (payload->>'refundId')::int = $1`, [refund!.id]);
    const job = await waitFor(async () => {
      const j = await h.queues[REFUNDS_QUEUE]!.getJob(refundJobId(refund!.id, requested.id));
      return j?.finishedOn ? j : null;
    }, 10_000);
    expect(job.attemptsMade).toBeGreaterThanOrEqual(2);
    expect(['SUCCEEDED', 'already_settled']).toContain(job.returnvalue);
    await drained(h);
    expect(topicsOf(await outboxOf(h, b.id)).filter((t) => t.startsWith('refund.'))).toEqual(['refund.requested', 'refund.succeeded']);
    expect(await sandbox(h).refundsFor(b.id)).toHaveLength(1);
    expect(await notificationsOf(h, b.id)).toEqual(['booking.cancelled/push', 'booking.cancelled/sms', 'refund.succeeded/push', 'refund.succeeded/sms']);
  });

  it('provider refuses the refund: FAILED, refund.failed, nobody notified of it', async () => {
    await sandbox(h).setFaults({ refundOutcome: 'failed' });
    const b = await holdCar(h);
    await h.req('POST', `/bookings/${b.id}/cancel`, { token: b.token });
    expect((await signedWebhook(h, paymentSucceeded(b.id, b.deposit))).status).toBe(200);
    const [refund] = await settledRefunds(h, b.id);
    expect(refund!.status).toBe('FAILED');
    expect((await getBooking(h, b.id)).refund).toEqual({ amount: b.deposit, status: 'FAILED' });
    await drained(h);
    expect(topicsOf(await outboxOf(h, b.id)).filter((t) => t.startsWith('refund.'))).toEqual(['refund.requested', 'refund.failed']);
    expect(await notificationsOf(h, b.id)).toEqual(['booking.cancelled/push', 'booking.cancelled/sms']);
  });

  it('provider down while refunding: retried until it answers, one refund at the provider', async () => {
    await sandbox(h).setFaults({ apiDown: true });
    const b = await holdCar(h);
    await h.req('POST', `/bookings/${b.id}/cancel`, { token: b.token });
    expect((await signedWebhook(h, paymentSucceeded(b.id, b.deposit))).status).toBe(200);
    await waitFor(async () => (await count(h, `SELECT 1 FROM refund WHERE booking_id = $1 AND attempts >= 1 AND last_error IS NOT NULL`, [b.id])) > 0);
    expect((await getBooking(h, b.id)).refund).toEqual({ amount: b.deposit, status: 'PENDING' });
    await sandbox(h).setFaults({ apiDown: false });
    const [refund] = await settledRefunds(h, b.id);
    expect(refund!.status).toBe('SUCCEEDED');
    await drained(h);
    expect(await sandbox(h).refundsFor(b.id)).toHaveLength(1);
    expect(topicsOf(await outboxOf(h, b.id)).filter((t) => t === 'refund.succeeded')).toHaveLength(1);
  });

  it('a PENDING refund whose job was lost is re-queued by the sweep and paid', async () => {
    const b = await holdCar(h, { fromHours: 550 });
    await h.req('POST', `/bookings/${b.id}/cancel`, { token: b.token });
    // A refund that exists only in the database: its event was "dispatched" but the job never reached Redis.
    await h.sql(`INSERT INTO refund (booking_id, payment_intent_id, amount, currency, reason, updated_at)
                 VALUES ($1, 'pi_lost', 1234, 'VND', 'test', now() - interval '1 hour')`, [b.id]);
    expect(await sweepStaleRefunds(h.deps, 60)).toBeGreaterThanOrEqual(1);
    await waitFor(async () => (await h.sql(`SELECT status FROM refund WHERE booking_id = $1`, [b.id])).rows[0].status === 'SUCCEEDED', 10_000);
  });
});

