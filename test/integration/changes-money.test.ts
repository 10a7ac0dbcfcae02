import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { inHours, waitFor } from '../helpers/http.js';
import { newCar, requestPay, type Hold } from '../helpers/cars.js';
import { newCustomer } from '../helpers/customers.js';
import { drained, getBooking, notificationsOf, statusOf } from '../helpers/bookings.js';
import { sandbox } from '../helpers/sandbox.js';
import { change, changed, changedEvents, confirm, footprint } from '../helpers/changes.js';

// CONTRACT "Changing a booking", money. HOLD: a new deposit cancels the open intents (the intent-cancellation work)
// and the next /pay creates an intent for the new amount with key deposit-{id}-v{n}; a success for an old intent is
// refunded in full. CONFIRMED: a lower deposit refunds the difference (refund.requested, the refund work, no fee), a
// higher one is 409 DEPOSIT_INCREASE. The stays' side (rooms dropped) is in changes-stays.test.ts.

let h: Harness;
beforeAll(async () => {
  // LEASE_S 5: see check-invariants.test.ts (a create answered to a retry holds its cancellation a while).
  h = await startHarness({ workers: true, env: { HOLD_RATE_LIMIT: '100000', LEASE_S: '5' } });
});
afterEach(async () => {
  await sandbox(h).resetFaults();
  await sandbox(h).idle();
});
afterAll(async () => h?.close());

async function hold(carId: number, fromH: number): Promise<Hold> {
  const c = newCustomer(h);
  const r = await h.req('POST', '/bookings', { token: c.token, body: { carId, from: inHours(fromH), to: inHours(fromH + 4) } });
  expect(r.status, r.text).toBe(201);
  return { id: r.json.bookingId, carId, customerId: c.id, token: c.token, deposit: r.json.depositAmount, holdExpiresAt: new Date(r.json.holdExpiresAt) };
}
const intentStatus = async (id: string) => (await sandbox(h).intent(id)).status;
const money = async (bookingId: number) => {
  const { rows } = await h.sql(`
    SELECT (SELECT coalesce(array_agg(amount::int || ':' || outcome ORDER BY id), '{}') FROM payment WHERE booking_id = $1) AS payments,
           (SELECT coalesce(array_agg(amount::int || ':' || reason ORDER BY id), '{}') FROM refund WHERE booking_id = $1) AS refunds`, [bookingId]);
  return rows[0];
};

describe('a HOLD whose deposit changes', () => {
  it('cancels the old intent; the next /pay creates one for the new amount (key deposit-{id}-v1), which confirms', async () => {
    const cheap = await newCar(h, { depositAmount: 1_000_000 });
    const dear = await newCar(h, { depositAmount: 3_000_000 });
    const b = await hold(cheap, 100);
    const old = await requestPay(h, b);
    const body = await changed(h, b.id, b.token, { carId: dear });
    expect([body.depositAmount, body.change.depositDelta, body.status, body.holdExpiresAt]).toEqual([3_000_000, 2_000_000, 'HOLD', b.holdExpiresAt.toISOString()]);
    await waitFor(async () => (await intentStatus(old)) === 'canceled', 10_000);
    const fresh = await requestPay(h, { ...b, deposit: 3_000_000 });
    expect(fresh).not.toBe(old);
    expect((await sandbox(h).intent(fresh)).amount).toBe(3_000_000);
    // The provider knows it under deposit-{id}-v1: the same key answers the same intent.
    const again = await sandbox(h).createIntent({ amount: 3_000_000, currency: 'VND', reference: String(b.id) }, `deposit-${b.id}-v1`);
    expect(again.id).toBe(fresh);
    expect(await requestPay(h, b)).toBe(fresh); // reused after
    await sandbox(h).post(`/intents/${fresh}/succeed`);
    await waitFor(async () => (await statusOf(h, b.id)) === 'CONFIRMED', 10_000);
    expect((await getBooking(h, b.id)).payment).toEqual({ status: 'SUCCEEDED', amount: 3_000_000 });
    const { rows } = await h.sql(`SELECT payment_intent_id AS id FROM superseded_intent WHERE booking_id = $1`, [b.id]);
    expect(rows.map((r) => r.id)).toEqual([old]);
  });

  it('a success for an old intent is refunded in full, even when its amount equals the deposit again', async () => {
    const cheap = await newCar(h, { depositAmount: 1_000_000 });
    const dear = await newCar(h, { depositAmount: 3_000_000 });
    const b = await hold(cheap, 200);
    // The provider cannot be asked to cancel anything: the old intents stay payable for a while.
    await sandbox(h).setFaults({ answers: [{ endpoint: 'intents.list', answer: 503, rate: 1, hangMs: 0 }] });
    const v0 = await requestPay(h, b); // 1 000 000, deposit-{id}
    await changed(h, b.id, b.token, { carId: dear });
    const v1 = await requestPay(h, { ...b, deposit: 3_000_000 }); // 3 000 000, deposit-{id}-v1
    await changed(h, b.id, b.token, { carId: cheap }); // the deposit is 1 000 000 again
    // v0 has the very amount of the deposit, but it was made for an earlier one: no payment of this deposit.
    await sandbox(h).post(`/intents/${v0}/succeed`);
    await sandbox(h).post(`/intents/${v1}/succeed`);
    await waitFor(async () => (await money(b.id)).refunds.length === 2, 10_000);
    expect(await statusOf(h, b.id)).toBe('HOLD');
    const superseded = 'payment for an intent a change of the deposit superseded';
    // The two webhooks race each other to the provider's queue: compare as sets.
    const settled = await money(b.id);
    expect({ payments: [...settled.payments].sort(), refunds: [...settled.refunds].sort() })
      .toEqual({ payments: ['1000000:REFUNDED', '3000000:REFUNDED'], refunds: [`1000000:${superseded}`, `3000000:${superseded}`] });
    await sandbox(h).resetFaults();
    const v2 = await requestPay(h, b); // deposit-{id}-v2
    expect(new Set([v0, v1, v2]).size).toBe(3);
    await sandbox(h).post(`/intents/${v2}/succeed`);
    await waitFor(async () => (await statusOf(h, b.id)) === 'CONFIRMED', 10_000);
    await drained(h);
    const payments: string[] = (await money(b.id)).payments;
    expect([...payments.slice(0, 2).sort(), payments[2]]).toEqual(['1000000:REFUNDED', '3000000:REFUNDED', '1000000:CONFIRMED']);
    // The obligation, worked once the provider answers, finds the old ones succeeded and refunds nothing more.
    await waitFor(async () => (await h.sql(`SELECT done_at FROM intent_cancellation WHERE booking_id = $1`, [b.id])).rows[0]?.done_at, 40_000);
    await drained(h);
    expect((await money(b.id)).refunds.length).toBe(2);
  });

  it('a change that keeps the deposit keeps the intent: nothing cancelled, /pay answers the same intent', async () => {
    const a = await newCar(h, { depositAmount: 1_000_000 });
    const c = await newCar(h, { depositAmount: 1_000_000 });
    const b = await hold(a, 300);
    const intent = await requestPay(h, b);
    await changed(h, b.id, b.token, { carId: c, to: inHours(310) });
    expect(await requestPay(h, b)).toBe(intent);
    const f = await footprint(h, b.id);
    expect([f.cancellations, f.superseded, f.row.depositVersion]).toEqual([0, 0, 0]);
    expect(await intentStatus(intent)).toBe('requires_payment');
  });

  it('/pay racing a change of the deposit: the intent made for the old amount is superseded, the answer is the new amount\'s', async () => {
    const cheap = await newCar(h, { depositAmount: 1_000_000 });
    const dear = await newCar(h, { depositAmount: 3_000_000 });
    const b = await hold(cheap, 400);
    await sandbox(h).setFaults({ apiDelayMs: 600 });
    const pay = h.req('GET', `/bookings/${b.id}/pay`, { token: b.token });
    await new Promise((r) => setTimeout(r, 200)); // the intent for 1 000 000 is being created
    await changed(h, b.id, b.token, { carId: dear });
    const r = await pay;
    expect(r.status, r.text).toBe(303);
    const answered = r.headers.get('location')!.split('/').pop()!;
    await sandbox(h).resetFaults();
    expect((await sandbox(h).intent(answered)).amount).toBe(3_000_000);
    const { rows } = await h.sql(`SELECT payment_intent_id AS id, deposit_version AS v FROM superseded_intent WHERE booking_id = $1`, [b.id]);
    expect(rows.length).toBe(1);
    expect(rows[0].v).toBe(0);
    await waitFor(async () => (await intentStatus(rows[0].id)) === 'canceled', 10_000);
    expect(await intentStatus(answered)).toBe('requires_payment');
  });
});

describe('a CONFIRMED booking', () => {
  it('a higher deposit is 409 DEPOSIT_INCREASE with both amounts, the booking unchanged', async () => {
    const cheap = await newCar(h, { depositAmount: 1_000_000 });
    const dear = await newCar(h, { depositAmount: 3_000_000 });
    const b = await hold(cheap, 500);
    await confirm(h, b);
    const before = await footprint(h, b.id);
    const r = await change(h, b.id, b.token, { carId: dear, to: inHours(505) });
    expect([r.status, r.json.error.code, r.json.error.details]).toEqual([409, 'DEPOSIT_INCREASE', { depositAmount: 1_000_000, newDepositAmount: 3_000_000 }]);
    expect(await footprint(h, b.id)).toEqual(before);
  });

  it('a lower deposit refunds the difference (refund.requested, paid, no fee); the customer is told; a later cancel refunds the rest', async () => {
    const cheap = await newCar(h, { depositAmount: 1_000_000 });
    const dear = await newCar(h, { depositAmount: 3_000_000 });
    const b = await hold(dear, 600);
    await confirm(h, b);
    const body = await changed(h, b.id, b.token, { carId: cheap });
    expect(body).toMatchObject({ status: 'CONFIRMED', depositAmount: 1_000_000, payment: { amount: 3_000_000 }, refund: { amount: 2_000_000, status: 'PENDING' } });
    expect(body.change.depositDelta).toBe(-2_000_000);
    const [event] = await changedEvents(h, b.id);
    expect(event).toMatchObject({ depositDelta: -2_000_000, refundAmount: 2_000_000, depositAmount: 1_000_000 });
    await drained(h);
    expect((await getBooking(h, b.id)).refund).toEqual({ amount: 2_000_000, status: 'SUCCEEDED' });
    expect((await sandbox(h).refundsFor(b.id)).map((r) => r.amount)).toEqual([2_000_000]);
    expect(await notificationsOf(h, b.id)).toEqual(expect.arrayContaining(['booking.changed/push', 'booking.changed/sms']));
    // ≥ 72 h before pickup: the whole (new) deposit back; in all, exactly what was paid.
    const c = await h.req('POST', `/bookings/${b.id}/cancel`, { token: b.token, body: {} });
    expect([c.status, c.json.refundAmount]).toEqual([200, 1_000_000]);
    await drained(h);
    expect(await money(b.id)).toEqual({ payments: ['3000000:CONFIRMED'], refunds: ['2000000:change', '1000000:cancellation'] });
  });
});
