import { Redis } from 'ioredis';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { errors } from '../../api/middleware/errors.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { waitFor } from '../helpers/http.js';
import { statusOf } from '../helpers/bookings.js';
import { holdCar, requestPay, type Hold } from '../helpers/cars.js';
import { expireNow, makeDue } from '../helpers/expiry.js';
import { sandbox } from '../helpers/sandbox.js';

// Violations `npm run chaos` / `npm run check:invariants` found on main before issue 8's fixes were merged, each
// reproduced deterministically. They were `it.fails` on that main (each body failed: seen) and are plain `it` since
// the fixes of the expiry, refunds and input helpers were merged into this branch; the last one (a socket error →
// 500) is fixed here. A bug found later goes here as `it.fails` (and its invariant into test/chaos/known.ts) until fixed.

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ workers: true, env: { HOLD_RATE_LIMIT: '1000' } });
});
afterAll(async () => h?.close());

async function confirmed(): Promise<Hold & { intentId: string }> {
  const b = await holdCar(h);
  const intentId = await requestPay(h, b);
  await sandbox(h).post(`/intents/${intentId}/succeed`);
  await waitFor(async () => (await statusOf(h, b.id)) === 'CONFIRMED');
  return { ...b, intentId };
}
const refundOf = async (bookingId: number) =>
  (await h.sql(`SELECT id::int, status, attempts, last_error FROM refund WHERE booking_id = $1 ORDER BY id DESC LIMIT 1`, [bookingId])).rows[0];

describe('bugs found by check:invariants / chaos (issue 8)', () => {
  // invariant intents-cancelled (chaos: every seed tried). Issue 8 item 4.
  it('an expired hold leaves no payment intent payable', async () => {
    const b = await holdCar(h);
    const intentId = await requestPay(h, b);
    // The harness's expiry loop may take the due hold before this test's own check does: either expires it.
    await expireNow(h, b.id).catch(() => undefined);
    await waitFor(async () => (await statusOf(h, b.id)) === 'EXPIRED', 8_000);
    await waitFor(async () => (await sandbox(h).intent(intentId)).status === 'canceled', 8_000);
  }, 20_000);

  // invariant intents-cancelled (chaos seeds 900010 and 731412, psp:timeouts): /pay's intent create times out (503)
  // and the provider carries it out later, after the booking has left HOLD and its intent cancellation, which listed
  // no intent yet, has settled: the late intent stayed payable. (Money was safe: a success on it lost the race and
  // was refunded.) Fixed: /pay records a create the provider never answered, and the cancellation sends it again
  // with the same Idempotency-Key and cancels the intent it gets (migration 025).
  it('an intent created late by a /pay that timed out is cancelled too', async () => {
    const b = await holdCar(h);
    await sandbox(h).post('/faults/answers', { endpoint: 'intents.create', answer: 'timeout', times: 3, hangMs: 12_000 });
    const pay = await h.req('GET', `/bookings/${b.id}/pay`, { token: b.token });
    expect(pay.status, pay.text).toBe(503);
    expect((await h.req('POST', `/bookings/${b.id}/cancel`, { token: b.token, body: {} })).status).toBe(200);
    await waitFor(async () => (await h.sql(`SELECT done_at FROM intent_cancellation WHERE booking_id = $1`, [b.id])).rows[0]?.done_at, 15_000);
    await waitFor(async () => (await sandbox(h).state()).intents.some((i) => i.reference === String(b.id)), 20_000);
    await new Promise((r) => setTimeout(r, 5_000)); // every late create has landed, and a cancellation re-opened would have run
    const intents = (await sandbox(h).state()).intents.filter((i) => i.reference === String(b.id));
    expect(intents.map((i) => i.status).filter((s) => s !== 'canceled')).toEqual([]);
  }, 60_000);

  // invariant holds-expire (chaos seed 8: FLUSHALL / Redis restart with holds queued). Issue 8 item 1.
  it('Redis loses its data: a queued hold still expires', async () => {
    const b = await holdCar(h);
    const redis = new Redis(h.config.REDIS_URL);
    try {
      // What FLUSHALL does to this harness (the shared Redis is never flushed): every key of its prefixes goes. The
      // loss must hit what the harness's workers use: they are connected to this Redis and the hold's job is there.
      const jobKey = `${h.config.QUEUE_PREFIX}:{expiry}:expire-${b.id}-g0`;
      expect(await redis.exists(jobKey)).toBe(1);
      expect(h.deps.producers?.ready()).toBe(true);
      expect(h.work?.workers.every((w) => w.isRunning())).toBe(true);
      const keys = [...await redis.keys(`${h.config.QUEUE_PREFIX}:*`), ...await redis.keys(`${h.config.REDIS_KEY_PREFIX}*`)];
      expect(keys.length).toBeGreaterThan(5);
      await redis.del(...keys);
      expect(await redis.exists(jobKey)).toBe(0);
    } finally {
      redis.disconnect();
    }
    await makeDue(h, b.id);
    await waitFor(async () => (await statusOf(h, b.id)) === 'EXPIRED', 8_000);
  }, 20_000);

  // invariant refunds-settled (FAILED without the provider's word). Issue 8 item 2, with the sandbox's answer knob.
  it('a refund answered 429 once is not FAILED for good', async () => {
    const b = await confirmed();
    const since = Date.now();
    await sandbox(h).post('/faults/answers', { endpoint: 'refunds.create', answer: 429, times: 1 });
    const r = await h.req('POST', `/bookings/${b.id}/cancel`, { token: h.token(1, 'operator'), body: {} });
    expect(r.status, r.text).toBe(200);
    // The fault fired: the provider used up its one 429, and the refund saw it (a second attempt, or the 429 as its last error).
    await waitFor(async () => (await sandbox(h).faults()).answers.length === 0, 8_000);
    await waitFor(async () => {
      const refund = await refundOf(b.id);
      return refund?.attempts >= 2 || /429/.test(refund?.last_error ?? '');
    }, 8_000);
    // Then it settles as paid, never FAILED: the provider's 429 is no word on the refund.
    await waitFor(async () => (await refundOf(b.id))?.status !== 'PENDING', 8_000);
    expect((await refundOf(b.id)).status).toBe('SUCCEEDED');
    expect(await sandbox(h).refundsFor(b.id)).toHaveLength(1);
    expect((await sandbox(h).state()).calls.filter((c) => c.endpoint === 'refunds.create' && c.at >= since).length).toBe(2);
  }, 30_000);

  // invariant refunds-settled (provider cross-check: an intent refunded more than paid), issue 8 item 3: a PENDING
  // refund POSTed again after the provider forgot its key was paid twice. Fixed on main by the refunds helper (look
  // the refund up before creating it again); its regression is test/integration/refund-faults.test.ts.

  // chaos's 5xx count (old main, seed 8: a 500 on POST /bookings/{id}/cancel under pg_terminate_backend; the log
  // said "read ECONNRESET" from the pg socket). Contract: a dependency down is 503 UNAVAILABLE. The error middleware
  // mapped slonik's connection errors and ECONNREFUSED, but a raw ECONNRESET (or EPIPE) fell through to 500.
  // (Terminating the harness's connections in-process did not reproduce the reset; the middleware is tested here
  // with the error the log showed, behind a real HTTP server.)
  it.each(['ECONNRESET', 'EPIPE'])('a PostgreSQL socket error %s mid-request answers 503 UNAVAILABLE, not 500', async (code) => {
    const app = new Koa();
    app.use(errors);
    app.use(() => {
      throw Object.assign(new Error(`read ${code}`), { code, syscall: 'read' });
    });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    try {
      const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/bookings/1/cancel`, { method: 'POST' });
      expect(res.status).toBe(503);
      expect((await res.json()).error.code).toBe('UNAVAILABLE');
    } finally {
      server.close();
    }
  });

  // invariant notifications-once (chaos seed 8: a notification sent twice when its transaction failed after the
  // send, under pg_terminate_backend). Fixed on main by the refunds/notifications helper (a lease per row and the
  // same Idempotency-Key on every attempt); its regression is in test/integration/notifications.test.ts.
});
