import { describe, expect, it } from 'vitest';
import type { Harness } from '../helpers/harness.js';
import { codeOf, tally } from '../helpers/http.js';
import { newCustomerId } from '../helpers/customers.js';
import { addDays, checkStayInvariants, expectNoDeadlocks, ledgerCount, night, prng, withStayHarness, type StayApi } from '../helpers/stays.js';

// Holding rooms for a stay: all nights or none, never past sellable, also under concurrency.
let h: Harness;
let api: StayApi;
let hotelId: number;
withStayHarness((f) => ({ h, api, hotelId } = f));

// When the last burst of concurrent writers ended: the deadlock check at the end waits for PostgreSQL's stats.
let lastConcurrentAt = Date.now();
const bookingsOf = async (roomTypeId: number) =>
  (await h.sql(`SELECT id::int, status, rooms FROM booking WHERE room_type_id = $1 ORDER BY id`, [roomTypeId])).rows;

describe('stay holds', () => {
  it('last room: 30 concurrent customers → exactly one 201, 29 × 409 SOLD_OUT, counts exact', async () => {
    const rt = await api.roomType(hotelId);
    const d0 = '2027-05-01', d2 = addDays(d0, 2);
    await api.setInventory(rt.id, d0, d2, 1);
    const replies = await Promise.all(Array.from({ length: 30 }, () => api.hold(newCustomerId(), rt.id, d0, d2)));
    expect(tally(replies)).toEqual({ 201: 1, '409 SOLD_OUT': 29 });
    const won = replies.find((r) => r.status === 201)!.json;
    expect(won).toMatchObject({ kind: 'stay', status: 'HOLD', depositAmount: 1_000_000, currency: 'VND' });
    expect(await api.nights(rt.id, d0, d2)).toEqual([night(d0, 1, 1), night(addDays(d0, 1), 1, 1)]);
    expect(await bookingsOf(rt.id)).toEqual([{ id: won.bookingId, status: 'HOLD', rooms: 1 }]);
    // One entry per night for the setup, one per night for the hold: the 29 refusals leave no trace.
    expect(await ledgerCount(h, rt.id)).toBe(4);
    await checkStayInvariants(h, [rt.id]);
  });

  it('night 2 of 3 sold out → SOLD_OUT; nights 1 and 3 untouched, no booking, no ledger entries', async () => {
    const rt = await api.roomType(hotelId);
    const d0 = '2027-05-10', d1 = addDays(d0, 1), d2 = addDays(d0, 2), d3 = addDays(d0, 3);
    await api.setInventory(rt.id, d0, d3, 2);
    // Another customer takes both rooms of night 2 only.
    expect((await api.hold(newCustomerId(), rt.id, d1, d2, 2)).status).toBe(201);
    const before = await api.nights(rt.id, d0, d3);
    expect(before).toEqual([night(d0, 2), night(d1, 2, 2), night(d2, 2)]);
    let entries = await ledgerCount(h, rt.id);

    const customer = newCustomerId();
    const r = await api.hold(customer, rt.id, d0, d3);
    expect(r.status).toBe(409);
    expect(r.json.error.code).toBe('SOLD_OUT');
    expect(await api.nights(rt.id, d0, d3)).toEqual(before);
    expect(await ledgerCount(h, rt.id)).toBe(entries);
    expect((await bookingsOf(rt.id)).length).toBe(1);

    // One room free on night 2: two rooms are refused on all three nights, one room is held on all three.
    await api.setInventory(rt.id, d1, d2, 3);
    entries = await ledgerCount(h, rt.id);
    const two = await api.hold(customer, rt.id, d0, d3, 2);
    expect(codeOf(two)).toBe('409 SOLD_OUT');
    expect(await api.nights(rt.id, d0, d3)).toEqual([night(d0, 2), night(d1, 3, 2), night(d2, 2)]);
    expect(await ledgerCount(h, rt.id)).toBe(entries);
    const one = await api.hold(customer, rt.id, d0, d3, 1);
    expect(one.status).toBe(201);
    expect(one.json.depositAmount).toBe(1_000_000);
    expect(await api.nights(rt.id, d0, d3)).toEqual([night(d0, 2, 1), night(d1, 3, 3), night(d2, 2, 1)]);
    expect(await ledgerCount(h, rt.id)).toBe(entries + 3);
    await checkStayInvariants(h, [rt.id]);
  });

  it('a night without an inventory row is sold out; nothing changes', async () => {
    const rt = await api.roomType(hotelId, 700_000);
    const d0 = '2027-05-20', d1 = addDays(d0, 1), d2 = addDays(d0, 2), d3 = addDays(d0, 3);
    await api.setInventory(rt.id, d0, d1, 5);
    await api.setInventory(rt.id, d2, d3, 5); // night d1 never set up
    const entries = await ledgerCount(h, rt.id);
    for (const [ci, co] of [[d0, d3], [d1, d2], [d0, d2], [d1, d3], [d3, addDays(d3, 1)]] as const) {
      const r = await api.hold(newCustomerId(), rt.id, ci, co);
      expect(codeOf(r), `${ci}..${co}`).toBe('409 SOLD_OUT');
    }
    expect(await ledgerCount(h, rt.id)).toBe(entries);
    expect(await bookingsOf(rt.id)).toEqual([]);
    expect(await api.nights(rt.id, d0, d3)).toEqual([night(d0, 5), night(d2, 5)]);
    // The nights that exist can be held, with the deposit times rooms.
    const ok = await api.hold(newCustomerId(), rt.id, d2, d3, 3);
    expect(ok.status).toBe(201);
    expect(ok.json.depositAmount).toBe(2_100_000);
    await checkStayInvariants(h, [rt.id]);
  });

  it('overlapping 5-night holds from many clients (nights 1–5 vs 3–7, rooms 1–3) with cancels and adjustments: no 5xx, counts exact', async () => {
    const rt = await api.roomType(hotelId);
    const d0 = '2027-06-01', d7 = addDays(d0, 7);
    await api.setInventory(rt.id, d0, d7, 20);
    const rnd = prng(0x5eed);
    const wave = (n: number) =>
      Array.from({ length: n }, (_, i) => {
        const late = i % 2 === 1; // alternate so both ranges arrive interleaved
        const from = late ? addDays(d0, 2) : d0;
        return api.hold(newCustomerId(), rt.id, from, addDays(from, 5), rnd.int(1, 3));
      });
    const first = await Promise.all(wave(40));
    const t1 = tally(first);
    expect(Object.keys(t1).sort()).toEqual(['201', '409 SOLD_OUT']);
    await checkStayInvariants(h, [rt.id]);

    // Second wave: new holds on both ranges race operator cancellations of half of the first wave's holds,
    // customers cancelling their own, and operator adjustments over ranges crossing both.
    const held = first.filter((r) => r.status === 201).map((r) => r.json.bookingId as number);
    const second = await Promise.all([
      ...wave(40),
      ...held.filter((_, i) => i % 2 === 0).map((id) => h.req('POST', `/bookings/${id}/cancel`, { token: api.operator, body: {} })),
      ...[22, 30, 25, 40].map((s, i) => api.put(rt.id, addDays(d0, i), addDays(d0, i + 4), s, `resize ${i}`)),
    ]);
    for (const r of second) expect(r.status, r.text).toBeLessThan(500);
    expect(Object.keys(tally(second)).every((k) => ['200', '201', '409 SOLD_OUT', '409 INVENTORY_BELOW_COMMITTED'].includes(k))).toBe(true);
    await checkStayInvariants(h, [rt.id]);
    const nights = await api.nights(rt.id, d0, d7);
    expect(nights).toHaveLength(7);
    // The busy middle nights were filled up to what sellable allowed, never past it.
    for (const n of nights) expect(n.held + n.confirmed).toBeLessThanOrEqual(n.sellable);
    lastConcurrentAt = Date.now();
  });

  it('adjustments that create nights race each other and holds: no 5xx, counts exact (deadlocks counted at the end)', async () => {
    // Sparse inventory (every third night exists) and wide overlapping PUTs: each adjustment both locks existing
    // nights and creates missing ones while the others do the same — the shape that used to deadlock.
    const rnd = prng(0xad1);
    const d0 = '2027-07-01';
    const codes: Record<string, number> = {};
    let slowest = 0;
    for (let iteration = 0; iteration < 4; iteration++) {
      const rt = await api.roomType(hotelId);
      for (let i = 0; i < 20; i += 3) await api.setInventory(rt.id, addDays(d0, i), addDays(d0, i + 1), 4);
      const replies = await Promise.all(Array.from({ length: 24 }, async () => {
        const start = rnd.int(0, 19);
        const t0 = Date.now();
        const r = rnd.next() < 0.3
          ? await api.hold(newCustomerId(), rt.id, addDays(d0, start), addDays(d0, Math.min(20, start + rnd.int(1, 3))), rnd.int(1, 2))
          : await api.put(rt.id, addDays(d0, start), addDays(d0, Math.min(20, start + rnd.int(1, 10))), rnd.int(1, 6), 'widen');
        slowest = Math.max(slowest, Date.now() - t0);
        return r;
      }));
      for (const [k, n] of Object.entries(tally(replies))) codes[k] = (codes[k] ?? 0) + n;
      await checkStayInvariants(h, [rt.id]);
    }
    lastConcurrentAt = Date.now();
    expect(Object.keys(codes).filter((k) => !['200', '201', '409 SOLD_OUT', '409 INVENTORY_BELOW_COMMITTED'].includes(k))).toEqual([]);
    expect(codes['200']).toBeGreaterThan(0);
    expect(codes['201']).toBeGreaterThan(0);
    // A deadlock costs its victim deadlock_timeout (1 s) before slonik's silent retry; the final test counts them.
    console.info(`adjust race: ${JSON.stringify(codes)}, slowest request ${slowest} ms`);
  });
});

describe('deadlocks', () => {
  it('PostgreSQL detected no deadlock while this file ran', async () => {
    await expectNoDeadlocks(h, lastConcurrentAt);
  }, 20_000);
});
