import { expect } from 'vitest';
import type { Harness } from './harness.js';
import { codeOf, type Reply } from './http.js';
import { newCustomerId } from './customers.js';
import { expireNow } from './expiry.js';
import { paymentSucceeded, signedWebhook, type WebhookBody } from './webhooks.js';
import { addDays, type Night, type Prng, type StayApi } from './stays.js';

/**
 * The operations of the randomized stay workload (test/integration/stay-workload.test.ts), one function each.
 * Every operation picks its target with the shared PRNG, so a seed replays the same choices; what a reply may
 * be is checked here, and each outcome is tallied so the test can show the workload did what it claims.
 */

export type Op = 'hold' | 'pay' | 'payDuplicate' | 'payWrongAmount' | 'startPay' | 'expire' | 'cancelCustomer'
  | 'cancelOperator' | 'pickup' | 'return' | 'customerPickup' | 'adjust';
/** How often each operation is drawn (the order matters to the PRNG: keep it). */
export const WEIGHTS: Record<Op, number> = {
  hold: 30, pay: 14, payDuplicate: 2, payWrongAmount: 2, startPay: 3, expire: 12, cancelCustomer: 7,
  cancelOperator: 5, pickup: 8, return: 6, customerPickup: 1, adjust: 10,
};

/** A booking as the workload last saw it; `CONFIRMED?` = paid, confirmation not yet observed. */
export interface Known { id: number; customer: number; deposit: number; status: string }

export interface WorkloadSetup {
  h: Harness;
  api: StayApi;
  rnd: Prng;
  roomTypes: { id: number; depositAmount: number }[];
  /** First night; nights d0 .. d0 + nights − 1 exist, adjustments may create two more. */
  d0: string;
  nights: number;
}

export function stayWorkload({ h, api, rnd, roomTypes, d0, nights }: WorkloadSetup) {
  const known: Known[] = [];
  const outcomes: Record<string, number> = {};
  const sentEvents: WebhookBody[] = [];
  const note = (k: string) => (outcomes[k] = (outcomes[k] ?? 0) + 1);
  const expectOne = (op: string, r: Reply, allowed: string[]) => {
    const c = codeOf(r);
    expect(allowed, `${op}: ${r.status} ${r.text}`).toContain(c);
    note(`${op} ${c}`);
    return c;
  };
  // Prefer a booking whose last known status fits the operation, so transitions actually happen.
  const target = (statuses: string[]): Known | undefined => {
    if (known.length === 0) return undefined;
    const fit = known.filter((k) => statuses.includes(k.status));
    return fit.length && rnd.next() < 0.85 ? rnd.pick(fit) : rnd.pick(known);
  };

  async function hold() {
    const rt = rnd.pick(roomTypes);
    const start = rnd.int(0, nights - 1);
    const end = Math.min(nights + 1, start + rnd.int(1, 4)); // sometimes reaches a missing night
    const customer = newCustomerId();
    const rooms = rnd.int(1, 3);
    const r = await api.hold(customer, rt.id, addDays(d0, start), addDays(d0, end), rooms);
    if (expectOne('hold', r, ['201', '409 SOLD_OUT']) === '201') {
      expect(r.json.depositAmount).toBe(rt.depositAmount * rooms);
      known.push({ id: r.json.bookingId, customer, deposit: r.json.depositAmount, status: 'HOLD' });
    }
  }

  /** A provider success for a HOLD: the deposit (confirms) or one more (refunded). */
  async function pay(op: 'pay' | 'payWrongAmount') {
    const b = target(['HOLD']);
    if (!b) return;
    const event = paymentSucceeded(b.id, op === 'pay' ? b.deposit : b.deposit + 1);
    sentEvents.push(event);
    expectOne(op, await signedWebhook(h, event), ['200']);
    if (op === 'pay' && b.status === 'HOLD') b.status = 'CONFIRMED?';
  }

  /** An event sent before, delivered again. */
  async function payDuplicate() {
    if (!sentEvents.length) return;
    expectOne('payDuplicate', await signedWebhook(h, rnd.pick(sentEvents)), ['200']);
  }

  async function startPay() {
    const b = target(['HOLD']);
    if (!b) return;
    const r = await h.req('GET', `/bookings/${b.id}/pay`, { token: h.token(b.customer, 'customer') });
    expectOne('startPay', r, ['303', '409 INVALID_STATE']);
  }

  async function expire() {
    const b = target(['HOLD']);
    if (!b) return;
    const out = await expireNow(h, b.id);
    // 'leased': another expire op is checking the same pay-requested hold right now; 'handed_over': pay was asked
    // between the check's read and its lock (its payment check, a job, takes over).
    expect(['expired', 'not_hold', 'lost_race', 'not_due', 'leased', 'handed_over']).toContain(out.kind);
    note(`expire ${out.kind}`);
    if (out.kind === 'expired') b.status = 'EXPIRED';
  }

  async function cancel(op: 'cancelCustomer' | 'cancelOperator') {
    const b = target(['HOLD', 'CONFIRMED?', 'CONFIRMED']);
    if (!b) return;
    const token = op === 'cancelCustomer' ? h.token(b.customer, 'customer') : api.operator;
    const r = await h.req('POST', `/bookings/${b.id}/cancel`, { token, body: { reason: 'random' } });
    if (expectOne(op, r, ['200', '409 INVALID_STATE']) === '200') {
      expect(r.json).toMatchObject({ bookingId: b.id, status: 'CANCELLED', currency: 'VND' });
      // Aug 2027 is months away: a customer of a CONFIRMED stay gets everything back, as does an operator's.
      expect([0, b.deposit]).toContain(r.json.refundAmount);
      b.status = 'CANCELLED';
    }
  }

  /** Pickup (CONFIRMED → ON_TRIP) or return (ON_TRIP → COMPLETED) by the operator. */
  async function trip(op: 'pickup' | 'return') {
    const b = target(op === 'pickup' ? ['CONFIRMED?', 'CONFIRMED'] : ['ON_TRIP']);
    if (!b) return;
    const r = await h.req('POST', `/bookings/${b.id}/${op}`, { token: api.operator });
    if (expectOne(op, r, ['200', '409 INVALID_STATE']) === '200') b.status = op === 'pickup' ? 'ON_TRIP' : 'COMPLETED';
  }

  async function customerPickup() {
    const b = target(['CONFIRMED?', 'CONFIRMED']);
    if (!b) return;
    expectOne('customerPickup', await h.req('POST', `/bookings/${b.id}/pickup`, { token: h.token(b.customer, 'customer') }), ['403 FORBIDDEN']);
  }

  /** The operator sets sellable over a few nights, sometimes below what is committed, sometimes creating nights. */
  async function adjust() {
    const rt = rnd.pick(roomTypes);
    const start = rnd.int(0, nights + 1);
    const end = Math.min(nights + 2, start + rnd.int(1, 4));
    const sellable = rnd.next() < 0.3 ? rnd.int(0, 2) : rnd.int(3, 9);
    const r = await api.put(rt.id, addDays(d0, start), addDays(d0, end), sellable, `random ${sellable}`);
    if (expectOne('adjust', r, ['200', '409 INVENTORY_BELOW_COMMITTED']) === '200') {
      expect(r.json.nights).toHaveLength(end - start);
      for (const n of r.json.nights as Night[]) {
        expect(n.sellable).toBe(sellable);
        expect(n.available).toBe(sellable - n.held - n.confirmed);
      }
    }
  }

  const ops: Record<Op, () => Promise<void>> = {
    hold, pay: () => pay('pay'), payDuplicate, payWrongAmount: () => pay('payWrongAmount'), startPay, expire,
    cancelCustomer: () => cancel('cancelCustomer'), cancelOperator: () => cancel('cancelOperator'),
    pickup: () => trip('pickup'), return: () => trip('return'), customerPickup, adjust,
  };

  /** Statuses may have moved in ways a round could not see (a webhook racing a cancel): read them back. */
  async function resync() {
    const { rows } = await h.sql(`SELECT id::int, status FROM booking WHERE room_type_id = ANY($1::bigint[])`, [roomTypes.map((r) => r.id)]);
    const status = new Map(rows.map((r) => [r.id, r.status as string]));
    for (const k of known) k.status = status.get(k.id)!;
  }

  return { ops, outcomes, resync };
}
