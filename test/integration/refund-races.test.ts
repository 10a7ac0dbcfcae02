import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { sleep, waitFor } from '../helpers/http.js';
import { holdCar } from '../helpers/cars.js';
import { sandbox } from '../helpers/sandbox.js';
import { paymentSucceeded, signedWebhook } from '../helpers/webhooks.js';
import { runRefundJob } from '../../shared/usecases/refunds.js';
import type { Deps } from '../../shared/usecases/deps.js';

// "The same refund is never paid twice, even when the provider has forgotten an idempotency key" (CONTRACT), when
// two attempts of one refund overlap. A chaos run paid one twice: BullMQ lost a refund job's lock under load and
// handed the job to a second worker while the first was still in its attempt. Here the two attempts are two calls
// of the refund job's use case (as two workers make them), against the real PostgreSQL and sandbox provider, with
// the provider forgetting every refund key right after using it. No workers run: the test alone makes attempts.
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ env: { HOLD_RATE_LIMIT: '1000' } });
});
afterEach(async () => {
  await sandbox(h).resetFaults();
  await sandbox(h).resetRefundFaults();
  await sandbox(h).idle();
});
afterAll(async () => h?.close());

/** The use case's deps with another claim lease (LEASE_S), so a slow provider call can outlast it. */
const withLease = (seconds: number): Deps => ({ ...h.deps, config: { ...h.deps.config, LEASE_S: seconds } });

/** A cancelled hold whose late payment is refunded in full: one PENDING refund row (no worker pays it). */
async function lateRefund() {
  const b = await holdCar(h);
  expect((await h.req('POST', `/bookings/${b.id}/cancel`, { token: b.token, body: {} })).status).toBe(200);
  expect((await signedWebhook(h, paymentSucceeded(b.id, b.deposit))).status).toBe(200);
  const { rows } = await h.sql(`SELECT id::int, job_gen AS gen FROM refund WHERE booking_id = $1`, [b.id]);
  expect(rows).toHaveLength(1);
  return { booking: b, job: { refundId: rows[0].id as number, gen: rows[0].gen as number } };
}

const row = async (id: number) =>
  (await h.sql(`SELECT status, provider_refund_id AS "providerRefundId", lease_until > now() AS leased FROM refund WHERE id = $1`, [id])).rows[0];

/** What the provider paid for the booking, once no request it is still carrying out can add to it. */
async function paidAtProvider(bookingId: number, settleMs: number) {
  await sleep(settleMs);
  await sandbox(h).idle();
  return (await sandbox(h).refundsFor(bookingId)).filter((r) => r.status !== 'failed');
}

describe('a refund whose attempts overlap is paid once', () => {
  it('an attempt whose lease ran out while it waited on the provider does not POST beside the attempt that took over', async () => {
    const deps = withLease(1);
    const { booking, job } = await lateRefund();
    await sandbox(h).setRefundFaults({ forgetKeys: true, silentWebhooks: true, rejectStatus: 401, rejectCount: 1 });
    // Attempt 1: the provider refuses the POST (401, nothing made); the refund stays PENDING.
    expect(await runRefundJob(deps, job)).toMatchObject({ kind: 'retry' });
    // Attempt 2 (A) looks for a refund attempt 1 may have made; the provider holds that lookup past the client's 2 s
    // timeout, so A's lookup takes over 2 s (its retry answers at once), twice its 1 s lease.
    await sandbox(h).post('/faults/answers', { endpoint: 'refunds.list', answer: 'timeout', times: 1, hangMs: 2_500 });
    // The next POST (B's) is slow too: carried out 1.5 s after it arrives, then answered.
    await sandbox(h).post('/faults/answers', { endpoint: 'refunds.create', answer: 'timeout', times: 1, hangMs: 1_500 });
    const a = runRefundJob(deps, job);
    // A's lease runs out (as a lost BullMQ lock hands the job to a second worker, whose claim then succeeds).
    await sleep(300);
    await waitFor(async () => !(await row(job.refundId)).leased, 5_000, 20);
    // B claims the row (A's lease has ended), finds nothing at the provider, and POSTs.
    const b = runRefundJob(deps, job);
    const [outA, outB] = await Promise.all([a, b]);
    const paid = await paidAtProvider(booking.id, 500);
    expect(paid.reduce((sum, r) => sum + r.amount, 0), JSON.stringify({ outA, outB, paid })).toBe(booking.deposit);
    expect(paid).toHaveLength(1);
    expect(await row(job.refundId)).toMatchObject({ status: 'SUCCEEDED', providerRefundId: paid[0]!.id });
    // A found B's claim at its POST and sent nothing (its job waits for B's lease); B's POST paid it.
    expect(outA.log).toContain('POST not sent');
    expect(outB).toMatchObject({ kind: 'done', result: 'SUCCEEDED' });
  }, 30_000);

  it('a POST that timed out is not followed by another until the provider may have carried it out', async () => {
    const deps = withLease(5);
    const { booking, job } = await lateRefund();
    await sandbox(h).setRefundFaults({ forgetKeys: true, silentWebhooks: true });
    // The provider holds the POST 3 s, past the client's 2 s timeout, then creates the refund anyway.
    await sandbox(h).post('/faults/answers', { endpoint: 'refunds.create', answer: 'timeout', times: 1, hangMs: 3_000 });
    const started = Date.now();
    expect(await runRefundJob(deps, job)).toMatchObject({ kind: 'retry' });
    // A second attempt right away (its job retried early, promoted from bull-board, or a duplicate job): the first
    // POST is still being carried out, so nothing the provider lists shows it yet.
    const second = await runRefundJob(deps, job);
    const paid = await paidAtProvider(booking.id, Math.max(0, started + 3_500 - Date.now()));
    expect(paid, JSON.stringify(second)).toHaveLength(1);
    expect(second).toMatchObject({ kind: 'later' });
    // Paid exactly once eventually: the attempt after the first POST's lease finds that POST's refund and adopts it.
    const settled = await waitFor(async () => {
      const o = await runRefundJob(deps, job);
      if (o.kind === 'later') await sleep(Math.max(0, o.at.getTime() - Date.now()));
      return o.kind === 'done' ? o : null;
    }, 15_000, 0);
    expect(settled).toMatchObject({ kind: 'done', result: 'SUCCEEDED' });
    expect(await paidAtProvider(booking.id, 0)).toHaveLength(1);
    expect(await row(job.refundId)).toMatchObject({ status: 'SUCCEEDED', providerRefundId: paid[0]!.id });
  }, 30_000);
});
