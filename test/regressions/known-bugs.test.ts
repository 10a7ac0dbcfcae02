import { Redis } from 'ioredis';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { errors } from '../../api/middleware/errors.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { sleep, waitFor } from '../helpers/http.js';
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
  // LEASE_S 7: the provider's lateness a cancellation waits out after a create's send went unanswered is 2 × LEASE_S
  // plus the client's longest call (14 + 7 s, longer than any hang below); with the default LEASE_S (30 s) the tests of
  // late intents would wait over a minute.
  h = await startHarness({ workers: true, env: { HOLD_RATE_LIMIT: '1000', LEASE_S: '7' } });
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
    // Settled once the create's doubt is past the provider's lateness (2 × LEASE_S = 14 s).
    await waitFor(async () => (await h.sql(`SELECT done_at FROM intent_cancellation WHERE booking_id = $1`, [b.id])).rows[0]?.done_at, 25_000);
    await waitFor(async () => (await sandbox(h).state()).intents.some((i) => i.reference === String(b.id)), 20_000);
    await new Promise((r) => setTimeout(r, 5_000)); // every late create has landed, and a cancellation re-opened would have run
    const intents = (await sandbox(h).state()).intents.filter((i) => i.reference === String(b.id));
    expect(intents.map((i) => i.status).filter((s) => s !== 'canceled')).toEqual([]);
  }, 60_000);

  // invariant intents-cancelled (chaos seeds 387441 and 464122, psp:timeouts with psp:error-answers: "intent … is
  // requires_payment (still payable)" on a booking that left HOLD unpaid). The client retries a POST that timed out
  // with the same Idempotency-Key; when the retry is refused (401), that refusal was taken for "the provider made
  // nothing" and the create written off as answered, while the first attempt, still hanging at the provider, was
  // carried out afterwards. Nothing ever looked for the intent it made. Fixed: a refusal that follows an unanswered
  // attempt leaves the create in doubt (ProviderRejectedError.afterUnanswered), so the cancellation sends it again.
  const intentsOf = async (bookingId: number) =>
    (await sandbox(h).state()).intents.filter((i) => i.reference === String(bookingId)).map((i) => i.status);
  const cancellationDone = (bookingId: number) =>
    waitFor(async () => (await h.sql(`SELECT done_at FROM intent_cancellation WHERE booking_id = $1`, [bookingId])).rows[0]?.done_at, 35_000);
  /** The first attempt of the next intent create hangs `hangMs` (then is carried out); the retry is refused 401. */
  const hangThenRefuse = async (hangMs: number) => {
    await sandbox(h).post('/faults/answers', { endpoint: 'intents.create', answer: 'timeout', times: 1, hangMs });
    await sandbox(h).post('/faults/answers', { endpoint: 'intents.create', answer: 401, times: 1 });
  };

  it("/pay's create times out and its retry is refused: the intent the first attempt makes late is cancelled", async () => {
    const b = await holdCar(h);
    const HANG_MS = 6_000;
    await hangThenRefuse(HANG_MS);
    const sentAt = Date.now();
    const pay = await h.req('GET', `/bookings/${b.id}/pay`, { token: b.token });
    expect(pay.status, pay.text).toBe(503);
    expect((await sandbox(h).faults()).answers).toEqual([]); // both rules fired: the timeout, then the 401
    expect((await h.req('POST', `/bookings/${b.id}/cancel`, { token: b.token, body: {} })).status).toBe(200);
    await cancellationDone(b.id);
    // The hung first attempt lands (HANG_MS after it was sent); a cancellation re-opened by it would run meanwhile.
    await sleep(HANG_MS + 4_000 - (Date.now() - sentAt));
    await waitFor(async () => (await intentsOf(b.id)).length > 0, 5_000);
    await cancellationDone(b.id);
    expect(await intentsOf(b.id)).toEqual(['canceled']);
  }, 60_000);

  it("the cancellation's own replay of a create times out and its retry is refused: the intent it makes late is cancelled", async () => {
    const b = await holdCar(h);
    // A create on record that the provider never answered (the API sent it and died, say): the booking asked to pay.
    await h.sql(`UPDATE booking SET pay_requested_at = now() WHERE id = $1`, [b.id]);
    await h.sql(`INSERT INTO intent_create (booking_id, idempotency_key, amount, currency)
                 SELECT id, $2, deposit_amount, currency FROM booking WHERE id = $1`, [b.id, `deposit-${b.id}`]);
    const HANG_MS = 5_000;
    await hangThenRefuse(HANG_MS);
    const sentAt = Date.now();
    expect((await h.req('POST', `/bookings/${b.id}/cancel`, { token: b.token, body: {} })).status).toBe(200);
    await waitFor(async () => (await sandbox(h).faults()).answers.length === 0, 10_000);
    await sleep(HANG_MS + 4_000 - (Date.now() - sentAt));
    await waitFor(async () => (await intentsOf(b.id)).length > 0, 5_000);
    await cancellationDone(b.id);
    expect(await intentsOf(b.id)).toEqual(['canceled']);
    const { rows } = await h.sql(`SELECT intent_id, answered_at IS NOT NULL AS answered FROM intent_create WHERE booking_id = $1`, [b.id]);
    expect(rows).toEqual([{ intent_id: expect.stringMatching(/^pi_/), answered: true }]);
  }, 60_000);

  // The same, one send apart: /pay's create is in doubt (every attempt hangs), and the cancellation's replay of it is
  // refused on its only attempt. That refusal was taken to answer the create ("nothing made"), while /pay's sends,
  // still hanging at the provider, made the intent afterwards. Fixed: only an intent answers a replayed create.
  it("a replay refused on its only attempt while /pay's create still hangs at the provider: the intent made late is cancelled", async () => {
    const b = await holdCar(h);
    const HANG_MS = 9_000;
    await sandbox(h).post('/faults/answers', { endpoint: 'intents.create', answer: 'timeout', times: 3, hangMs: HANG_MS });
    const sentAt = Date.now();
    const pay = await h.req('GET', `/bookings/${b.id}/pay`, { token: b.token });
    expect(pay.status, pay.text).toBe(503);
    expect((await h.sql(`SELECT answered_at, doubted_at IS NOT NULL AS doubted FROM intent_create WHERE booking_id = $1`, [b.id])).rows)
      .toEqual([{ answered_at: null, doubted: true }]);
    await sandbox(h).post('/faults/answers', { endpoint: 'intents.create', answer: 401, times: 1 });
    expect((await h.req('POST', `/bookings/${b.id}/cancel`, { token: b.token, body: {} })).status).toBe(200);
    await waitFor(async () => (await sandbox(h).faults()).answers.length === 0, 10_000);
    expect(Date.now() - sentAt).toBeLessThan(HANG_MS); // refused before any of /pay's sends landed
    await cancellationDone(b.id);
    await sleep(HANG_MS + 7_000 - (Date.now() - sentAt)); // all three of /pay's sends (the last ~4.3 s in) have landed
    await cancellationDone(b.id);
    expect(await intentsOf(b.id)).toEqual(['canceled']);
  }, 60_000);

  // invariant intents-cancelled (chaos seed 346317: jobs:stall-twice slows the provider to 5 s a call, so /pay's
  // creates time out, and psp:forget-keys follows a few seconds after it ends). /pay's create is in doubt; the
  // booking is cancelled; the cancellation lists the intent the first send made, cancels it, and its replay of the
  // create gets that intent back (the key): settled. Then the provider forgets the key, and /pay's later sends, still
  // hanging at the provider, land: with no key to match they make a new intent, which no one listed again. Fixed: an
  // attempt settles only on a listing made after every send that went unanswered is past the provider's lateness
  // (2 × LEASE_S from its doubt); until then it cancels what it finds and looks again.
  it("/pay's create in doubt, the provider forgets its key, a hung send lands after the cancellation: its new intent is cancelled too", async () => {
    const b = await holdCar(h);
    const HANG_MS = 11_000;
    // /pay's first attempt is carried out soon after it timed out (its key then names the intent it made); the
    // other two hang HANG_MS, and land long after /pay has given up (about 6 s in).
    await sandbox(h).post('/faults/answers', { endpoint: 'intents.create', answer: 'timeout', times: 1, hangMs: 2_500 });
    await sandbox(h).post('/faults/answers', { endpoint: 'intents.create', answer: 'timeout', times: 2, hangMs: HANG_MS });
    const sentAt = Date.now();
    const pay = await h.req('GET', `/bookings/${b.id}/pay`, { token: b.token });
    expect(pay.status, pay.text).toBe(503);
    expect((await sandbox(h).faults()).answers).toEqual([]);
    expect(await intentsOf(b.id)).toEqual(['requires_payment']);
    expect((await h.req('POST', `/bookings/${b.id}/cancel`, { token: b.token, body: {} })).status).toBe(200);
    // The cancellation cancels the intent the first send made, and its replay of the create is answered with it.
    await waitFor(async () => (await h.sql(`SELECT intent_id FROM intent_create WHERE booking_id = $1`, [b.id])).rows[0]?.intent_id, 10_000);
    expect(await intentsOf(b.id)).toEqual(['canceled']);
    expect(Date.now() - sentAt).toBeLessThan(2_000 + HANG_MS); // before the hung sends land (the first left ~2 s in)
    await sandbox(h).post('/idempotency-keys/forget');
    // The two hung sends land (the last ~4.3 s in): the first makes a new intent, the second gets it back.
    await sleep(HANG_MS + 6_000 - (Date.now() - sentAt));
    expect((await intentsOf(b.id)).length).toBe(2);
    await cancellationDone(b.id);
    expect(await intentsOf(b.id)).toEqual(['canceled', 'canceled']);
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
