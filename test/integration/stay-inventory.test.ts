import { describe, expect, it } from 'vitest';
import type { Harness } from '../helpers/harness.js';
import { codeOf } from '../helpers/http.js';
import { newCustomerId } from '../helpers/customers.js';
import { paymentSucceeded, signedWebhook } from '../helpers/webhooks.js';
import { addDays, checkStayInvariants, ledgerCount, night, withStayHarness, type StayApi } from '../helpers/stays.js';

// Operators setting sellable rooms per night, and the append-only ledger of every count change.
let h: Harness;
let api: StayApi;
let hotelId: number;
withStayHarness((f) => ({ h, api, hotelId } = f));

describe('inventory ledger and operator endpoints', () => {
  it('the database refuses UPDATE, DELETE and TRUNCATE of inventory_ledger, and unattributed count changes', async () => {
    const rt = await api.roomType(hotelId);
    await api.setInventory(rt.id, '2027-09-01', '2027-09-03', 4);
    const n = await ledgerCount(h, rt.id);
    await expect(h.sql(`UPDATE inventory_ledger SET after_held = 99 WHERE room_type_id = $1`, [rt.id])).rejects.toThrow(/append-only/);
    await expect(h.sql(`DELETE FROM inventory_ledger WHERE room_type_id = $1`, [rt.id])).rejects.toThrow(/append-only/);
    await expect(h.sql(`TRUNCATE inventory_ledger`)).rejects.toThrow(/append-only/);
    await expect(h.sql(`DELETE FROM room_night WHERE room_type_id = $1`, [rt.id])).rejects.toThrow(/append-only/);
    // A count change that does not say who and why is refused (so no change can bypass the ledger).
    await expect(h.sql(`UPDATE room_night SET held = held + 1 WHERE room_type_id = $1`, [rt.id])).rejects.toThrow(/booking.actor/);
    // …and the CHECK holds even when attributed.
    await expect(h.sql(
      `WITH a AS (SELECT set_config('booking.actor', 'test', false), set_config('booking.reason', 'oversell', false))
       UPDATE room_night SET held = sellable + 1 FROM a WHERE room_type_id = $1`, [rt.id])).rejects.toThrow(/room_night_no_oversell/);
    expect(await ledgerCount(h, rt.id)).toBe(n);
    await checkStayInvariants(h, [rt.id]);
  });

  it('operator endpoints: 401 without a valid token, 403 for customers and hosts', async () => {
    const rt = await api.roomType(hotelId);
    const q = 'from=2027-09-01&to=2027-09-03';
    const calls: [string, string, unknown?][] = [
      ['POST', '/hotels', { name: 'X', city: 'HCM', timezone: 'Asia/Ho_Chi_Minh' }],
      ['POST', `/hotels/${hotelId}/room-types`, { name: 'X', depositAmount: 1 }],
      ['PUT', `/room-types/${rt.id}/inventory`, { from: '2027-09-01', to: '2027-09-03', sellable: 5, reason: 'x' }],
      ['GET', `/room-types/${rt.id}/inventory?${q}`],
      ['GET', `/room-types/${rt.id}/inventory/audit?${q}`],
    ];
    const parts = h.token(1, 'operator').split('.');
    const badSig = `${parts[0]}.${parts[1]}.${'A'.repeat(43)}`; // an operator's claims, wrong signature
    for (const [method, path, body] of calls) {
      for (const [token, want] of [
        [undefined, '401 UNAUTHENTICATED'],
        [badSig, '401 UNAUTHENTICATED'],
        [h.token(5, 'customer'), '403 FORBIDDEN'],
        [h.token(6, 'host'), '403 FORBIDDEN'],
      ] as const) {
        const r = await h.req(method, path, { token, body });
        expect(codeOf(r), `${method} ${path} as ${token ? token.slice(-6) : 'nobody'}`).toBe(want);
      }
    }
    // Nothing was created or changed by the refused calls.
    expect(await ledgerCount(h, rt.id)).toBe(0);
    const { rows } = await h.sql(`SELECT count(*)::int AS n FROM hotel WHERE name = 'X'`);
    expect(rows[0].n).toBe(0);
  });

  it('PUT inventory is all or none: one night below held + confirmed → 409 and no night changed', async () => {
    const rt = await api.roomType(hotelId);
    const d0 = '2027-09-10', d = (i: number) => addDays(d0, i);
    await api.setInventory(rt.id, d(0), d(5), 4);
    expect((await api.hold(newCustomerId(), rt.id, d(2), d(3), 3)).status).toBe(201);
    // Confirm one more room on night 3 (index 3) so that confirmed counts too.
    const b = await api.hold(newCustomerId(), rt.id, d(3), d(4), 2);
    expect(b.status).toBe(201);
    expect((await signedWebhook(h, paymentSucceeded(b.json.bookingId, b.json.depositAmount))).status).toBe(200);
    const before = await api.nights(rt.id, d(0), d(5));
    expect(before).toEqual([night(d(0), 4), night(d(1), 4), night(d(2), 4, 3), night(d(3), 4, 0, 2), night(d(4), 4)]);
    const entries = await ledgerCount(h, rt.id);

    // Range reaching past the existing nights too: the missing ones must not be created either.
    for (const [from, to, sellable] of [[d(-1), d(6), 2], [d(0), d(5), 0], [d(3), d(4), 1], [d(2), d(3), 2]] as const) {
      const r = await api.put(rt.id, from, to, sellable, 'shrink');
      expect(codeOf(r), `${from}..${to} → ${sellable}`).toBe('409 INVENTORY_BELOW_COMMITTED');
    }
    expect(await api.nights(rt.id, d(-1), d(6))).toEqual(before);
    expect(await ledgerCount(h, rt.id)).toBe(entries);

    // Exactly held + confirmed is allowed.
    const ok = await api.put(rt.id, d(2), d(4), 3, 'shrink to fit');
    expect(ok.status).toBe(200);
    expect(ok.json.nights).toEqual([night(d(2), 3, 3), night(d(3), 3, 0, 2)]);
    // Validation: to must be after from, sellable ≥ 0, reason required.
    for (const body of [
      { from: d(2), to: d(2), sellable: 1, reason: 'x' },
      { from: d(2), to: d(3), sellable: -1, reason: 'x' },
      { from: d(2), to: d(3), sellable: 1 },
      { from: '2027-02-30', to: d(3), sellable: 1, reason: 'x' },
    ]) {
      expect(codeOf(await h.req('PUT', `/room-types/${rt.id}/inventory`, { token: api.operator, body })), JSON.stringify(body)).toBe('400 VALIDATION');
    }
    expect(codeOf(await api.put(999_999, d(0), d(1), 1))).toBe('404 NOT_FOUND');
    await checkStayInvariants(h, [rt.id]);
  });
});
