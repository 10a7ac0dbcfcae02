import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { newCar } from '../helpers/cars.js';
import { newCustomer, newCustomerId } from '../helpers/customers.js';
import { inHours, tally } from '../helpers/http.js';
import { insertCarHoldWithEvent, type CarHoldWrite } from '../../shared/db/bookings.js';
import { insertCarHoldsWithEvents } from '../../shared/db/car-hold-batch.js';
import { draftCarHeld } from '../../shared/events/outbox.js';
import { writeCarHold } from '../../shared/usecases/car-hold-batches.js';
import { batchTotals } from '../helpers/car-batches.js';

// Car holds without an Idempotency-Key share one statement when they arrive together (group commit,
// shared/usecases/car-hold-batches.ts): each still gets its own outcome, its own event, and the exclusion
// constraint still decides every one of them.

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => h?.close());

let hourSlot = 0;
/** A hold of `carId` for a fresh customer, `startHour` hours from now (the car's period is free unless a test books it). */
function write(carId: number, startHour: number, days = 1): CarHoldWrite {
  const from = new Date(inHours(startHour));
  const to = new Date(from.getTime() + days * 86_400_000);
  const customerId = newCustomerId();
  const hold = { customerId, carId, from, to, days, holdExpiresAt: new Date(Date.now() + 900_000) };
  const held = draftCarHeld(new Date(), { customerId, kind: 'car', carId, from: from.toISOString(), to: to.toISOString(), holdExpiresAt: hold.holdExpiresAt.toISOString() });
  return { hold, held };
}
const freshHour = () => 24 * 30 + (hourSlot += 100);

describe('car holds sharing a statement', () => {
  it('200 concurrent holds over 20 cars: statements carry several, no 5xx, no overlap, one event per hold', async () => {
    const cars = await Promise.all(Array.from({ length: 20 }, () => newCar(h, { turnaroundMinutes: 30 })));
    const base = freshHour();
    const before = await batchTotals();
    const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => {
      const at = base + (i % 4); // four overlapping 2-hour periods per car: most of the ten per car lose
      return h.req('POST', '/bookings', { token: newCustomer(h).token, body: { carId: cars[i % 20], from: inHours(at), to: inHours(at + 2) } });
    }));
    expect(answers.filter((r) => r.status >= 500 || ![201, 409].includes(r.status)).map((r) => r.text), JSON.stringify(tally(answers))).toEqual([]);
    const after = await batchTotals();
    expect(after.holds - before.holds).toBe(200);
    expect(after.statements - before.statements, 'some statements carried more than one hold').toBeLessThan(200);

    // Each car ends with exactly one hold (the four periods all overlap, turnaround included).
    const held = answers.filter((r) => r.status === 201);
    expect(held).toHaveLength(20);
    const { rows } = await h.sql(`SELECT car_id, count(*)::int AS n FROM booking WHERE car_id = ANY($1) GROUP BY car_id`, [cars]);
    expect(rows.map((r) => r.n)).toEqual(Array(20).fill(1));
    for (const r of answers.filter((a) => a.status === 409)) expect(r.json.error.code).toBe('CAR_UNAVAILABLE');

    // One booking.held per hold, naming it, with the answer's prices.
    const events = await h.sql(`SELECT message_key, payload FROM outbox WHERE topic = 'booking.held' AND message_key = ANY($1)`,
      [held.map((r) => String(r.json.bookingId))]);
    expect(events.rows).toHaveLength(20);
    for (const r of held) {
      const e = events.rows.find((x) => x.message_key === String(r.json.bookingId))!.payload;
      expect(e).toMatchObject({ bookingId: r.json.bookingId, depositAmount: r.json.depositAmount, totalAmount: r.json.totalAmount, currency: r.json.currency });
    }
  }, 60_000);

  it('one statement answers every outcome, in input order: held, taken, no such car, over the money bound', async () => {
    const [free, taken, pricey] = await Promise.all([newCar(h), newCar(h), newCar(h)]);
    await h.sql('UPDATE car SET daily_price = 400000000000000 WHERE id = $1', [pricey]); // × 3 days > MAX_MONEY
    const at = freshHour();
    expect((await insertCarHoldWithEvent(h.deps.prepared, write(taken, at))).kind).toBe('held');
    const outcomes = await insertCarHoldsWithEvents(h.deps.prepared, [write(free, at), write(taken, at), write(999_999_999, at), write(pricey, at, 3)]);
    expect(outcomes!.map((o) => o.kind)).toEqual(['held', 'taken', 'noCar', 'overBound']);
    const { rows } = await h.sql(`SELECT car_id FROM booking WHERE car_id = ANY($1) ORDER BY id`, [[free, taken, pricey]]);
    expect(rows.map((r) => Number(r.car_id))).toEqual([taken, free]);
    // The single statement refuses over the bound the same way (by the CHECK).
    expect((await insertCarHoldWithEvent(h.deps.prepared, write(pricey, at, 3))).kind).toBe('overBound');
  });

  it('writes the same booking and event as the single statement does', async () => {
    const [a, b, c] = await Promise.all([newCar(h), newCar(h), newCar(h)]);
    const at = freshHour();
    const one = write(a, at, 2);
    const single = await insertCarHoldWithEvent(h.deps.prepared, one);
    const both = [write(b, at, 2), write(c, at, 2)];
    const batched = await insertCarHoldsWithEvents(h.deps.prepared, both);
    const ids = [single, ...batched!].map((o) => (o.kind === 'held' ? o.row.id : 0));
    const q = await h.sql(`
      SELECT b.id, b.status, b.customer_id, b.deposit_amount, b.total_amount, b.currency, b.hold_expires_at, b.next_expiry_check_at,
             lower(b.period) AS "from", upper(b.period) AS "to", o.topic, o.payload, o.request_id, o.traceparent, o.event_id
      FROM booking b JOIN outbox o ON o.message_key = b.id::text WHERE b.id = ANY($1) ORDER BY b.id`, [ids]);
    expect(q.rows).toHaveLength(3);
    const sources = [one, ...both];
    const shape = (r: Record<string, any>, w: CarHoldWrite) => {
      expect(r.event_id).toBe(w.held.eventId);
      expect(r.customer_id).toBe(String(w.hold.customerId));
      expect(new Date(r.from).toISOString()).toBe(w.hold.from.toISOString());
      expect(new Date(r.hold_expires_at).toISOString()).toBe(w.hold.holdExpiresAt.toISOString());
      const { bookingId, eventId, occurredAt, customerId, carId, holdExpiresAt, ...rest } = r.payload;
      expect(bookingId).toBe(r.id === undefined ? undefined : Number(r.id));
      expect({ eventId, customerId, carId }).toEqual({ eventId: w.held.eventId, customerId: w.hold.customerId, carId: w.hold.carId });
      return { status: r.status, deposit: r.deposit_amount, total: r.total_amount, currency: r.currency, next: String(r.next_expiry_check_at) === String(r.hold_expires_at),
        topic: r.topic, requestId: r.request_id, traceparent: r.traceparent, rest: { ...rest, from: undefined, to: undefined } };
    };
    // A batch's ids need not follow its input order: pair each row with the write that made it.
    const shapes = q.rows.map((r) => shape(r, sources[ids.indexOf(Number(r.id))]!));
    expect(shapes[1]).toEqual(shapes[0]);
    expect(shapes[2]).toEqual(shapes[0]);
    expect(Object.keys(q.rows[1]!.payload).sort()).toEqual(Object.keys(q.rows[0]!.payload).sort());
  });

  it('a statement the server refuses wrote nothing: each hold is tried on its own, and only the one at fault fails', async () => {
    const cars = await Promise.all([newCar(h), newCar(h), newCar(h)]);
    const poisoned = cars[1]!;
    await h.sql(`CREATE FUNCTION test_poison_hold() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.car_id = ${poisoned} THEN RAISE EXCEPTION 'poisoned car' USING ERRCODE = 'P0001'; END IF; RETURN NEW; END $$`);
    await h.sql('CREATE TRIGGER test_poison_hold BEFORE INSERT ON booking FOR EACH ROW EXECUTE FUNCTION test_poison_hold()');
    try {
      const before = await batchTotals();
      const at = freshHour();
      // Submitted in one turn of the event loop: they leave as one statement, which the trigger fails.
      const settled = await Promise.allSettled(cars.map((carId) => writeCarHold(h.deps.prepared, write(carId, at))));
      expect(settled.map((s) => (s.status === 'fulfilled' ? s.value.kind : (s.reason as Error).message))).toEqual(['held', 'poisoned car', 'held']);
      const after = await batchTotals();
      expect(after.holds - before.holds).toBe(3);
      expect(after.statements - before.statements, 'each hold on its own after the refused statement').toBe(3);
      const { rows } = await h.sql('SELECT car_id FROM booking WHERE car_id = ANY($1)', [cars]);
      expect(rows.map((r) => Number(r.car_id)).sort()).toEqual([cars[0], cars[2]].sort());
    } finally {
      await h.sql('DROP TRIGGER test_poison_hold ON booking');
      await h.sql('DROP FUNCTION test_poison_hold()');
    }
  });

  it('refuses a batch that names a car twice (events are joined to bookings by car)', async () => {
    const car = await newCar(h);
    const at = freshHour();
    await expect(insertCarHoldsWithEvents(h.deps.prepared, [write(car, at), write(car, at + 50)])).rejects.toThrow(/twice/);
  });
});
