import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { waitFor, type Reply } from '../helpers/http.js';
import { count, drained, getBooking, notificationsOf, outboxOf, settledRefunds, statusOf, topicsOf } from '../helpers/bookings.js';
import { holdCar } from '../helpers/cars.js';
import { expireNow } from '../helpers/expiry.js';
import { sandbox } from '../helpers/sandbox.js';
import { paymentSucceeded, pspSignature, signedWebhook } from '../helpers/webhooks.js';
import { pinnableClock } from '../helpers/clock.js';

// POST /payments/webhook: signed, deduplicated, committed before the 200; successes confirm or are refunded.
let h: Harness;
const clock = pinnableClock();
beforeAll(async () => {
  h = await startHarness({ workers: true, clock, env: { HOLD_RATE_LIMIT: '1000' } });
});
afterAll(async () => h?.close());

const paymentsOf = async (bookingId: number) =>
  (await h.sql(`SELECT id::int, provider_txn_id AS txn, amount::int, outcome FROM payment WHERE booking_id = $1 ORDER BY id`, [bookingId])).rows;
const inboxHas = async (eventId: string) => (await count(h, `SELECT 1 FROM webhook_inbox WHERE event_id = $1`, [eventId])) > 0;

describe('webhook: duplicates and concurrency', () => {
  it('the same event delivered 5 times at once: one payment, CONFIRMED, one booking.confirmed, one notification per channel', async () => {
    const b = await holdCar(h);
    const event = paymentSucceeded(b.id, b.deposit);
    const replies = await Promise.all(Array.from({ length: 5 }, () => signedWebhook(h, event)));
    for (const r of replies) {
      expect(r.status, r.text).toBe(200);
      expect(r.json).toEqual({ received: true });
    }
    // The effect is committed before the 200: no waiting needed.
    const view = await getBooking(h, b.id);
    expect(view.status).toBe('CONFIRMED');
    expect(view.payment).toEqual({ status: 'SUCCEEDED', amount: b.deposit });
    expect(view.refund).toBeNull();
    expect(view.holdExpiresAt).toBeNull();
    expect(await paymentsOf(b.id)).toEqual([expect.objectContaining({ txn: event.data.providerTxnId, amount: b.deposit, outcome: 'CONFIRMED' })]);
    expect(await count(h, `SELECT 1 FROM webhook_inbox WHERE event_id = $1`, [event.id])).toBe(1);
    expect(topicsOf(await outboxOf(h, b.id))).toEqual(['booking.held', 'booking.confirmed']);

    await waitFor(async () => (await notificationsOf(h, b.id)).length >= 2);
    await drained(h);
    expect(await notificationsOf(h, b.id)).toEqual(['booking.confirmed/push', 'booking.confirmed/sms']);
    expect(await count(h, `SELECT 1 FROM refund WHERE booking_id = $1`, [b.id])).toBe(0);
    // One job per (event, channel), each completed once; no other notification or refund job for the booking.
    const confirmed = (await outboxOf(h, b.id)).find((e) => e.topic === 'booking.confirmed')!;
    for (const channel of ['sms', 'push']) {
      await waitFor(async () => (await h.queues.notifications.getJobState(`notify-${confirmed.eventId}-${channel}-g0`)) === 'completed');
    }
    const ofBooking = async (kind: 'notifications' | 'refunds') =>
      (await h.queues[kind].getJobs(['completed', 'failed', 'delayed', 'waiting', 'active'], 0, 1000)).filter((j) => j.data.bookingId === b.id);
    expect(await ofBooking('notifications')).toHaveLength(2);
    expect(await ofBooking('refunds')).toHaveLength(0);
  });

  it('the same providerTxnId under 5 different event ids at once: still one payment and one confirmation', async () => {
    const b = await holdCar(h);
    const txn = `txn_same_${b.id}`;
    const intent = `pi_same_${b.id}`;
    const replies = await Promise.all(
      Array.from({ length: 5 }, () => signedWebhook(h, paymentSucceeded(b.id, b.deposit, { txn, intent }))),
    );
    expect(replies.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(await paymentsOf(b.id)).toEqual([expect.objectContaining({ txn, outcome: 'CONFIRMED' })]);
    expect(await statusOf(h, b.id)).toBe('CONFIRMED');
    expect(await count(h, `SELECT 1 FROM webhook_inbox WHERE payload->'data'->>'providerTxnId' = $1`, [txn])).toBe(5);
    expect(topicsOf(await outboxOf(h, b.id))).toEqual(['booking.held', 'booking.confirmed']);
    await drained(h);
    expect(await count(h, `SELECT 1 FROM refund WHERE booking_id = $1`, [b.id])).toBe(0);
    expect(await notificationsOf(h, b.id)).toEqual(['booking.confirmed/push', 'booking.confirmed/sms']);
  });
});

describe('webhook: signature and shape', () => {
  async function assertNothingWritten(bookingId: number, eventId: string) {
    expect(await inboxHas(eventId)).toBe(false);
    expect(await paymentsOf(bookingId)).toEqual([]);
    expect(await statusOf(h, bookingId)).toBe('HOLD');
    expect(topicsOf(await outboxOf(h, bookingId))).toEqual(['booking.held']);
  }

  it('bad signature, wrong secret, missing header, stale or future timestamp, tampered body: 401 INVALID_SIGNATURE, nothing written', async () => {
    const b = await holdCar(h);
    const event = paymentSucceeded(b.id, b.deposit);
    const raw = JSON.stringify(event);
    const now = Math.floor(Date.now() / 1000);
    // The server's clock stands at `now` (mid-second) while the cases are judged: ±301 s is outside 300 s exactly.
    clock.pin(now * 1000 + 500);
    const good = pspSignature(h.config.PAYMENT_WEBHOOK_SECRET, raw, now);
    const cases: { name: string; reply: Promise<Reply> }[] = [
      { name: 'garbage signature', reply: signedWebhook(h, event, { signature: `t=${now},v1=${'0'.repeat(64)}` }) },
      { name: 'wrong secret', reply: signedWebhook(h, event, { secret: 'not-the-secret' }) },
      { name: 'no header', reply: signedWebhook(h, event, { signature: null }) },
      { name: 'malformed header', reply: signedWebhook(h, event, { signature: 'sha256=abc' }) },
      { name: 'stale (301 s)', reply: signedWebhook(h, event, { t: now - 301 }) },
      { name: 'stale (1 h)', reply: signedWebhook(h, event, { t: now - 3600 }) },
      { name: 'future (301 s)', reply: signedWebhook(h, event, { t: now + 301 }) },
      // Signed for the original body, sent with the amount changed.
      { name: 'tampered body', reply: signedWebhook(h, null, { raw: raw.replace(`"amount":${b.deposit}`, '"amount":1'), signature: good }) },
      { name: 'body with extra whitespace', reply: signedWebhook(h, null, { raw: raw + ' ', signature: good }) },
    ];
    try {
      for (const c of cases) {
        const r = await c.reply;
        expect(r.status, c.name).toBe(401);
        expect(r.json?.error?.code, c.name).toBe('INVALID_SIGNATURE');
      }
    } finally {
      clock.release();
    }
    await assertNothingWritten(b.id, event.id);

    // The same event, correctly signed, still works afterwards (nothing was half-recorded).
    expect((await signedWebhook(h, event)).status).toBe(200);
    expect(await statusOf(h, b.id)).toBe('CONFIRMED');
  });

  it('a timestamp 300 s off, either way, is accepted', async () => {
    for (const off of [-300, 300]) {
      const b = await holdCar(h);
      const now = Math.floor(Date.now() / 1000);
      clock.pin(now * 1000 + 500);
      try {
        const r = await signedWebhook(h, paymentSucceeded(b.id, b.deposit), { t: now + off });
        expect(r.status, `${off} s: ${r.text}`).toBe(200);
      } finally {
        clock.release();
      }
      expect(await statusOf(h, b.id)).toBe('CONFIRMED');
    }
  });

  it('signed but malformed: 400 VALIDATION naming the field, nothing written', async () => {
    const b = await holdCar(h);
    const base = paymentSucceeded(b.id, b.deposit);
    const cases: { field: string; body: unknown }[] = [
      { field: 'id', body: { ...base, id: undefined } },
      { field: 'id', body: { ...base, id: 42 } },
      { field: 'type', body: { ...base, type: undefined } },
      { field: 'data.amount', body: { ...base, data: { ...base.data, amount: String(b.deposit) } } },
      { field: 'data.amount', body: { ...base, data: { ...base.data, amount: 1.5 } } },
      { field: 'data.reference', body: { ...base, data: { ...base.data, reference: undefined } } },
      { field: 'data', body: { ...base, data: undefined } },
    ];
    for (const c of cases) {
      const r = await signedWebhook(h, c.body);
      expect(r.status, `${c.field}: ${r.text}`).toBe(400);
      expect(r.json.error.code).toBe('VALIDATION');
      expect(r.json.error.details.field).toBe(c.field);
    }
    // Not JSON at all, but validly signed.
    const notJson = await signedWebhook(h, null, { raw: '{"id": "evt_x", ' });
    expect(notJson.status).toBe(400);
    expect(notJson.json.error.code).toBe('VALIDATION');
    await assertNothingWritten(b.id, base.id);
  });

  it('a success without providerTxnId is malformed: 400 and nothing written', async () => {
    const b = await holdCar(h, { fromHours: 530 });
    const event = paymentSucceeded(b.id, b.deposit) as { data: Record<string, unknown> };
    delete event.data.providerTxnId;
    const r = await signedWebhook(h, event);
    expect(r.status).toBe(400);
    expect(r.json.error.code).toBe('VALIDATION');
    expect(await statusOf(h, b.id)).toBe('HOLD');
  });

  it('signed unknown type and unknown references: 200 {received:true}, no effect', async () => {
    const b = await holdCar(h);
    const unknownType = paymentSucceeded(b.id, b.deposit, { type: 'charge.disputed' });
    let r = await signedWebhook(h, unknownType);
    expect(r.status, r.text).toBe(200);
    expect(r.json).toEqual({ received: true });
    // processing / failed are known but change nothing either.
    for (const type of ['payment_intent.processing', 'payment_intent.payment_failed']) {
      r = await signedWebhook(h, paymentSucceeded(b.id, b.deposit, { type }));
      expect(r.status).toBe(200);
      expect(r.json).toEqual({ received: true });
    }
    expect(await statusOf(h, b.id)).toBe('HOLD');
    expect(await paymentsOf(b.id)).toEqual([]);

    for (const reference of ['987654321', 'not-a-booking', '0', '-1', '1e3', '9'.repeat(40)]) {
      const e = paymentSucceeded(reference, b.deposit);
      r = await signedWebhook(h, e);
      expect(r.status, `${reference}: ${r.text}`).toBe(200);
      expect(r.json).toEqual({ received: true });
      expect(await count(h, `SELECT 1 FROM payment WHERE provider_txn_id = $1`, [e.data.providerTxnId])).toBe(0);
    }
    // A refund event for a refund we never asked for.
    r = await signedWebhook(h, { ...paymentSucceeded(b.id, 5, { type: 'refund.succeeded' }), data: { ...paymentSucceeded(b.id, 5).data, refundId: 're_unknown' } });
    expect(r.status).toBe(200);
    expect(await statusOf(h, b.id)).toBe('HOLD');
    expect(topicsOf(await outboxOf(h, b.id))).toEqual(['booking.held']);
  });
});

describe('webhook: successes that must be refunded', () => {
  it('wrong amount: refunded in full, the booking stays HOLD; the right amount afterwards still confirms', async () => {
    const b = await holdCar(h);
    const wrong = paymentSucceeded(b.id, b.deposit - 1);
    expect((await signedWebhook(h, wrong)).status).toBe(200);
    expect(await statusOf(h, b.id)).toBe('HOLD');
    expect(await paymentsOf(b.id)).toEqual([expect.objectContaining({ amount: b.deposit - 1, outcome: 'REFUNDED' })]);

    const [refund] = await settledRefunds(h, b.id);
    expect(refund).toMatchObject({ amount: b.deposit - 1, status: 'SUCCEEDED', paymentIntentId: wrong.data.paymentIntentId });
    expect(await sandbox(h).refundsFor(b.id)).toEqual([
      expect.objectContaining({ paymentIntentId: wrong.data.paymentIntentId, amount: b.deposit - 1 }),
    ]);
    const view = await getBooking(h, b.id);
    expect(view.status).toBe('HOLD');
    expect(view.refund).toEqual({ amount: b.deposit - 1, status: 'SUCCEEDED' });
    const requested = (await outboxOf(h, b.id)).find((e) => e.topic === 'refund.requested')!;
    expect(requested.payload).toMatchObject({ bookingId: b.id, amount: b.deposit - 1, currency: 'VND' });

    // A wrong currency is a wrong amount too.
    expect((await signedWebhook(h, paymentSucceeded(b.id, b.deposit, { currency: 'USD' }))).status).toBe(200);
    expect(await statusOf(h, b.id)).toBe('HOLD');

    const right = paymentSucceeded(b.id, b.deposit);
    expect((await signedWebhook(h, right)).status).toBe(200);
    expect(await statusOf(h, b.id)).toBe('CONFIRMED');
    expect((await getBooking(h, b.id)).payment).toEqual({ status: 'SUCCEEDED', amount: b.deposit });
    await drained(h);
    const refunds = await settledRefunds(h, b.id);
    expect(refunds.map((r) => [r.amount, r.status])).toEqual([[b.deposit - 1, 'SUCCEEDED'], [b.deposit, 'SUCCEEDED']]);
    expect(topicsOf(await outboxOf(h, b.id)).filter((t) => t === 'booking.confirmed')).toHaveLength(1);
  });

  it('two different payments of one booking at once: exactly one confirms, the other is refunded in full', async () => {
    for (let round = 0; round < 5; round++) {
      const b = await holdCar(h);
      const [e1, e2] = [paymentSucceeded(b.id, b.deposit), paymentSucceeded(b.id, b.deposit)];
      const replies = await Promise.all([signedWebhook(h, e1), signedWebhook(h, e2)]);
      expect(replies.map((r) => r.status)).toEqual([200, 200]);
      const payments = await paymentsOf(b.id);
      expect(payments.map((p) => p.outcome).sort()).toEqual(['CONFIRMED', 'REFUNDED']);
      const loser = payments.find((p) => p.outcome === 'REFUNDED')!;
      const loserEvent = [e1, e2].find((e) => e.data.providerTxnId === loser.txn)!;
      const refunds = await settledRefunds(h, b.id);
      expect(refunds).toEqual([expect.objectContaining({ amount: b.deposit, status: 'SUCCEEDED', paymentId: loser.id, paymentIntentId: loserEvent.data.paymentIntentId })]);
      expect(await statusOf(h, b.id)).toBe('CONFIRMED');
      expect(topicsOf(await outboxOf(h, b.id)).filter((t) => t === 'booking.confirmed')).toHaveLength(1);
    }
  });

  it('a second payment after confirmation is refunded; GET shows the confirming payment', async () => {
    const b = await holdCar(h);
    const first = paymentSucceeded(b.id, b.deposit);
    expect((await signedWebhook(h, first)).status).toBe(200);
    // A later, different success (another amount, so GET can tell them apart).
    const second = paymentSucceeded(b.id, b.deposit + 500);
    expect((await signedWebhook(h, second)).status).toBe(200);

    expect(await paymentsOf(b.id)).toEqual([
      expect.objectContaining({ txn: first.data.providerTxnId, outcome: 'CONFIRMED' }),
      expect.objectContaining({ txn: second.data.providerTxnId, outcome: 'REFUNDED' }),
    ]);
    const refunds = await settledRefunds(h, b.id);
    expect(refunds).toEqual([expect.objectContaining({ amount: b.deposit + 500, status: 'SUCCEEDED', paymentIntentId: second.data.paymentIntentId })]);
    const view = await getBooking(h, b.id);
    expect(view.status).toBe('CONFIRMED');
    expect(view.payment).toEqual({ status: 'SUCCEEDED', amount: b.deposit });
    expect(view.refund).toEqual({ amount: b.deposit + 500, status: 'SUCCEEDED' });
    // Redelivering either event changes nothing.
    expect((await signedWebhook(h, first)).status).toBe(200);
    expect((await signedWebhook(h, second)).status).toBe(200);
    expect(await paymentsOf(b.id)).toHaveLength(2);
    await drained(h);
    expect(await count(h, `SELECT 1 FROM refund WHERE booking_id = $1`, [b.id])).toBe(1);
  });

  it('a zero-amount success for an expired booking is acknowledged (200) and needs no refund', async () => {
    const b = await holdCar(h, { fromHours: 520 });
    await expireNow(h, b.id);
    expect(await statusOf(h, b.id)).toBe('EXPIRED');
    const r = await signedWebhook(h, paymentSucceeded(b.id, 0));
    expect(r.status).toBe(200);
    const { rows } = await h.sql(`SELECT count(*)::int AS n FROM refund WHERE booking_id = $1`, [b.id]);
    expect(rows[0].n).toBe(0);
  });
});
