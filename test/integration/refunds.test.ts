import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { sleep, waitFor } from '../helpers/http.js';
import { count, drained, getBooking, notificationsOf, outboxOf, settledRefunds, statusOf, topicsOf } from '../helpers/bookings.js';
import { holdCar } from '../helpers/cars.js';
import { sandbox } from '../helpers/sandbox.js';
import { paymentSucceeded, signedWebhook } from '../helpers/webhooks.js';
import { startJobWorker } from '../../workers/lib/job-worker.js';

// Refunds are paid asynchronously, once, whatever the provider answers; FAILED only when it says so.
let h: Harness;
beforeAll(async () => {
  // LEASE_S 5: a refund POST left unanswered (the provider gone mid-request) holds its refund until the lease it was
  // sent under ends, in case the provider still carries it out (shared/usecases/refunds.ts); 30 s by default.
  h = await startHarness({ workers: true, env: { HOLD_RATE_LIMIT: '1000', LEASE_S: '5' } });
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
    // The worker's pass saw `pending` (and kept the provider's refund id); the webhook settled it; a later pass
    // finds it settled and does nothing.
    expect((await h.sql(`SELECT provider_refund_id FROM refund WHERE id = $1`, [refund!.id])).rows[0].provider_refund_id).toMatch(/^re_/);
    await sleep(1_200);
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

  it('a PENDING refund that exists only in the database (no job) is paid: the reconciler arms its job from the row', async () => {
    const b = await holdCar(h, { fromHours: 550 });
    await h.req('POST', `/bookings/${b.id}/cancel`, { token: b.token });
    await h.sql(`INSERT INTO refund (booking_id, payment_intent_id, amount, currency, reason, updated_at)
                 VALUES ($1, 'pi_lost', 1234, 'VND', 'test', now() - interval '1 hour')`, [b.id]);
    await waitFor(async () => (await h.sql(`SELECT status FROM refund WHERE booking_id = $1`, [b.id])).rows[0].status === 'SUCCEEDED', 15_000);
    // Its job carries the refund's id and the generation the reconciler moved it to.
    const { rows } = await h.sql(`SELECT id::int, job_gen FROM refund WHERE booking_id = $1`, [b.id]);
    expect(rows[0].job_gen).toBe(1);
    expect(await h.queues.refunds.getJob(`refund-${rows[0].id}-g1`)).toBeTruthy();
    expect(await sandbox(h).refundsFor(b.id)).toHaveLength(1);
  });

  it('a claim never released (its process killed mid-call) comes due again when its lease runs out, and pays once', async () => {
    const b = await holdCar(h, { fromHours: 560 });
    await h.req('POST', `/bookings/${b.id}/cancel`, { token: b.token });
    // As a dead worker leaves it: claimed (attempt counted, lease taken) and never released; the lease ends in 2 s.
    await h.sql(`INSERT INTO refund (booking_id, payment_intent_id, amount, currency, reason, attempts, lease_token, lease_until, next_attempt_at)
                 VALUES ($1, 'pi_leased', 777, 'VND', 'test', 1, gen_random_uuid(), now() + interval '2 seconds', now() + interval '2 seconds')`, [b.id]);
    await sleep(1_000);
    expect((await h.sql(`SELECT status FROM refund WHERE booking_id = $1`, [b.id])).rows[0].status).toBe('PENDING');
    await waitFor(async () => (await h.sql(`SELECT status FROM refund WHERE booking_id = $1`, [b.id])).rows[0].status === 'SUCCEEDED', 15_000);
    expect(await sandbox(h).refundsFor(b.id)).toHaveLength(1);
  });

  it('two refund loops (in one process, racing on the database) never work the same refund: each of 30 is paid once, with keys forgotten', async () => {
    await sandbox(h).setFaults({ apiDelayMs: 200 });
    await sandbox(h).setRefundFaults({ forgetKeys: true });
    const second = startJobWorker('refunds', h.deps);
    try {
      const b = await holdCar(h, { fromHours: 570 });
      await h.req('POST', `/bookings/${b.id}/cancel`, { token: b.token });
      await h.sql(`INSERT INTO refund (booking_id, payment_intent_id, amount, currency, reason)
                   SELECT $1, 'pi_many_' || i, 100 + i, 'VND', 'test' FROM generate_series(1, 30) i`, [b.id]);
      await waitFor(async () => (await count(h, `SELECT 1 FROM refund WHERE booking_id = $1 AND status = 'PENDING'`, [b.id])) === 0, 30_000);
      const atProvider = await sandbox(h).refundsFor(b.id);
      expect(atProvider).toHaveLength(30);
      expect(new Set(atProvider.map((r) => r.paymentIntentId)).size).toBe(30);
    } finally {
      await second.close();
      await sandbox(h).resetRefundFaults();
    }
  });
});
