import { beforeAll, describe, expect, it } from 'vitest';
import type { Harness } from '../helpers/harness.js';
import { addDays, checkStayInvariants, expectNoDeadlocks, ledgerCount, prng, withStayHarness, type StayApi } from '../helpers/stays.js';
import { stayWorkload, WEIGHTS } from '../helpers/stay-workload.js';

// Every stay operation at once, at random (operations in helpers/stay-workload.ts): counts and ledger stay exact.
const seed = Number(process.env.STAYS_SEED ?? 20270328);
const ROUNDS = Number(process.env.STAYS_ROUNDS ?? 8);
const OPS = 45;
const d0 = '2027-08-01';
const NIGHTS = 12; // nights d0 .. d0+11 exist; adjustments may create d0+12 .. d0+13

let h: Harness;
let api: StayApi;
let hotelId: number;
let roomTypes: { id: number; depositAmount: number }[];
let ids: number[];
const rnd = prng(seed);
withStayHarness((f) => ({ h, api, hotelId } = f));
beforeAll(async () => {
  console.info(`stays workload seed=${seed} (re-run with STAYS_SEED=${seed})`);
  roomTypes = [await api.roomType(hotelId, 500_000), await api.roomType(hotelId, 1_200_000), await api.roomType(hotelId, 3)];
  for (const rt of roomTypes) {
    for (let i = 0; i < NIGHTS; i += 3) await api.setInventory(rt.id, addDays(d0, i), addDays(d0, i + 3), rnd.int(3, 8));
  }
  ids = roomTypes.map((r) => r.id);
});

// When the last burst of concurrent writers ended: the deadlock check at the end waits for PostgreSQL's stats.
let lastConcurrentAt = Date.now();
let outcomes: Record<string, number> = {};

describe('stay inventory: randomized concurrent workload', () => {
  it('holds, payments, expiries, cancels, trips and adjustments keep counts and ledger exact', async () => {
    const workload = stayWorkload({ h, api, rnd, roomTypes, d0, nights: NIGHTS });
    outcomes = workload.outcomes;
    const started = Date.now();
    for (let round = 0; round < ROUNDS; round++) {
      const ops = Array.from({ length: OPS }, () => rnd.weighted(WEIGHTS));
      await Promise.all(ops.map((op) => workload.ops[op]()));
      await workload.resync();
      await checkStayInvariants(h, ids);
    }
    lastConcurrentAt = Date.now();
    const finalCheck = await checkStayInvariants(h, ids);
    console.info(`stays workload: ${ROUNDS}×${OPS} ops in ${Date.now() - started} ms`, finalCheck, outcomes);
  }, 180_000);

  it('the workload really exercised what it claims to: every status, refusals, adjustments and refunds', async () => {
    const { rows: statuses } = await h.sql(
      `SELECT status, count(*)::int AS n FROM booking WHERE room_type_id = ANY($1::bigint[]) GROUP BY status`, [ids]);
    const byStatus = Object.fromEntries(statuses.map((r) => [r.status, r.n]));
    for (const s of ['HOLD', 'CONFIRMED', 'EXPIRED', 'CANCELLED', 'COMPLETED']) expect(byStatus[s] ?? 0, s).toBeGreaterThan(0);
    expect(outcomes['hold 409 SOLD_OUT'] ?? 0).toBeGreaterThan(0);
    expect(outcomes['adjust 409 INVENTORY_BELOW_COMMITTED'] ?? 0).toBeGreaterThan(0);
    expect(outcomes['adjust 200'] ?? 0).toBeGreaterThan(0);
    const { rows: refunds } = await h.sql(
      `SELECT count(*)::int AS n FROM refund r JOIN booking b ON b.id = r.booking_id WHERE b.room_type_id = ANY($1::bigint[])`, [ids]);
    expect(refunds[0].n).toBeGreaterThan(0);
  });

  it('the audit API shows the same ledger, attributed', async () => {
    const rt = roomTypes[0]!;
    const audit = await h.req('GET', `/room-types/${rt.id}/inventory/audit?from=${d0}&to=${addDays(d0, NIGHTS + 2)}`, { token: api.operator });
    expect(audit.status).toBe(200);
    const entries = audit.json.entries as {
      at: string; date: string; actor: string; reason: string; bookingId: number | null;
      before: { sellable: number; held: number; confirmed: number }; after: { sellable: number; held: number; confirmed: number };
    }[];
    expect(entries.length).toBe(await ledgerCount(h, rt.id));
    for (const e of entries) {
      expect(Object.keys(e).sort()).toEqual(['actor', 'after', 'at', 'before', 'bookingId', 'date', 'reason']);
      expect(Number.isNaN(Date.parse(e.at))).toBe(false);
      expect(e.date).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      expect(e.actor).toMatch(/^(customer|operator|system):/);
      expect(e.reason.length).toBeGreaterThan(0);
      if (e.bookingId === null) expect(e.actor).toBe('operator:1');
      else expect(Number.isInteger(e.bookingId)).toBe(true);
    }
    expect(entries.some((e) => e.reason === 'hold' && e.bookingId !== null && e.actor.startsWith('customer:'))).toBe(true);
    expect(entries.some((e) => e.actor === 'system:payment' && e.reason === 'HOLD -> CONFIRMED')).toBe(true);
    expect(entries.some((e) => e.actor === 'system:expiry' && e.reason === 'HOLD -> EXPIRED')).toBe(true);
    expect(entries.some((e) => e.bookingId === null && e.reason.startsWith('random'))).toBe(true);
    // A narrower range returns only that range's nights.
    const one = await h.req('GET', `/room-types/${rt.id}/inventory/audit?from=${addDays(d0, 3)}&to=${addDays(d0, 4)}`, { token: api.operator });
    expect(one.status).toBe(200);
    expect((one.json.entries as { date: string }[]).every((e) => e.date === addDays(d0, 3))).toBe(true);
    expect(one.json.entries.length).toBe(entries.filter((e) => e.date === addDays(d0, 3)).length);
  });
});

describe('deadlocks', () => {
  it('PostgreSQL detected no deadlock while this file ran', async () => {
    await expectNoDeadlocks(h, lastConcurrentAt);
  }, 20_000);
});
