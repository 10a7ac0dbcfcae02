import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { inHours } from '../helpers/http.js';
import { HOST_ID, hostToken, newCar, type Hold } from '../helpers/cars.js';
import { newCustomer } from '../helpers/customers.js';
import { getBooking, operatorToken, outboxOf } from '../helpers/bookings.js';
import { change, changed, changedEvents, footprint, onTrip } from '../helpers/changes.js';

// CONTRACT "Changing a booking", cars: the booking's period (and car) is updated in place, one row, so the exclusion
// constraint judges the new [from, to + turnaround) against every other live booking and never against itself. A
// refusal leaves the booking exactly as it was. Money (deposits, intents, refunds) is in changes-money.test.ts.

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ workers: true, env: { HOLD_RATE_LIMIT: '100000' } });
});
afterAll(async () => h?.close());

const HOUR = 3_600_000;
const at = (hours: number) => new Date(inHours(hours));

/** A HOLD on `carId` for [fromH, fromH + hours) from now, by a fresh customer. */
async function hold(carId: number, fromH: number, hours: number): Promise<Hold> {
  const c = newCustomer(h);
  const r = await h.req('POST', '/bookings', { token: c.token, body: { carId, from: inHours(fromH), to: inHours(fromH + hours) } });
  expect(r.status, r.text).toBe(201);
  return { id: r.json.bookingId, carId, customerId: c.id, token: c.token, deposit: r.json.depositAmount, holdExpiresAt: new Date(r.json.holdExpiresAt) };
}

describe('extend, shorten, move', () => {
  it('extends into free time: the new period, its total, booking.changed with before and after; holdExpiresAt stays', async () => {
    const carId = await newCar(h, { turnaroundMinutes: 60 });
    const b = await hold(carId, 100, 4);
    const body = await changed(h, b.id, b.token, { to: inHours(100 + 30) });
    expect(body).toMatchObject({
      bookingId: b.id, kind: 'car', status: 'HOLD', carId, from: at(100).toISOString(), to: at(130).toISOString(),
      totalAmount: 500_000 * 2, depositAmount: b.deposit, holdExpiresAt: b.holdExpiresAt.toISOString(),
      change: {
        before: { carId, from: at(100).toISOString(), to: at(104).toISOString() },
        after: { carId, from: at(100).toISOString(), to: at(130).toISOString() }, depositDelta: 0,
      },
    });
    const { change: _c, ...view } = body;
    expect(view).toEqual(await getBooking(h, b.id)); // the booking as GET shows it
    const [event] = await changedEvents(h, b.id);
    expect(event).toMatchObject({
      type: 'booking.changed', bookingId: b.id, kind: 'car', status: 'HOLD', depositDelta: 0, totalAmount: 1_000_000, refundAmount: 0,
      before: { to: at(104).toISOString() }, after: { to: at(130).toISOString() }, changedBy: `customer:${b.customerId}`,
    });
    expect((await outboxOf(h, b.id)).map((e) => e.topic)).toEqual(['booking.held', 'booking.changed']);
    const { rows } = await h.sql(`SELECT blocked::text, upper(blocked) AS hi FROM booking WHERE id = $1`, [b.id]);
    expect(new Date(rows[0].hi).getTime()).toBe(at(131).getTime()); // the turnaround follows the new return
    // The extension is really taken: another customer cannot hold inside it.
    const other = newCustomer(h);
    const r = await h.req('POST', '/bookings', { token: other.token, body: { carId, from: inHours(120), to: inHours(122) } });
    expect([r.status, r.json.error?.code]).toEqual([409, 'CAR_UNAVAILABLE']);
  });

  it('extends into taken time (turnaround included): 409 CAR_UNAVAILABLE, the booking exactly as it was', async () => {
    const carId = await newCar(h, { turnaroundMinutes: 120 });
    const b = await hold(carId, 200, 4);
    await hold(carId, 210, 4); // next booking at +210h; b's return + 2 h buffer may not reach into it
    const before = await footprint(h, b.id);
    for (const to of [inHours(212), inHours(209)]) {
      const r = await change(h, b.id, b.token, { to });
      expect([r.status, r.json.error.code], r.text).toEqual([409, 'CAR_UNAVAILABLE']);
    }
    expect(await footprint(h, b.id)).toEqual(before);
    expect((await changed(h, b.id, b.token, { to: inHours(208) })).to).toBe(at(208).toISOString()); // 208 + 2 h = 210: free
  });

  it('moves overlapping its own old period (never judged against itself)', async () => {
    const carId = await newCar(h, { turnaroundMinutes: 120 });
    const b = await hold(carId, 300, 6);
    const body = await changed(h, b.id, b.token, { from: inHours(303), to: inHours(310) });
    expect([body.from, body.to, body.totalAmount]).toEqual([at(303).toISOString(), at(310).toISOString(), 500_000]);
    // Moved back over itself again, by the car's host.
    expect((await changed(h, b.id, hostToken(h), { from: inHours(299), to: inHours(305) })).from).toBe(at(299).toISOString());
  });

  it('shortens: the freed time can be booked by another customer at once', async () => {
    const carId = await newCar(h, { turnaroundMinutes: 60 });
    const b = await hold(carId, 400, 48);
    await changed(h, b.id, b.token, { to: inHours(410) });
    const other = newCustomer(h);
    const r = await h.req('POST', '/bookings', { token: other.token, body: { carId, from: inHours(411), to: inHours(440) } });
    expect(r.status, r.text).toBe(201);
    // …and the time still shared stays taken.
    const third = await h.req('POST', '/bookings', { token: newCustomer(h).token, body: { carId, from: inHours(405), to: inHours(406) } });
    expect(third.status).toBe(409);
  });

  it('swaps to another car of the same deposit: the old car is free, the new one taken, the deposit unchanged', async () => {
    const a = await newCar(h, { depositAmount: 2_000_000 });
    const c = await newCar(h, { depositAmount: 2_000_000 });
    const b = await hold(a, 500, 4);
    const body = await changed(h, b.id, b.token, { carId: c });
    expect([body.carId, body.depositAmount, body.change.depositDelta]).toEqual([c, 2_000_000, 0]);
    const { change: _c, ...view } = body;
    expect(view).toEqual(await getBooking(h, b.id));
    expect((await h.req('POST', '/bookings', { token: newCustomer(h).token, body: { carId: a, from: inHours(500), to: inHours(504) } })).status).toBe(201);
    expect((await h.req('POST', '/bookings', { token: newCustomer(h).token, body: { carId: c, from: inHours(501), to: inHours(502) } })).status).toBe(409);
  });
});

describe('ON_TRIP: only the return', () => {
  it('extends and shortens the return of a rental in progress; changing from (or the car) is 409 INVALID_STATE', async () => {
    const carId = await newCar(h);
    const b = await hold(carId, 600, 24);
    await onTrip(h, b);
    const ext = await changed(h, b.id, hostToken(h), { to: inHours(600 + 48) });
    expect(ext).toMatchObject({ status: 'ON_TRIP', to: at(648).toISOString(), totalAmount: 1_000_000, change: { depositDelta: 0 } });
    expect((await changed(h, b.id, b.token, { to: inHours(630) })).totalAmount).toBe(1_000_000); // 30 h: two started days
    const before = await footprint(h, b.id);
    for (const body of [{ from: inHours(601) }, { carId: await newCar(h) }, { from: inHours(599), to: inHours(640) }]) {
      const r = await change(h, b.id, b.token, body);
      expect([r.status, r.json.error.code], r.text).toEqual([409, 'INVALID_STATE']);
    }
    // Giving `from` unchanged is no change of it.
    expect((await changed(h, b.id, b.token, { from: inHours(600), to: inHours(640) })).to).toBe(at(640).toISOString());
    expect((await footprint(h, b.id)).events).toBe(before.events + 1);
  });
});

describe('refusals write nothing', () => {
  it('400 for what a new hold may not be, a car of another currency, stay fields, unknown fields, or no change at all', async () => {
    const carId = await newCar(h);
    const b = await hold(carId, 700, 4);
    const usd = await h.req('POST', '/cars', {
      token: hostToken(h), body: { plate: `USD-${randomUUID().slice(0, 8)}`, model: 'M', city: 'HN', dailyPrice: 50, depositAmount: 100, currency: 'USD' },
    });
    const before = await footprint(h, b.id);
    const cases: [unknown, string][] = [
      [{ from: new Date(Date.now() - HOUR).toISOString() }, 'from'],
      [{ to: inHours(700 + 24 * 31) }, 'to'],
      [{ to: inHours(699) }, 'to'],
      [{ carId: usd.json.id }, 'carId'],
      [{ checkIn: '2031-01-01' }, 'checkIn'],
      [{ rooms: 2 }, 'rooms'],
      [{ to: inHours(710), extra: 1 }, 'body'],
      [{}, 'body'],
      [{ from: inHours(700), to: inHours(704), carId }, 'body'],
      [[], 'body'],
    ];
    for (const [body, field] of cases) {
      const r = await change(h, b.id, b.token, body);
      expect([r.status, r.json.error.code, r.json.error.details?.field], JSON.stringify(body)).toEqual([400, 'VALIDATION', field]);
    }
    expect((await change(h, b.id, b.token, { carId: 999_999 })).status).toBe(404);
    expect(await footprint(h, b.id)).toEqual(before);
  });

  it('who may change: the owner, the car\'s host, an operator; another customer or host gets 404; a host moves only to its own cars', async () => {
    const carId = await newCar(h);
    const b = await hold(carId, 800, 4);
    expect((await change(h, b.id, newCustomer(h).token, { to: inHours(805) })).status).toBe(404);
    expect((await change(h, b.id, h.token(HOST_ID + 1, 'host'), { to: inHours(805) })).status).toBe(404);
    const foreign = await h.req('POST', '/cars', {
      token: h.token(HOST_ID + 1, 'host'), body: { plate: `F-${randomUUID().slice(0, 8)}`, model: 'M', city: 'HN', dailyPrice: 50, depositAmount: 2_000_000 },
    });
    const r = await change(h, b.id, hostToken(h), { carId: foreign.json.id });
    expect([r.status, r.json.error.details?.field]).toEqual([400, 'carId']);
    expect((await changed(h, b.id, operatorToken(h), { carId: foreign.json.id })).carId).toBe(foreign.json.id); // an operator may
    // Now the other host's booking: the first host no longer sees it.
    expect((await change(h, b.id, hostToken(h), { to: inHours(806) })).status).toBe(404);
    expect((await changed(h, b.id, h.token(HOST_ID + 1, 'host'), { to: inHours(806) })).to).toBe(at(806).toISOString());
  });

  it('409 INVALID_STATE for a cancelled booking and for a HOLD past holdExpiresAt', async () => {
    const b = await hold(await newCar(h), 900, 4);
    await h.sql(`UPDATE booking SET hold_expires_at = now() - interval '1 second', next_expiry_check_at = now() + interval '1 hour' WHERE id = $1`, [b.id]);
    let r = await change(h, b.id, b.token, { to: inHours(905) });
    expect([r.status, r.json.error.code]).toEqual([409, 'INVALID_STATE']);
    const c = await hold(await newCar(h), 910, 4);
    expect((await h.req('POST', `/bookings/${c.id}/cancel`, { token: c.token, body: {} })).status).toBe(200);
    r = await change(h, c.id, c.token, { to: inHours(915) });
    expect([r.status, r.json.error.code]).toEqual([409, 'INVALID_STATE']);
  });
});

describe('Idempotency-Key', () => {
  it('a replay answers the first 200 with Idempotent-Replayed and changes nothing more; another body is 422; refusals replay too', async () => {
    const carId = await newCar(h);
    const b = await hold(carId, 1000, 4);
    const key = randomUUID();
    const first = await change(h, b.id, b.token, { to: inHours(1010) }, key);
    expect(first.status, first.text).toBe(200);
    await changed(h, b.id, b.token, { to: inHours(1008) }); // another change meanwhile, without the key
    const replay = await change(h, b.id, b.token, { to: inHours(1010) }, key);
    expect([replay.status, replay.headers.get('idempotent-replayed')]).toEqual([200, 'true']);
    expect(replay.json).toEqual(first.json);
    expect((await changedEvents(h, b.id)).length).toBe(2);
    expect((await change(h, b.id, b.token, { to: inHours(1011) }, key)).status).toBe(422);
    // The same key on POST /bookings is another key (the change's are kept apart).
    const hold2 = await h.req('POST', '/bookings', { token: b.token, body: { carId, from: inHours(1100), to: inHours(1101) }, headers: { 'idempotency-key': key } });
    expect(hold2.status, hold2.text).toBe(201);
    // A refusal is remembered: the same answer again, even once the change would be possible.
    const blocker = await hold(carId, 1020, 4);
    const k2 = randomUUID();
    const refused = await change(h, b.id, b.token, { to: inHours(1021) }, k2);
    expect(refused.status).toBe(409);
    expect((await h.req('POST', `/bookings/${blocker.id}/cancel`, { token: blocker.token, body: {} })).status).toBe(200);
    const again = await change(h, b.id, b.token, { to: inHours(1021) }, k2);
    expect([again.status, again.headers.get('idempotent-replayed'), again.json]).toEqual([409, 'true', refused.json]);
    // The same key twice at once: one change; the other is its replay or 409 IDEMPOTENCY_IN_PROGRESS.
    const k3 = randomUUID();
    const events = (await changedEvents(h, b.id)).length;
    const both = await Promise.all([1, 2].map(() => change(h, b.id, b.token, { to: inHours(1015) }, k3)));
    expect(both.filter((r) => r.status === 200 && r.headers.get('idempotent-replayed') !== 'true').length).toBe(1);
    for (const r of both) expect(['200', '409 IDEMPOTENCY_IN_PROGRESS']).toContain(r.status === 200 ? '200' : `${r.status} ${r.json.error.code}`);
    expect((await changedEvents(h, b.id)).length).toBe(events + 1);
  });
});
