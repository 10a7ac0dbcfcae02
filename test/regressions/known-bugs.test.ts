import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { sleep, waitFor } from '../helpers/http.js';
import { statusOf } from '../helpers/bookings.js';
import { holdCar, requestPay, type Hold } from '../helpers/cars.js';
import { expireNow, makeDue } from '../helpers/expiry.js';
import { sandbox } from '../helpers/sandbox.js';

// Violations `npm run chaos` / `npm run check:invariants` found on main (issue 8), each reproduced deterministically.
// They are `it.fails` while the bug is there (the test body asserts the correct behaviour, so it fails and the
// `fails` turns that into a pass); whoever merges the fix switches `it.fails` to `it` (an `it.fails` whose body
// passes fails the run, so a fixed bug cannot go unnoticed) and removes the invariant from test/chaos/known.ts.

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
  (await h.sql(`SELECT id::int, status, last_error FROM refund WHERE booking_id = $1 ORDER BY id DESC LIMIT 1`, [bookingId])).rows[0];

describe('known bugs (issue 8), found by check:invariants / chaos', () => {
  // invariant intents-cancelled (chaos: every seed tried). Issue 8 item 4.
  it('an expired hold leaves no payment intent payable', async () => {
    const b = await holdCar(h);
    const intentId = await requestPay(h, b);
    expect((await expireNow(h, b.id)).kind).toBe('expired');
    await waitFor(async () => (await sandbox(h).intent(intentId)).status === 'canceled', 8_000);
  }, 20_000);

  // invariant holds-expire (chaos seed 8: FLUSHALL / Redis restart with holds queued). Issue 8 item 1.
  it('Redis loses its data: a queued hold still expires', async () => {
    const b = await holdCar(h);
    // The pump has turned booking.held into its delayed expiry job: that job and the sweep's scheduler live in Redis.
    await waitFor(async () => (await h.sql(`SELECT 1 FROM outbox WHERE message_key = $1 AND dispatched_at IS NULL`, [String(b.id)])).rowCount === 0);
    const redis = new Redis(h.config.REDIS_URL);
    try {
      // What FLUSHALL does to this harness (the shared Redis is never flushed): every key of its prefixes goes.
      for (const pattern of [`${h.config.QUEUE_PREFIX}:*`, `${h.config.REDIS_KEY_PREFIX}*`]) {
        const keys = await redis.keys(pattern);
        if (keys.length) await redis.del(...keys);
      }
    } finally {
      redis.disconnect();
    }
    await makeDue(h, b.id);
    await waitFor(async () => (await statusOf(h, b.id)) === 'EXPIRED', 8_000);
  }, 20_000);

  // invariant refunds-settled (FAILED without the provider's word). Issue 8 item 2, with the sandbox's answer knob.
  it('a refund answered 429 once is not FAILED for good', async () => {
    const b = await confirmed();
    await sandbox(h).post('/faults/answers', { endpoint: 'refunds.create', answer: 429, times: 1 });
    const r = await h.req('POST', `/bookings/${b.id}/cancel`, { token: h.token(1, 'operator'), body: {} });
    expect(r.status, r.text).toBe(200);
    await waitFor(async () => (await refundOf(b.id))?.last_error || (await refundOf(b.id))?.status !== 'PENDING', 8_000);
    await sleep(300);
    expect((await refundOf(b.id)).status).not.toBe('FAILED');
  }, 30_000);

  // invariant refunds-settled (provider cross-check: an intent refunded more than paid), issue 8 item 3: a PENDING
  // refund POSTed again after the provider forgot its key was paid twice. Fixed on main by the refunds helper (look
  // the refund up before creating it again); its regression is test/integration/refund-faults.test.ts.

  // chaos's 5xx count (seed 8: a 500 on POST /bookings/{id}/cancel under pg_terminate_backend, the log says
  // "read ECONNRESET" from pg). Contract: a dependency down is 503 UNAVAILABLE; api/middleware/errors.ts maps
  // slonik's connection errors and ECONNREFUSED, but a raw ECONNRESET from the pg socket falls through to 500.
  // Skipped: this in-process attempt (terminating every pooled connection between bursts) does NOT reproduce it —
  // it passes on main; the chaos run does (a reset while a query is in flight on the multi-process topology).
  // Kept as the place for a deterministic reproduction; the fix is one more case in `isUnavailable`.
  it.skip('PostgreSQL connections reset under the API answer 503, never 500', async () => {
    const b = await holdCar(h);
    const admin = new pg.Client({ connectionString: h.config.DATABASE_URL });
    await admin.connect();
    const statuses: number[] = [];
    try {
      for (let round = 0; round < 10; round++) {
        // Every connection busy once, so the pools hold many; then all of them terminated at once.
        await Promise.all(Array.from({ length: 12 }, () => h.req('GET', `/bookings/${b.id}`, { token: b.token })));
        await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`);
        const rs = await Promise.all(Array.from({ length: 12 }, () => h.req('GET', `/bookings/${b.id}`, { token: b.token })));
        statuses.push(...rs.map((r) => r.status));
      }
    } finally {
      await admin.end();
    }
    expect(statuses.filter((s) => s >= 500 && s !== 503)).toEqual([]);
  }, 60_000);

  // invariant notifications-once (chaos seed 8: a notification sent twice when its transaction failed after the
  // send, under pg_terminate_backend). Fixed on main by the refunds/notifications helper (a lease per row and the
  // same Idempotency-Key on every attempt); its regression is in test/integration/notifications.test.ts.
});
