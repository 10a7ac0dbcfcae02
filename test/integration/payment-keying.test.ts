import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { statusOf } from '../helpers/bookings.js';
import { holdCar, requestPay, type Hold } from '../helpers/cars.js';
import { expireNow, makeDue } from '../helpers/expiry.js';
import { sandbox } from '../helpers/sandbox.js';
import { paymentSucceeded, signedWebhook } from '../helpers/webhooks.js';
import { checkPayment } from '../../shared/usecases/expiry.js';
import type { PspClient } from '../../shared/psp/client.js';

// Issue 8, item 5: a payment confirmed by the expiry's question to the provider and the same payment's webhook are
// one payment, in either order, even when the provider's list answer does not carry the transaction id: payments
// are keyed on the payment intent. Before, the expiry recorded it under a made-up `intent:{id}` and the webhook
// was taken for a second payment and refunded while the booking stayed CONFIRMED.

let h: Harness;
beforeAll(async () => {
  // No workers: each expiry check below is run by the test, at the moment it chooses.
  h = await startHarness({ env: { HOLD_RATE_LIMIT: '100000' } });
});
afterEach(async () => {
  await sandbox(h).resetFaults();
  await sandbox(h).idle();
});
afterAll(async () => h?.close());

const paymentsOf = async (bookingId: number) =>
  (await h.sql(`SELECT provider_txn_id, payment_intent_id, outcome FROM payment WHERE booking_id = $1 ORDER BY id`, [bookingId])).rows;
const refundCount = async (bookingId: number) =>
  (await h.sql(`SELECT count(*)::int AS n FROM refund WHERE booking_id = $1`, [bookingId])).rows[0].n as number;

/** A hold whose customer has paid: the intent succeeded at the provider, no webhook sent (yet). */
async function paidSilently(): Promise<{ b: Hold; intentId: string; txn: string }> {
  const b = await holdCar(h);
  const intentId = await requestPay(h, b);
  const intent = await sandbox(h).post(`/intents/${intentId}/succeed-silently`);
  // The provider's list answers without the transaction id (as a list that does not expand the charge).
  await sandbox(h).setFaults({ listWithoutTxnId: true });
  return { b, intentId, txn: intent.providerTxnId };
}

describe('a payment found by the expiry and by its webhook is one payment', () => {
  it('the provider query confirms first, then the webhook arrives: one payment (its txn id filled in), no refund', async () => {
    const { b, intentId, txn } = await paidSilently();
    expect((await expireNow(h, b.id)).kind).toBe('confirmed');
    expect(await paymentsOf(b.id)).toEqual([{ provider_txn_id: null, payment_intent_id: intentId, outcome: 'CONFIRMED' }]);

    expect((await signedWebhook(h, paymentSucceeded(b.id, b.deposit, { intent: intentId, txn }))).status).toBe(200);
    expect(await statusOf(h, b.id)).toBe('CONFIRMED');
    expect(await paymentsOf(b.id)).toEqual([{ provider_txn_id: txn, payment_intent_id: intentId, outcome: 'CONFIRMED' }]);
    expect(await refundCount(b.id)).toBe(0);
  });

  it('the webhook confirms while the expiry is asking the provider: the expiry\'s answer is the same payment, no refund', async () => {
    const { b, intentId, txn } = await paidSilently();
    await makeDue(h, b.id);
    // The expiry's question is answered (succeeded, no txn id) but held back until the webhook has been applied.
    let release!: () => void;
    const webhookApplied = new Promise<void>((r) => (release = r));
    let asked!: () => void;
    const askedProvider = new Promise<void>((r) => (asked = r));
    const psp = Object.create(h.deps.psp) as PspClient;
    psp.listPaymentIntents = async (reference) => {
      const answer = await h.deps.psp.listPaymentIntents(reference);
      asked();
      await webhookApplied;
      return answer;
    };
    const expiry = checkPayment({ ...h.deps, psp }, { bookingId: b.id, gen: 0 });
    await askedProvider;
    expect((await signedWebhook(h, paymentSucceeded(b.id, b.deposit, { intent: intentId, txn }))).status).toBe(200);
    expect(await statusOf(h, b.id)).toBe('CONFIRMED');
    release();
    expect((await expiry).kind).toBe('lost_race');

    expect(await statusOf(h, b.id)).toBe('CONFIRMED');
    expect(await paymentsOf(b.id)).toEqual([{ provider_txn_id: txn, payment_intent_id: intentId, outcome: 'CONFIRMED' }]);
    expect(await refundCount(b.id)).toBe(0);
  });

  it('a second success on another intent of the same booking is still a second payment: refunded', async () => {
    const { b, intentId, txn } = await paidSilently();
    expect((await signedWebhook(h, paymentSucceeded(b.id, b.deposit, { intent: intentId, txn }))).status).toBe(200);
    expect((await signedWebhook(h, paymentSucceeded(b.id, b.deposit))).status).toBe(200);
    expect((await paymentsOf(b.id)).map((p) => p.outcome)).toEqual(['CONFIRMED', 'REFUNDED']);
    expect(await refundCount(b.id)).toBe(1);
  });

  // Review finding: with payments unique per intent, a second, distinct transaction on one intent was dropped as a
  // "duplicate" — neither confirming nor refunded, the money kept. Effects happen once per providerTxnId.
  it('a second, distinct transaction on the same intent is a payment of its own: a wrong amount refunded, then the deposit confirms', async () => {
    const b = await holdCar(h);
    const intent = `pi_shared_${b.id}`;
    expect((await signedWebhook(h, paymentSucceeded(b.id, b.deposit - 1, { intent, txn: `txn_a_${b.id}` }))).status).toBe(200);
    expect((await signedWebhook(h, paymentSucceeded(b.id, b.deposit, { intent, txn: `txn_b_${b.id}` }))).status).toBe(200);
    expect(await statusOf(h, b.id)).toBe('CONFIRMED');
    expect((await paymentsOf(b.id)).map((p) => p.outcome)).toEqual(['REFUNDED', 'CONFIRMED']);
    expect(await refundCount(b.id)).toBe(1);
  });

  it('two bookings paid through one foreign intent id: each payment confirms its own booking', async () => {
    const [x, y] = [await holdCar(h), await holdCar(h)];
    const intent = `pi_foreign_${x.id}`;
    expect((await signedWebhook(h, paymentSucceeded(x.id, x.deposit, { intent }))).status).toBe(200);
    expect((await signedWebhook(h, paymentSucceeded(y.id, y.deposit, { intent }))).status).toBe(200);
    expect([await statusOf(h, x.id), await statusOf(h, y.id)]).toEqual(['CONFIRMED', 'CONFIRMED']);
    expect(await refundCount(x.id) + await refundCount(y.id)).toBe(0);
  });
});
