import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { addDays } from '../helpers/stays.js';
import { calNight, codeOf, rateApi, rateLedger } from '../helpers/rates.js';

// Contract, "Prices, restrictions and quotes": room types' maxGuests, rate plans, the nightly calendar and its ledger.
let h: Harness;
let api: ReturnType<typeof rateApi>;
let hotelId: number;
beforeAll(async () => {
  h = await startHarness();
  api = rateApi(h);
  hotelId = (await api.hotel({ city: 'Seoul', timezone: 'Asia/Seoul' })).id;
});
afterAll(async () => h?.close());

const outboxOf = async (topic: string, key: number) =>
  (await h.sql(`SELECT message_key AS key, payload FROM outbox WHERE topic = $1 AND message_key = $2 ORDER BY id`, [topic, String(key)])).rows;

describe('room types and rate plans', () => {
  it('room types carry maxGuests (default 2); rate plans answer 201 {id, roomTypeId, name, currency} in the room type\'s currency', async () => {
    const plain = await h.req('POST', `/hotels/${hotelId}/room-types`, { token: api.operator, body: { name: 'Std', depositAmount: 5 } });
    expect(plain.status).toBe(201);
    expect(plain.json).toMatchObject({ hotelId, name: 'Std', depositAmount: 5, currency: 'VND', maxGuests: 2 });
    const big = await api.roomTypeWith(hotelId, { maxGuests: 6, currency: 'KRW' });
    expect(big).toMatchObject({ maxGuests: 6, currency: 'KRW' });
    for (const maxGuests of [0, 101, 2.5, '3', null]) {
      const r = await h.req('POST', `/hotels/${hotelId}/room-types`, { token: api.operator, body: { name: 'X', depositAmount: 1, maxGuests } });
      expect(codeOf(r), JSON.stringify(maxGuests)).toBe('400 VALIDATION');
    }

    const r = await h.req('POST', `/room-types/${big.id}/rate-plans`, { token: api.operator, body: { name: 'Breakfast included' } });
    expect(r.status).toBe(201);
    expect(r.json).toEqual({ id: expect.any(Number), roomTypeId: big.id, name: 'Breakfast included', currency: 'KRW' });
    expect(codeOf(await h.req('POST', `/room-types/999999/rate-plans`, { token: api.operator, body: { name: 'x' } }))).toBe('404 NOT_FOUND');
    expect(codeOf(await h.req('POST', `/room-types/abc/rate-plans`, { token: api.operator, body: { name: 'x' } }))).toBe('404 NOT_FOUND');
    for (const body of [{}, { name: '' }, { name: 5 }, { name: 'x'.repeat(201) }, []]) {
      expect(codeOf(await h.req('POST', `/room-types/${big.id}/rate-plans`, { token: api.operator, body })), JSON.stringify(body)).toBe('400 VALIDATION');
    }
    // Operators only, checked before the input.
    for (const role of ['customer', 'host'] as const) {
      expect(codeOf(await h.req('POST', `/room-types/${big.id}/rate-plans`, { token: h.token(5, role), body: {} }))).toBe('403 FORBIDDEN');
    }
    expect(codeOf(await h.req('POST', `/room-types/${big.id}/rate-plans`, { body: { name: 'x' } }))).toBe('401 UNAUTHENTICATED');
  });
});

describe('PUT / GET /rate-plans/{id}/calendar', () => {
  it('sets the fields given on every night, keeps the others; never-set nights have the defaults and price null', async () => {
    const rt = await api.roomTypeWith(hotelId);
    const plan = await api.ratePlan(rt.id);
    const d0 = '2027-04-01', d = (i: number) => addDays(d0, i);
    expect(await api.calendar(plan.id, d(0), d(3))).toEqual([calNight(d(0)), calNight(d(1)), calNight(d(2))]);

    expect(await api.setCalendar(plan.id, { from: d(0), to: d(3), price: 1_200_000 })).toEqual(
      [0, 1, 2].map((i) => calNight(d(i), { price: 1_200_000 })));
    // A second write on an overlapping range changes only what it gives.
    const after = await api.setCalendar(plan.id, { from: d(1), to: d(5), minStay: 2, closedToArrival: true });
    expect(after).toEqual([
      calNight(d(1), { price: 1_200_000, minStay: 2, closedToArrival: true }),
      calNight(d(2), { price: 1_200_000, minStay: 2, closedToArrival: true }),
      calNight(d(3), { minStay: 2, closedToArrival: true }),
      calNight(d(4), { minStay: 2, closedToArrival: true }),
    ]);
    await api.setCalendar(plan.id, { from: d(2), to: d(3), maxStay: 7, closedToDeparture: true, stopSell: true, price: 0 });
    expect(await api.calendar(plan.id, d(-1), d(6))).toEqual([
      calNight(d(-1)),
      calNight(d(0), { price: 1_200_000 }),
      calNight(d(1), { price: 1_200_000, minStay: 2, closedToArrival: true }),
      calNight(d(2), { price: 0, minStay: 2, maxStay: 7, closedToArrival: true, closedToDeparture: true, stopSell: true }),
      calNight(d(3), { minStay: 2, closedToArrival: true }),
      calNight(d(4), { minStay: 2, closedToArrival: true }),
      calNight(d(5)),
    ]);
    // Flags go back to false when set so.
    await api.setCalendar(plan.id, { from: d(2), to: d(3), stopSell: false });
    expect((await api.calendar(plan.id, d(2), d(3)))[0]!.stopSell).toBe(false);
  });

  it('366 nights at most, all or none; bad input is 400 and writes nothing', async () => {
    const rt = await api.roomTypeWith(hotelId);
    const plan = await api.ratePlan(rt.id);
    const d0 = '2028-01-01';
    const year = await api.setCalendar(plan.id, { from: d0, to: addDays(d0, 366), price: 900_000 });
    expect(year).toHaveLength(366);
    expect(year.every((n) => n.price === 900_000)).toBe(true);
    expect((await api.calendar(plan.id, d0, addDays(d0, 366))).at(-1)).toEqual(calNight(addDays(d0, 365), { price: 900_000 }));
    const entries = (await rateLedger(h, plan.id)).length;
    expect(entries).toBe(366);

    const bad: Record<string, unknown>[] = [
      { from: d0, to: addDays(d0, 367), price: 1 }, // 367 nights
      { from: d0, to: d0, price: 1 },
      { from: addDays(d0, 1), to: d0, price: 1 },
      { from: d0, to: addDays(d0, 2) }, // no field to set
      { from: d0, to: addDays(d0, 2), price: -1 },
      { from: d0, to: addDays(d0, 2), price: 1.5 },
      { from: d0, to: addDays(d0, 2), price: '100' },
      { from: d0, to: addDays(d0, 2), price: null },
      { from: d0, to: addDays(d0, 2), price: 1e13 },
      { from: d0, to: addDays(d0, 2), price: 1e308 },
      { from: d0, to: addDays(d0, 2), minStay: 0 },
      { from: d0, to: addDays(d0, 2), maxStay: 367 },
      { from: d0, to: addDays(d0, 2), minStay: 5, maxStay: 4 },
      { from: d0, to: addDays(d0, 2), stopSell: 'yes' },
      { from: d0, to: addDays(d0, 2), stopsell: true }, // misspelt: refused, not ignored
      { from: d0, to: addDays(d0, 2), price: 1, reason: '' },
      { from: '2028-02-30', to: addDays(d0, 2), price: 1 },
      { from: '28-01-01', to: addDays(d0, 2), price: 1 },
      { from: 20280101, to: addDays(d0, 2), price: 1 },
    ];
    for (const body of bad) expect(codeOf(await api.putCalendar(plan.id, body)), JSON.stringify(body)).toBe('400 VALIDATION');
    const noReason = await h.req('PUT', `/rate-plans/${plan.id}/calendar`, { token: api.operator, body: { from: d0, to: addDays(d0, 1), price: 1 } });
    expect(codeOf(noReason)).toBe('400 VALIDATION');
    expect(noReason.json.error.details.field).toBe('reason');
    const raw = await h.req('PUT', `/rate-plans/${plan.id}/calendar`, { token: api.operator, raw: '{"from":', headers: { 'content-type': 'application/json' } });
    expect(codeOf(raw)).toBe('400 VALIDATION');
    expect((await rateLedger(h, plan.id)).length).toBe(entries);
    expect((await api.calendar(plan.id, d0, addDays(d0, 2))).map((n) => n.price)).toEqual([900_000, 900_000]);

    // GET: the same range rules; unknown plan 404; operators only.
    for (const q of [`from=${d0}&to=${d0}`, `from=${d0}&to=${addDays(d0, 367)}`, `from=${d0}`, `from=x&to=y`]) {
      expect(codeOf(await h.req('GET', `/rate-plans/${plan.id}/calendar?${q}`, { token: api.operator })), q).toBe('400 VALIDATION');
    }
    expect(codeOf(await h.req('GET', `/rate-plans/999999/calendar?from=${d0}&to=${addDays(d0, 1)}`, { token: api.operator }))).toBe('404 NOT_FOUND');
    expect(codeOf(await api.putCalendar(999_999, { from: d0, to: addDays(d0, 1), price: 1 }))).toBe('404 NOT_FOUND');
    expect(codeOf(await api.putCalendar(plan.id, { from: d0, to: addDays(d0, 1), price: 1 }, h.token(3, 'customer')))).toBe('403 FORBIDDEN');
    expect(codeOf(await h.req('GET', `/rate-plans/${plan.id}/calendar?from=${d0}&to=${addDays(d0, 1)}`, { token: h.token(3, 'host') }))).toBe('403 FORBIDDEN');
  });

  it('every change is in the ledger (actor, reason, before, after), written with it; the ledger refuses UPDATE, DELETE, TRUNCATE', async () => {
    const rt = await api.roomTypeWith(hotelId);
    const plan = await api.ratePlan(rt.id);
    const d0 = '2027-05-01', d = (i: number) => addDays(d0, i);
    await h.req('PUT', `/rate-plans/${plan.id}/calendar`, { token: h.token(77, 'operator'), body: { from: d(0), to: d(2), price: 500, reason: 'season open' } });
    await api.putCalendar(plan.id, { from: d(1), to: d(3), stopSell: true, reason: 'renovation' });
    // Setting what is already there records nothing.
    await api.putCalendar(plan.id, { from: d(1), to: d(3), stopSell: true, reason: 'again' });
    const defaults = { price: null, minStay: 1, maxStay: 30, closedToArrival: false, closedToDeparture: false, stopSell: false };
    expect((await rateLedger(h, plan.id)).map(({ night, actor, reason, before, after }) => ({ night, actor, reason, before, after }))).toEqual([
      { night: d(0), actor: 'operator:77', reason: 'season open', before: null, after: { ...defaults, price: 500 } },
      { night: d(1), actor: 'operator:77', reason: 'season open', before: null, after: { ...defaults, price: 500 } },
      { night: d(1), actor: 'operator:1', reason: 'renovation', before: { ...defaults, price: 500 }, after: { ...defaults, price: 500, stopSell: true } },
      { night: d(2), actor: 'operator:1', reason: 'renovation', before: null, after: { ...defaults, stopSell: true } },
    ]);
    for (const stmt of ['UPDATE rate_ledger SET reason = $1', 'DELETE FROM rate_ledger WHERE reason <> $1', 'TRUNCATE rate_ledger']) {
      await expect(h.sql(stmt, stmt.includes('$1') ? ['x'] : []), stmt).rejects.toThrow(/append-only/);
    }
    await expect(h.sql('DELETE FROM rate_night WHERE rate_plan_id = $1', [plan.id])).rejects.toThrow(/append-only/);
    // An unattributed change (no actor/reason for the transaction) is refused by the database.
    await expect(h.sql('UPDATE rate_night SET price = 1 WHERE rate_plan_id = $1', [plan.id])).rejects.toThrow(/booking.actor/);
    expect((await rateLedger(h, plan.id)).length).toBe(4);
  });

  it('each PUT publishes one rate.updated through the outbox (key ratePlanId), in the same transaction', async () => {
    const rt = await api.roomTypeWith(hotelId);
    const plan = await api.ratePlan(rt.id);
    await api.setCalendar(plan.id, { from: '2027-06-01', to: '2027-06-08', price: 700_000, minStay: 2, reason: 'summer' });
    const events = await outboxOf('rate.updated', plan.id);
    expect(events).toEqual([{
      key: String(plan.id),
      payload: {
        eventId: expect.any(String), type: 'rate.updated', occurredAt: expect.any(String), bookingId: null,
        ratePlanId: plan.id, roomTypeId: rt.id, currency: 'VND', from: '2027-06-01', to: '2027-06-08',
        changes: { price: 700_000, minStay: 2 }, reason: 'summer', actor: 'operator:1',
      },
    }]);
    // A refused PUT leaves neither event nor ledger entry.
    expect(codeOf(await api.putCalendar(plan.id, { from: '2027-06-01', to: '2027-06-01', price: 1 }))).toBe('400 VALIDATION');
    expect(await outboxOf('rate.updated', plan.id)).toHaveLength(1);
  });
});

describe('extreme input', () => {
  it('dates at the ends of the calendar and the largest numbers are answered, never 5xx', async () => {
    // Money is at most 10^15 minor units, and so is every total derived from it (CONTRACT.md "Conventions").
    const rt = await api.roomTypeWith(hotelId, { maxGuests: 100, depositAmount: 1_000_000_000_000_000 });
    const plan = await api.ratePlan(rt.id);
    expect((await api.setCalendar(plan.id, { from: '9999-12-01', to: '9999-12-31', price: 1_000_000_000_000 })).at(-1)!.date).toBe('9999-12-30');
    expect((await api.calendar(plan.id, '0001-01-01', '0001-02-01'))[0]).toEqual(calNight('0001-01-01'));
    await api.setInventory(rt.id, '9999-12-01', '9999-12-31', 100_000);
    // The largest deposit (10^15) for one room and the largest nightly price: answered exactly. 100 rooms for 30
    // nights would be a deposit of 10^17 and a total of 3·10^15: 400.
    const q = await api.quote(7, { roomTypeId: rt.id, ratePlanId: plan.id, checkIn: '9999-12-01', checkOut: '9999-12-11', rooms: 1, guests: 100 });
    expect(q.status, q.text).toBe(200);
    expect(q.json.totalAmount).toBe(10_000_000_000_000);
    const big = await api.quote(7, { roomTypeId: rt.id, ratePlanId: plan.id, checkIn: '9999-12-01', checkOut: '9999-12-31', rooms: 100, guests: 10_000 });
    expect(codeOf(big), big.text).toBe('400 VALIDATION');
    const edge = await api.quote(7, { roomTypeId: rt.id, ratePlanId: plan.id, checkIn: '9999-12-30', checkOut: '9999-12-31' });
    expect(edge.status, edge.text).toBe(200);
    const hold = await api.holdStay(7, { roomTypeId: rt.id, ratePlanId: plan.id, checkIn: '9999-12-30', checkOut: '9999-12-31', quoteId: edge.json.quoteId });
    expect(hold.status, hold.text).toBe(201);
    for (const body of [
      { from: '10000-01-01', to: '10000-01-02', price: 1 }, { from: '0000-01-01', to: '0000-01-02', price: 1 },
      { from: '2027-01-01', to: '2027-01-02', price: Number.MAX_SAFE_INTEGER }, { from: '2027-01-01', to: '2027-01-02', minStay: 2 ** 31 },
      { from: '2027-01-01', to: '2027-01-02', price: 1, extra: { nested: [1, 2, 3] } },
    ]) {
      const r = await api.putCalendar(plan.id, body);
      expect(codeOf(r), JSON.stringify(body)).toBe('400 VALIDATION');
    }
    for (const path of [`/rate-plans/${'9'.repeat(20)}/calendar?from=2027-01-01&to=2027-01-02`, `/rate-plans/0/calendar?from=2027-01-01&to=2027-01-02`, `/quotes/-1`]) {
      const r = await h.req('GET', path, { token: path.startsWith('/quotes') ? h.token(7, 'customer') : api.operator });
      expect(codeOf(r), path).toBe('404 NOT_FOUND');
    }
  });
});

describe('OpenAPI', () => {
  it('lists the rate-plan, calendar and quote paths', async () => {
    const r = await h.req('GET', '/openapi.json');
    for (const p of ['/room-types/{roomTypeId}/rate-plans', '/rate-plans/{ratePlanId}/calendar', '/quotes', '/quotes/{quoteId}']) {
      expect(r.json.paths[p], p).toBeDefined();
    }
    expect(Object.keys(r.json.paths['/rate-plans/{ratePlanId}/calendar']).sort()).toEqual(['get', 'put']);
  });
});
