import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect } from 'vitest';
import { startHarness, type Harness } from './harness.js';
import { inHours } from './http.js';
import { newCustomer } from './customers.js';
import { sandbox } from './sandbox.js';

/** The host that owns the cars tests create. */
export const HOST_ID = 900;
export const hostToken = (h: Harness) => h.token(HOST_ID, 'host');

let carSeq = 0;
/** A fresh car of HOST_ID in city HN (500 000/day), with a unique plate. */
export async function newCar(h: Harness, o: { depositAmount?: number; turnaroundMinutes?: number } = {}): Promise<number> {
  const plate = `P${randomUUID().replace(/-/g, '').slice(0, 8)}-${carSeq++}`;
  const body = { plate, model: 'Morning', city: 'HN', dailyPrice: 500_000, depositAmount: o.depositAmount ?? 2_000_000, turnaroundMinutes: o.turnaroundMinutes };
  const r = await h.req('POST', '/cars', { token: hostToken(h), body });
  expect(r.status, r.text).toBe(201);
  return r.json.id as number;
}

/**
 * A source of distinct future 2-hour periods (one per call, 10 h apart), so holds on one car never
 * collide unless a test wants them to.
 */
export function periods(): () => { from: string; to: string } {
  let slot = 0;
  return () => {
    slot += 1;
    return { from: inHours(24 + slot * 10), to: inHours(26 + slot * 10) };
  };
}

/**
 * For a test file about requests on one car: a harness (no workers, default limits) and one car
 * (deposit 1 500 000) of HOST_ID, handed to `use` once started, closed after the file.
 */
export function withCarHarness(use: (f: { h: Harness; carId: number }) => void): void {
  let h: Harness | undefined;
  beforeAll(async () => {
    h = await startHarness();
    use({ h, carId: await newCar(h, { depositAmount: 1_500_000 }) });
  });
  afterAll(async () => h?.close());
}

export interface Hold {
  id: number;
  carId: number;
  customerId: number;
  /** The owner's bearer token. */
  token: string;
  deposit: number;
  holdExpiresAt: Date;
}

/** A 4-hour HOLD on a fresh car, `fromHours` from now (default 10 days), for a fresh customer. */
export async function holdCar(h: Harness, o: { deposit?: number; fromHours?: number } = {}): Promise<Hold> {
  const carId = await newCar(h, { depositAmount: o.deposit });
  const customer = newCustomer(h);
  const from = o.fromHours ?? 24 * 10;
  const r = await h.req('POST', '/bookings', { token: customer.token, body: { carId, from: inHours(from), to: inHours(from + 4) } });
  expect(r.status, r.text).toBe(201);
  // Its expiry job is added lazily (shared/queues/producer.ts): sent now, so a test can look it up.
  await h.deps.producers?.settle();
  return {
    id: r.json.bookingId, carId, customerId: customer.id, token: customer.token, deposit: r.json.depositAmount,
    holdExpiresAt: new Date(r.json.holdExpiresAt),
  };
}

/** GET /bookings/{id}/pay as the owner: 303 to the checkout; returns the provider's intent id. */
export async function requestPay(h: Harness, b: Hold): Promise<string> {
  const r = await h.req('GET', `/bookings/${b.id}/pay`, { token: b.token });
  expect(r.status, r.text).toBe(303);
  const location = r.headers.get('location')!;
  const intentId = location.split('/').pop()!;
  expect((await sandbox(h).intent(intentId)).reference).toBe(String(b.id));
  return intentId;
}
