import { expect } from 'vitest';
import type { Harness } from './harness.js';
import { waitFor, type Reply } from './http.js';
import { statusOf } from './bookings.js';
import { hostToken, requestPay, type Hold } from './cars.js';
import { sandbox } from './sandbox.js';

/** Changing bookings in tests: the request, and the states a booking is brought to first. */

/** POST /bookings/{id}/change as `token`, optionally with an Idempotency-Key. */
export const change = (h: Harness, id: number, token: string, body: unknown, key?: string): Promise<Reply> =>
  h.req('POST', `/bookings/${id}/change`, { token, body, headers: key === undefined ? {} : { 'idempotency-key': key } });

/** A change that must succeed: its 200 body. */
export async function changed(h: Harness, id: number, token: string, body: unknown, key?: string) {
  const r = await change(h, id, token, body, key);
  expect(r.status, r.text).toBe(200);
  return r.json;
}

/** The booking row's fields a refused change must leave exactly as they were. */
export async function bookingRow(h: Harness, id: number) {
  const { rows } = await h.sql(`
    SELECT status, version, car_id::int AS "carId", lower(period) AS "from", upper(period) AS "to", blocked::text,
           room_type_id::int AS "roomTypeId", check_in::text AS "checkIn", check_out::text AS "checkOut", rooms, guests,
           rate_plan_id::int AS "ratePlanId", quote_id::int AS "quoteId", deposit_amount::int AS "depositAmount",
           total_amount::int AS "totalAmount", night_prices::text AS "nightPrices", deposit_version AS "depositVersion",
           payment_intent_id AS "paymentIntentId", hold_expires_at AS "holdExpiresAt"
    FROM booking WHERE id = $1`, [id]);
  return rows[0];
}

/** Everything a refused change must not have written: the row, and the booking's events, refunds and intents owed. */
export async function footprint(h: Harness, id: number) {
  const { rows } = await h.sql(`
    SELECT (SELECT count(*)::int FROM outbox WHERE message_key = $1::text) AS events,
           (SELECT count(*)::int FROM refund WHERE booking_id = $1::bigint) AS refunds,
           (SELECT count(*)::int FROM intent_cancellation WHERE booking_id = $1::bigint) AS cancellations,
           (SELECT count(*)::int FROM superseded_intent WHERE booking_id = $1::bigint) AS superseded`, [id]);
  return { row: await bookingRow(h, id), ...rows[0] };
}

/** Pays the hold's deposit at the sandbox (its checkout succeeds, the webhook confirms): CONFIRMED; returns the intent. */
export async function confirm(h: Harness, b: Hold): Promise<string> {
  const intentId = await requestPay(h, b);
  await sandbox(h).post(`/intents/${intentId}/succeed`);
  await waitFor(async () => (await statusOf(h, b.id)) === 'CONFIRMED', 10_000);
  return intentId;
}

/** CONFIRMED, then picked up by the car's host: ON_TRIP. */
export async function onTrip(h: Harness, b: Hold): Promise<void> {
  await confirm(h, b);
  const r = await h.req('POST', `/bookings/${b.id}/pickup`, { token: hostToken(h) });
  expect(r.status, r.text).toBe(200);
}

/** The booking.changed events of a booking, oldest first. */
export async function changedEvents(h: Harness, id: number) {
  const { rows } = await h.sql(`SELECT payload FROM outbox WHERE message_key = $1::text AND topic = 'booking.changed' ORDER BY id`, [String(id)]);
  return rows.map((r) => r.payload);
}
