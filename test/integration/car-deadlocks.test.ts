import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { hostToken, newCar } from '../helpers/cars.js';
import { newCustomer } from '../helpers/customers.js';
import { inHours, tally } from '../helpers/http.js';
import { paymentSucceeded, signedWebhook } from '../helpers/webhooks.js';
import { expectNoDeadlocks } from '../helpers/stays.js';

// Car holds, confirmations, pickups and changes racing on one car's exclusion constraint: a statement that enters it
// waits for any uncommitted overlapping row, so two such transactions could wait on each other (40P01, a 500 on the
// one-statement hold path). Each takes the car's advisory lock first (shared/db/car-locks.ts): no deadlock, no 5xx.

let h: Harness;
let lastConcurrentAt = 0;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => h?.close());

describe('car holds and confirmations racing on one car', () => {
  it('holds (with and without a key), a confirmation, a pickup and a change at once: no 5xx, PostgreSQL sees no deadlock', async () => {
    const all: { status: number; text: string }[] = [];
    for (let round = 0; round < Number(process.env.ROUNDS ?? 10); round++) {
      const carId = await newCar(h, { turnaroundMinutes: 30 });
      const at = 48 + round * 10;
      const owner = newCustomer(h);
      const first = await h.req('POST', '/bookings', { token: owner.token, body: { carId, from: inHours(at), to: inHours(at + 2) } });
      expect(first.status, first.text).toBe(201);
      const second = await h.req('POST', '/bookings', { token: owner.token, body: { carId, from: inHours(at + 4), to: inHours(at + 6) } });
      expect(second.status, second.text).toBe(201);
      await signedWebhook(h, paymentSucceeded(second.json.bookingId, second.json.depositAmount));
      const racers = Array.from({ length: Number(process.env.RACERS ?? 24) }, (_, i) => {
        const c = newCustomer(h);
        const headers = i % 2 ? { 'idempotency-key': `dl-${round}-${i}` } : undefined;
        const o = i % 3;
        return h.req('POST', '/bookings', { token: c.token, headers, body: { carId, from: inHours(at + o), to: inHours(at + o + 2) } });
      });
      const moves = [
        signedWebhook(h, paymentSucceeded(first.json.bookingId, first.json.depositAmount)),
        h.req('POST', `/bookings/${second.json.bookingId}/pickup`, { token: hostToken(h) }),
        h.req('POST', `/bookings/${second.json.bookingId}/change`, { token: hostToken(h), body: { from: inHours(at + 4), to: inHours(at + 7) } }),
      ];
      const answers = await Promise.all([...racers, ...moves]);
      all.push(...answers);
      lastConcurrentAt = Date.now();
    }
    const five = all.filter((r) => r.status >= 500);
    expect(five.map((r) => r.text), JSON.stringify(tally(all as never))).toEqual([]);
  }, 120_000);

  it('PostgreSQL detected no deadlock while this file ran', async () => expectNoDeadlocks(h, lastConcurrentAt), 20_000);
});
