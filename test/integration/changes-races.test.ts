import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { codeOf, inHours, mapLimit, sleep, waitFor } from '../helpers/http.js';
import { newCar, requestPay } from '../helpers/cars.js';
import { newCustomer } from '../helpers/customers.js';
import { drained, outboxOf, statusOf } from '../helpers/bookings.js';
import { addDays, stayApi } from '../helpers/stays.js';
import { sandbox } from '../helpers/sandbox.js';
import { paymentSucceeded, signedWebhook } from '../helpers/webhooks.js';
import { change } from '../helpers/changes.js';
import { formatResults, runChecks } from '../../scripts/invariants/index.js';

// CONTRACT "Changing a booking": a change races expiry, payment and cancellation on the booking's version; each sees
// the booking before the change or after it, never half of it. 50 rounds of a change against the expiry of its hold
// and 50 of a change of the deposit against the webhook of the old deposit's payment; every round ends consistent,
// and check:invariants (no overlap, counts = live stays, payments accounted, deposits = payments − refunds, old
// intents cancelled or refunded) holds over all of them.

const ROUNDS = 50;
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ workers: true, env: { LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent', HOLD_TTL_S: '2', PAYMENT_GRACE_S: '0', HOLD_RATE_LIMIT: '100000', LEASE_S: '5' } });
});
afterAll(async () => h?.close());

const today = new Date().toISOString().slice(0, 10);

async function invariantsHold(only: string[]) {
  const results = await runChecks({
    databaseUrl: h.config.DATABASE_URL, graceS: 0, psp: { url: h.config.pspUrl, apiKey: h.config.PSP_API_KEY }, kafka: null, only,
  });
  expect(results.filter((r) => r.violations.length), formatResults(results)).toEqual([]);
  expect(results.map((r) => r.name).sort()).toEqual([...only].sort());
}

describe('a change against the expiry of its hold', () => {
  it(`${ROUNDS} rounds (cars and stays): the change either lands before the expiry or is refused; every hold ends EXPIRED with all of its inventory freed`, async () => {
    const stays = stayApi(h);
    const hotel = await stays.hotel();
    const rt = await stays.roomType(hotel.id, 300_000);
    await stays.setInventory(rt.id, addDays(today, 5), addDays(today, 12), 100);
    const cars = [await newCar(h), await newCar(h)];
    const outcomes = await mapLimit(ROUNDS, 10, async (i) => {
      const c = newCustomer(h);
      const stay = i % 2 === 1;
      const start = 24 * 5 + i * 8;
      const body = stay
        ? { roomTypeId: rt.id, checkIn: addDays(today, 5 + (i % 4)), checkOut: addDays(today, 7 + (i % 4)), rooms: 1 }
        : { carId: cars[i % 4 === 0 ? 0 : 1], from: inHours(start), to: inHours(start + 3) };
      const held = await h.req('POST', '/bookings', { token: c.token, body });
      expect(held.status, held.text).toBe(201);
      const id = held.json.bookingId as number;
      // Fire the change around the hold's deadline: the expiry loop claims a hold ≤ 100 ms after it is due.
      const fireAt = new Date(held.json.holdExpiresAt).getTime() - 100 + (i * 7) % 160;
      await sleep(Math.max(0, fireAt - Date.now()));
      const asked = stay
        ? { checkIn: addDays(today, 6 + (i % 4)), checkOut: addDays(today, 9 + (i % 4)), rooms: 2 }
        : { carId: cars[i % 4 === 0 ? 1 : 0], to: inHours(start + 5) };
      const r = await change(h, id, c.token, asked);
      expect(['200', '409 INVALID_STATE'], r.text).toContain(codeOf(r));
      await waitFor(async () => (await statusOf(h, id)) === 'EXPIRED', 10_000);
      const topics = (await outboxOf(h, id)).map((e) => e.topic).filter((t) => t.startsWith('booking.'));
      expect(topics, `booking ${id}`).toEqual(r.status === 200 ? ['booking.held', 'booking.changed', 'booking.expired'] : ['booking.held', 'booking.expired']);
      const row = (await h.sql(`SELECT car_id::int AS "carId", rooms, check_in::text AS "checkIn" FROM booking WHERE id = $1`, [id])).rows[0];
      if (r.status === 200) expect(row).toMatchObject(stay ? { rooms: 2, checkIn: asked.checkIn } : { carId: asked.carId });
      else expect(row).toMatchObject(stay ? { rooms: 1, checkIn: body.checkIn } : { carId: (body as { carId: number }).carId });
      return codeOf(r);
    });
    console.log(`change vs expiry: ${JSON.stringify(outcomes.reduce<Record<string, number>>((m, o) => ((m[o] = (m[o] ?? 0) + 1), m), {}))}`);
    // Nothing is held any more: every night back to zero, through the ledger.
    expect((await stays.nights(rt.id, addDays(today, 5), addDays(today, 12))).map((n) => n.held)).toEqual([0, 0, 0, 0, 0, 0, 0]);
    await invariantsHold(['car-no-overlap', 'stay-inventory', 'holds-expire']);
  }, 180_000);
});

describe('a change of the deposit against the webhook of the old deposit\'s payment', () => {
  it(`${ROUNDS} rounds: payment first confirms (then a higher deposit is refused, a lower one refunds the difference); change first refunds the payment in full`, async () => {
    const base = await newCar(h, { depositAmount: 1_000_000 });
    const targets = { dear: await newCar(h, { depositAmount: 3_000_000 }), cheaper: await newCar(h, { depositAmount: 400_000 }) };
    const outcomes = await mapLimit(ROUNDS, 8, async (i) => {
      const c = newCustomer(h);
      const start = 24 * 40 + i * 6;
      const held = await h.req('POST', '/bookings', { token: c.token, body: { carId: base, from: inHours(start), to: inHours(start + 2) } });
      expect(held.status, held.text).toBe(201);
      const b = { id: held.json.bookingId as number, carId: base, customerId: c.id, token: c.token, deposit: 1_000_000, holdExpiresAt: new Date() };
      await h.sql(`UPDATE booking SET hold_expires_at = now() + interval '1 hour', next_expiry_check_at = now() + interval '1 hour' WHERE id = $1`, [b.id]);
      const intentId = await requestPay(h, b);
      const paid = await sandbox(h).post(`/intents/${intentId}/succeed-silently`);
      const target = i % 2 === 0 ? 'dear' : 'cheaper';
      // Either may go first: each gets a head start of 0–9 ms in turn.
      const [r, wh] = await Promise.all([
        sleep((i * 3) % 10).then(() => change(h, b.id, c.token, { carId: targets[target] })),
        sleep((i * 7) % 10).then(() => signedWebhook(h, paymentSucceeded(b.id, 1_000_000, { intent: intentId, txn: paid.providerTxnId }))),
      ]);
      expect(wh.status, wh.text).toBe(200);
      const { rows: [row] } = await h.sql(`
        SELECT b.status, b.car_id::int AS "carId", b.deposit_amount::int AS deposit,
               (SELECT array_agg(outcome ORDER BY id) FROM payment WHERE booking_id = b.id) AS payments,
               (SELECT coalesce(array_agg(amount::int ORDER BY id), '{}') FROM refund WHERE booking_id = b.id) AS refunds
        FROM booking b WHERE b.id = $1`, [b.id]);
      const outcome = `${row.status} ${codeOf(r)}`;
      if (row.status === 'HOLD') {
        // The change came first: the old deposit's payment no longer pays it.
        expect([codeOf(r), row.carId, row.payments, row.refunds], outcome).toEqual(['200', targets[target], ['REFUNDED'], [1_000_000]]);
      } else if (target === 'dear') {
        expect([row.status, codeOf(r), row.carId, row.deposit, row.payments, row.refunds], outcome)
          .toEqual(['CONFIRMED', '409 DEPOSIT_INCREASE', base, 1_000_000, ['CONFIRMED'], []]);
      } else {
        expect([row.status, codeOf(r), row.carId, row.deposit, row.payments, row.refunds], outcome)
          .toEqual(['CONFIRMED', '200', targets.cheaper, 400_000, ['CONFIRMED'], [600_000]]);
      }
      return outcome;
    });
    console.log(`change vs webhook: ${JSON.stringify(outcomes.reduce<Record<string, number>>((m, o) => ((m[o] = (m[o] ?? 0) + 1), m), {}))}`);
    await drained(h, 30_000);
    await waitFor(async () => (await h.sql(`SELECT 1 FROM intent_cancellation WHERE done_at IS NULL`)).rowCount === 0, 40_000);
    await invariantsHold(['car-no-overlap', 'payments-accounted', 'deposits-balanced', 'refunds-settled', 'intents-cancelled']);
  }, 240_000);
});

describe('a writer waiting on the row lock of a booking a change is moving', () => {
  // Regression: the row lock was taken by one statement joining car, room type and hotel (FOR UPDATE OF b). A writer
  // that waited on a change's lock re-checked only the booking's new version against the joins it had read before
  // (EvalPlanQual): a booking moved to another car came back without its host, one moved to another room type
  // without its hotel, and the cancel, webhook or expiry waiting on it answered 500.
  it('sees it whole once the change commits: a cancel waiting on a car swap, a webhook waiting on a room type swap', async () => {
    const [a, other] = [await newCar(h), await newCar(h)];
    const c = newCustomer(h);
    const held = await h.req('POST', '/bookings', { token: c.token, body: { carId: a, from: inHours(24 * 90), to: inHours(24 * 90 + 2) } });
    const stays = stayApi(h);
    const hotel = await stays.hotel();
    const [rt1, rt2] = [await stays.roomType(hotel.id, 200_000), await stays.roomType(hotel.id, 200_000)];
    for (const rt of [rt1, rt2]) await stays.setInventory(rt.id, addDays(today, 60), addDays(today, 62), 2);
    const stay = await stays.hold(newCustomer(h).id, rt1.id, addDays(today, 60), addDays(today, 61));
    expect([held.status, stay.status]).toEqual([201, 201]);
    const writer = new pg.Client({ connectionString: h.config.DATABASE_URL });
    await writer.connect();
    try {
      const moveThen = async (statements: string[], waiting: () => Promise<{ status: number; text: string }>) => {
        await writer.query('BEGIN');
        for (const q of statements) await writer.query(q);
        const answer = waiting(); // blocks on the row lock
        await sleep(300);
        await writer.query('COMMIT');
        return answer;
      };
      const cancelled = await moveThen([`UPDATE booking SET car_id = ${other} WHERE id = ${held.json.bookingId}`],
        () => h.req('POST', `/bookings/${held.json.bookingId}/cancel`, { token: c.token, body: {} }));
      expect(cancelled.status, cancelled.text).toBe(200);
      // The room moved by hand as a change moves it, so the stay stays consistent.
      const night = addDays(today, 60);
      const paid = await moveThen([
        `SELECT set_config('booking.actor', 'test', true), set_config('booking.reason', 'change', true), set_config('booking.booking_id', '${stay.json.bookingId}', true)`,
        `UPDATE room_night SET held = held - 1 WHERE room_type_id = ${rt1.id} AND night = '${night}'`,
        `UPDATE room_night SET held = held + 1 WHERE room_type_id = ${rt2.id} AND night = '${night}'`,
        `UPDATE booking SET room_type_id = ${rt2.id} WHERE id = ${stay.json.bookingId}`,
      ], () => signedWebhook(h, paymentSucceeded(stay.json.bookingId, stay.json.depositAmount)));
      expect(paid.status, paid.text).toBe(200);
    } finally {
      await writer.end();
    }
    expect(await statusOf(h, stay.json.bookingId)).toBe('CONFIRMED');
  });
});
