import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { sleep, waitFor } from '../helpers/http.js';
import { count, drained, getBooking, notificationsOf, outboxOf, settledRefunds, statusOf, topicsOf } from '../helpers/bookings.js';
import { holdCar, requestPay } from '../helpers/cars.js';
import { sandbox } from '../helpers/sandbox.js';
import { paymentSucceeded, signedWebhook } from '../helpers/webhooks.js';
import { PspClient } from '../../shared/psp/client.js';
import { startJobWorker } from '../../workers/lib/job-worker.js';
import { expireNow, makeDue } from '../helpers/expiry.js';

// A HOLD past holdExpiresAt becomes EXPIRED within 1 s, unless a payment may be in flight (provider asked).
const HOLD_TTL_S = 2;
const PAYMENT_GRACE_S = 3;

let h: Harness;
beforeAll(async () => {
  h = await startHarness({
    workers: true,
    env: { HOLD_TTL_S: String(HOLD_TTL_S), PAYMENT_GRACE_S: String(PAYMENT_GRACE_S), HOLD_RATE_LIMIT: '100000' },
  });
});
afterEach(async () => {
  await sandbox(h).resetFaults();
  await sandbox(h).idle();
});
afterAll(async () => h?.close());

const sleepUntil = (t: number) => sleep(Math.max(0, t - Date.now()));
/** The instant (server clock) the booking's event of `type` was written. */
const occurredAt = async (bookingId: number, type: string) => {
  const e = (await outboxOf(h, bookingId)).find((r) => r.topic === type);
  return e ? new Date(e.payload.occurredAt).getTime() : null;
};
const waitStatus = (bookingId: number, status: string, timeoutMs = 10_000) =>
  waitFor(async () => (await statusOf(h, bookingId)) === status, timeoutMs, 25);

describe('expiry', () => {
  it('a plain unpaid hold expires within 1 s of holdExpiresAt and frees the car', async () => {
    const b = await holdCar(h);
    expect(b.holdExpiresAt.getTime() - Date.now()).toBeGreaterThan(1000);
    // Still held a little before the deadline.
    await sleepUntil(b.holdExpiresAt.getTime() - 300);
    expect(await statusOf(h, b.id)).toBe('HOLD');

    await waitStatus(b.id, 'EXPIRED');
    const seenAt = Date.now();
    const at = (await occurredAt(b.id, 'booking.expired'))!;
    expect(at).toBeGreaterThanOrEqual(b.holdExpiresAt.getTime());
    expect(at - b.holdExpiresAt.getTime()).toBeLessThan(1000);
    expect(seenAt - b.holdExpiresAt.getTime()).toBeLessThan(1500);

    const view = await getBooking(h, b.id);
    expect(view).toMatchObject({ status: 'EXPIRED', holdExpiresAt: null, payment: null, refund: null });
    expect(topicsOf(await outboxOf(h, b.id))).toEqual(['booking.held', 'booking.expired']);
    // The period is free again.
    const again = await h.req('POST', '/bookings', {
      token: h.token(b.customerId + 1_000_000, 'customer'),
      body: { carId: b.carId, from: view.from, to: view.to },
    });
    expect(again.status, again.text).toBe(201);
    await waitFor(async () => (await notificationsOf(h, b.id)).length === 2);
    expect(await notificationsOf(h, b.id)).toEqual(['booking.expired/push', 'booking.expired/sms']);
  });

  it('three more payment-check workers, a slow provider: each pay-requested hold is checked once (one job each, and its lease), then expires', async () => {
    await sandbox(h).setFaults({ apiDelayMs: 300 });
    // Every worker's question is counted, the harness's own too (they share h.deps.psp): whichever worker takes a
    // hold's check, none may ask about it twice.
    const asked = new Map<string, number>();
    const psp = h.deps.psp;
    const list = psp.listPaymentIntents;
    psp.listPaymentIntents = async (reference) => {
      // Only expiry's questions: once EXPIRED, the intent-cancellation job lists the intents too (to cancel them).
      const { rows } = await h.sql(`SELECT status FROM booking WHERE id = $1`, [Number(reference)]);
      if (rows[0]?.status === 'HOLD') asked.set(reference, (asked.get(reference) ?? 0) + 1);
      return list.call(psp, reference);
    };
    const more = [1, 2, 3].map(() => startJobWorker('payment-checks', h.deps));
    try {
      const holds = await Promise.all(Array.from({ length: 12 }, () => holdCar(h)));
      await Promise.all(holds.map((b) => requestPay(h, b)));
      // Due now — but a hold already being checked (it came due by itself while the others were being paid:
      // HOLD_TTL_S is 2 s) keeps its lease: moving its check back would invite a second check (a test race).
      const ids = holds.map((b) => b.id);
      const { rows: due } = await h.sql(`UPDATE booking SET hold_expires_at = now() - interval '1 second', next_expiry_check_at = now() - interval '1 second'
                   WHERE id = ANY($1::bigint[]) AND status = 'HOLD' AND next_expiry_check_at <= hold_expires_at RETURNING id::int`, [ids]);
      for (const { id } of due) await makeDue(h, id);
      await waitFor(async () => (await count(h, `SELECT 1 FROM booking WHERE id = ANY($1::bigint[]) AND status = 'EXPIRED'`, [ids])) === ids.length, 15_000);
      for (const b of holds) expect(asked.get(String(b.id)) ?? 0, `hold ${b.id}`).toBe(1);
    } finally {
      await Promise.all(more.map((w) => w.close()));
      psp.listPaymentIntents = list;
    }
  });

  // Review finding (of the earlier loops): with every provider check slot waiting on a hanging provider, a plain
  // hold — which needs no provider — was expired only as checks finished. Payment checks are a queue of their own.
  it('a hanging provider with more pay-requested holds due than check slots: a plain hold still expires within 1 s', async () => {
    await sandbox(h).post('/faults/answers', { endpoint: 'intents.list', answer: 'timeout', rate: 1, hangMs: 8_000 });
    // Each kept well away from its deadline while the 40 are held and paid (HOLD_TTL_S is 2 s), then made due.
    const paying = await Promise.all(Array.from({ length: 40 }, async () => {
      const b = await holdCar(h);
      await h.sql(`UPDATE booking SET hold_expires_at = now() + interval '1 hour', next_expiry_check_at = now() + interval '1 hour' WHERE id = $1`, [b.id]);
      return b;
    }));
    await Promise.all(paying.map((b) => requestPay(h, b)));
    await Promise.all(paying.map((b) => makeDue(h, b.id)));
    await waitFor(async () => (await h.queues['payment-checks'].getActiveCount()) >= 8, 10_000); // every check slot waits on the provider
    const plain = await holdCar(h);
    await makeDue(h, plain.id);
    const dueAt = Date.now();
    await waitStatus(plain.id, 'EXPIRED', 5_000);
    expect(Date.now() - dueAt).toBeLessThan(1_500);
  }, 40_000);

  it('three expiry workers share the due holds: each expires exactly once', async () => {
    // The harness runs one worker (and the reconciler, which may take an overdue hold over); two more here, as if
    // three expiry processes ran.
    const more = [startJobWorker('expiry', h.deps), startJobWorker('expiry', h.deps)];
    try {
      const holds = await Promise.all(Array.from({ length: 40 }, (_, i) => holdCar(h, { fromHours: 300 + i * 3 })));
      await Promise.all(holds.map((b) => makeDue(h, b.id)));
      await waitFor(async () => (await count(h, `SELECT 1 FROM booking WHERE id = ANY($1::bigint[]) AND status = 'EXPIRED'`, [holds.map((b) => b.id)])) === 40, 10_000);
      const ids = holds.map((b) => String(b.id));
      expect(await count(h, `SELECT 1 FROM outbox WHERE topic = 'booking.expired' AND message_key = ANY($1::text[])`, [ids])).toBe(40);
      expect(await count(h, `SELECT 1 FROM booking WHERE id = ANY($1::bigint[]) AND next_expiry_check_at IS NOT NULL`, [holds.map((b) => b.id)])).toBe(0);
    } finally {
      await Promise.all(more.map((w) => w.close()));
    }
  });

  it('provider says processing at expiry: hold kept past holdExpiresAt, then a silent success confirms it (no webhook)', async () => {
    const b = await holdCar(h);
    const intentId = await requestPay(h, b);
    // The customer paid; the provider is still processing and sends nothing (no webhook).
    await sandbox(h).post(`/intents/${intentId}/processing-silently`);

    // The expiry check ran, asked the provider and kept the hold.
    await waitFor(async () => {
      const { rows } = await h.sql(`SELECT next_expiry_check_at > hold_expires_at AS kept FROM booking WHERE id = $1`, [b.id]);
      return rows[0].kept === true;
    });
    await sleepUntil(b.holdExpiresAt.getTime() + 500);
    expect(await statusOf(h, b.id)).toBe('HOLD');
    expect((await getBooking(h, b.id)).holdExpiresAt).toBe(b.holdExpiresAt.toISOString());

    const intent = await sandbox(h).post(`/intents/${intentId}/succeed-silently`);
    expect(intent.status).toBe('succeeded');
    await waitStatus(b.id, 'CONFIRMED', 8000);
    const confirmedAt = (await occurredAt(b.id, 'booking.confirmed'))!;
    expect(confirmedAt).toBeGreaterThan(b.holdExpiresAt.getTime());
    expect(confirmedAt).toBeLessThanOrEqual(b.holdExpiresAt.getTime() + PAYMENT_GRACE_S * 1000);

    const view = await getBooking(h, b.id);
    expect(view).toMatchObject({ status: 'CONFIRMED', payment: { status: 'SUCCEEDED', amount: b.deposit }, refund: null });
    const { rows: payments } = await h.sql(`SELECT provider_txn_id, payment_intent_id, outcome FROM payment WHERE booking_id = $1`, [b.id]);
    expect(payments).toEqual([{ provider_txn_id: intent.providerTxnId, payment_intent_id: intentId, outcome: 'CONFIRMED' }]);
    // No webhook was sent or received for this booking.
    expect(await sandbox(h).webhooksFor(b.id)).toEqual([]);
    expect(await count(h, `SELECT 1 FROM webhook_inbox WHERE payload->'data'->>'reference' = $1`, [String(b.id)])).toBe(0);
    expect(topicsOf(await outboxOf(h, b.id))).toEqual(['booking.held', 'booking.confirmed']);

    // The provider's webhook arriving late is a duplicate of the same providerTxnId: nothing more happens.
    const late = paymentSucceeded(b.id, b.deposit, { intent: intentId, txn: intent.providerTxnId });
    expect((await signedWebhook(h, late)).status).toBe(200);
    await drained(h);
    expect(await count(h, `SELECT 1 FROM payment WHERE booking_id = $1`, [b.id])).toBe(1);
    expect(await count(h, `SELECT 1 FROM refund WHERE booking_id = $1`, [b.id])).toBe(0);
  });

  it('provider down at expiry (pay was requested): hold kept, then EXPIRED once the grace is over', async () => {
    const b = await holdCar(h);
    await requestPay(h, b);
    await sandbox(h).setFaults({ apiDown: true });

    await sleepUntil(b.holdExpiresAt.getTime() + 1200);
    expect(await statusOf(h, b.id)).toBe('HOLD');
    const { rows } = await h.sql(`SELECT next_expiry_check_at > hold_expires_at AS kept FROM booking WHERE id = $1`, [b.id]);
    expect(rows[0].kept).toBe(true);

    const deadline = b.holdExpiresAt.getTime() + PAYMENT_GRACE_S * 1000;
    await waitStatus(b.id, 'EXPIRED', 10_000);
    const at = (await occurredAt(b.id, 'booking.expired'))!;
    expect(at).toBeGreaterThanOrEqual(deadline);
    expect(at - deadline).toBeLessThan(1500);
    expect(topicsOf(await outboxOf(h, b.id))).toEqual(['booking.held', 'booking.expired']);
  });

  it('a hold without a pay request is not kept when the provider is down', async () => {
    await sandbox(h).setFaults({ apiDown: true });
    const b = await holdCar(h);
    await waitStatus(b.id, 'EXPIRED');
    expect((await occurredAt(b.id, 'booking.expired'))! - b.holdExpiresAt.getTime()).toBeLessThan(1000);
  });

  it('a success arriving after expiry is refunded in full; the booking stays EXPIRED', async () => {
    const b = await holdCar(h);
    await waitStatus(b.id, 'EXPIRED');
    const event = paymentSucceeded(b.id, b.deposit);
    const r = await signedWebhook(h, event);
    expect(r.status).toBe(200);
    expect(await statusOf(h, b.id)).toBe('EXPIRED');

    const refunds = await settledRefunds(h, b.id);
    expect(refunds).toEqual([expect.objectContaining({ amount: b.deposit, status: 'SUCCEEDED', paymentIntentId: event.data.paymentIntentId })]);
    const view = await getBooking(h, b.id);
    expect(view).toMatchObject({
      status: 'EXPIRED', payment: { status: 'SUCCEEDED', amount: b.deposit }, refund: { amount: b.deposit, status: 'SUCCEEDED' },
    });
    const events = await outboxOf(h, b.id);
    expect(topicsOf(events)).toEqual(['booking.held', 'booking.expired', 'refund.requested', 'refund.succeeded']);
    expect(events[2]!.payload).toMatchObject({ bookingId: b.id, amount: b.deposit, currency: 'VND' });
    expect(events[3]!.payload).toMatchObject({ bookingId: b.id, amount: b.deposit });
    expect(await sandbox(h).refundsFor(b.id)).toEqual([
      expect.objectContaining({ paymentIntentId: event.data.paymentIntentId, amount: b.deposit, status: 'succeeded' }),
    ]);
    await drained(h);
    expect(await notificationsOf(h, b.id)).toEqual(['booking.expired/push', 'booking.expired/sms', 'refund.succeeded/push', 'refund.succeeded/sms']);
  });
});

describe('expiry never hangs on a provider answer', () => {
  it('a succeeded intent with the wrong amount does not keep the hold: refunded, and the hold expires', async () => {
    const b = await holdCar(h, { fromHours: 500 });
    await requestPay(h, b);
    // Besides the deposit intent the customer asked for, the provider holds a succeeded one of another amount.
    const wrong = await sandbox(h).createIntent({ amount: b.deposit - 1, currency: 'VND', reference: String(b.id) });
    await sandbox(h).post(`/intents/${wrong.id}/succeed-silently`);
    expect((await expireNow(h, b.id)).kind).toBe('expired');
    expect(await statusOf(h, b.id)).toBe('EXPIRED');
    const { rows } = await h.sql(`SELECT amount::int FROM refund WHERE booking_id = $1`, [b.id]);
    expect(rows).toEqual([{ amount: b.deposit - 1 }]);
  });

  it('a provider 4xx is not "unreachable": the hold expires', async () => {
    const b = await holdCar(h, { fromHours: 510 });
    await requestPay(h, b);
    const other = { ...h.deps, psp: new PspClient({ baseUrl: h.config.pspUrl, apiKey: 'wrong-key', retries: 0 }) };
    expect((await expireNow(h, b.id, other)).kind).toBe('expired');
  });
});
