import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Harness } from '../helpers/harness.js';
import { fixedClock } from '../helpers/clock.js';
import { codeOf, pricedDay, pricedHarness, PRICES, type PricedHarness, type rateApi } from '../helpers/rates.js';
import { insertQuoteShared, readStayShared } from '../../shared/usecases/stay-batches.js';
import { statementBatchSize } from '../../shared/metrics/work.js';
import { MAX_MONEY } from '../../shared/domain/money.js';

// Quotes and the stay reads share statements when they arrive together (shared/usecases/stay-batches.ts): each
// request must still get its own answer, and a quote the server refuses must fail alone.
const clock = fixedClock('2027-03-20T09:00:00Z');
let h: Harness;
let api: ReturnType<typeof rateApi>;
let pricedRoomType: PricedHarness['pricedRoomType'];
beforeAll(async () => ({ h, api, pricedRoomType } = await pricedHarness(clock)));
afterAll(async () => h?.close());

/** statement_batch_size so far for `statement` (this process's registry): statements run, requests they carried. */
async function batches(statement: string) {
  const { values } = await statementBatchSize.get();
  const of = (suffix: string) =>
    values.find((v) => v.metricName === `statement_batch_size_${suffix}` && v.labels.statement === statement)?.value ?? 0;
  return { statements: of('count'), requests: of('sum') };
}

describe('shared quote statements', () => {
  it('concurrent quotes each get their own quote, the same as asked alone, and share statements', async () => {
    const plans = [await pricedRoomType(), await pricedRoomType()];
    const customer = api.nextCustomer();
    // Bodies that differ in what the answer shows (room type, dates, rooms, guests), so a swapped id cannot pass.
    const bodies = Array.from({ length: 40 }, (_, i) => {
      const { rt, plan } = plans[i % 2]!;
      const from = i % 2; // nights within the four priced ones
      return { roomTypeId: rt.id, ratePlanId: plan.id, checkIn: pricedDay(from), checkOut: pricedDay(from + 1 + (i % 3)), rooms: 1 + (i % 2), guests: 1 + (i % 3) };
    });
    const before = await batches('insert-quotes');
    const together = await Promise.all(bodies.map((b) => api.quote(customer, b)));
    const after = await batches('insert-quotes');
    expect(after.requests - before.requests).toBe(bodies.length);
    expect(after.statements - before.statements, 'some quotes shared a statement').toBeLessThan(bodies.length);

    const ids = new Set<number>();
    for (const [i, r] of together.entries()) {
      expect(r.status, r.text).toBe(200);
      ids.add(r.json.quoteId);
      const alone = await api.quote(customer, bodies[i]!);
      expect(alone.status, alone.text).toBe(200);
      expect({ ...r.json, quoteId: 0 }).toEqual({ ...alone.json, quoteId: 0 });
      const stored = await h.req('GET', `/quotes/${r.json.quoteId}`, { token: h.token(customer, 'customer') });
      expect(stored.json).toEqual(r.json);
    }
    expect(ids.size).toBe(bodies.length);
  });

  it('a quote the server refuses fails alone: the others of its statement are written, each with its own fields', async () => {
    const { rt, plan } = await pricedRoomType();
    const row = (customerId: number, depositAmount: number) => ({
      customerId, fingerprint: `f${customerId}`, roomTypeId: rt.id, ratePlanId: plan.id, checkIn: pricedDay(0), checkOut: pricedDay(2),
      rooms: 1, guests: 1, nightPrices: [PRICES[0]!, PRICES[1]!], totalAmount: PRICES[0]! + PRICES[1]!, depositAmount, currency: 'VND',
      validUntil: '2027-03-20T09:15:00.000Z',
    });
    const customers = [api.nextCustomer(), api.nextCustomer(), api.nextCustomer(), api.nextCustomer()];
    const before = await batches('insert-quotes');
    // Submitted in one turn: they leave as one statement, which quote_deposit_bound refuses as a whole.
    const settled = await Promise.allSettled(customers.map((c, i) => insertQuoteShared(h.deps.prepared, row(c, i === 2 ? MAX_MONEY + 1 : 1000 + i))));
    const after = await batches('insert-quotes');
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect(String((settled[2] as PromiseRejectedResult).reason)).toMatch(/quote_deposit_bound/);
    expect(after.requests - before.requests).toBe(4); // each tried alone once the shared statement was refused
    for (const [i, s] of settled.entries()) {
      if (s.status !== 'fulfilled') continue;
      const { rows } = await h.sql(`SELECT customer_id::int AS c, deposit_amount::int AS d FROM quote WHERE id = $1`, [s.value]);
      expect(rows).toEqual([{ c: customers[i], d: 1000 + i }]);
    }
    expect((await h.sql(`SELECT count(*)::int AS n FROM quote WHERE customer_id = $1`, [customers[2]])).rows[0].n).toBe(0);
  });

  it('stay reads read together answer each its own stay, and null for a room type that does not exist', async () => {
    const { rt, plan } = await pricedRoomType();
    const queries = [0, 1, 2, 3].map((from) => ({ roomTypeId: rt.id, ratePlanId: plan.id, checkIn: pricedDay(from), nightCount: 4 - from }));
    const missing = { roomTypeId: 999_999_999, ratePlanId: null, checkIn: pricedDay(0), nightCount: 1 };
    const answers = await Promise.all([...queries, missing, { ...queries[0]!, ratePlanId: null }].map((q) => readStayShared(h.deps.prepared, q)));
    for (const [i, q] of queries.entries()) {
      const a = answers[i]!;
      expect(a?.catalogue.roomTypeId).toBe(rt.id);
      expect(a?.nights.roomNights.map((n) => n.date)).toEqual(Array.from({ length: q.nightCount }, (_, k) => pricedDay(i + k)));
      expect(a?.nights.rate?.nights.map((n) => n.price)).toEqual(PRICES.slice(i, 4));
    }
    expect(answers[4]).toBeNull();
    expect(answers[5]?.nights.rate).toBeNull();
    expect(answers[5]?.catalogue.ratePlanRoomTypeId).toBeNull();
    expect(codeOf(await api.quote(api.nextCustomer(), { roomTypeId: 999_999_999, ratePlanId: plan.id, checkIn: pricedDay(0), checkOut: pricedDay(1) }))).toBe('404 NOT_FOUND');
  });
});
