import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { sleep, waitFor } from '../helpers/http.js';
import { settledRefunds } from '../helpers/bookings.js';
import { holdCar, type Hold } from '../helpers/cars.js';
import { sandbox } from '../helpers/sandbox.js';
import { paymentSucceeded, signedWebhook } from '../helpers/webhooks.js';

// Issue 8, items 2 and 3: a refund is FAILED only on the provider's word, and it is never paid twice, even when
// the provider lost its answer or forgot the idempotency key.
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ workers: true, env: { HOLD_RATE_LIMIT: '1000' } });
});
afterEach(async () => {
  await sandbox(h).resetFaults();
  await sandbox(h).resetRefundFaults();
  await sandbox(h).idle();
});
afterAll(async () => h?.close());

/** A cancelled hold whose late payment is refunded in full: one refund row, PENDING until the worker pays it. */
async function lateRefund(): Promise<Hold & { intent: string }> {
  const b = await holdCar(h);
  expect((await h.req('POST', `/bookings/${b.id}/cancel`, { token: b.token, body: {} })).status).toBe(200);
  const late = paymentSucceeded(b.id, b.deposit);
  expect((await signedWebhook(h, late)).status).toBe(200);
  return { ...b, intent: late.data.paymentIntentId };
}

const refundRow = async (bookingId: number) =>
  (await h.sql(`SELECT id::int, status, attempts, last_error AS "lastError", provider_refund_id AS "providerRefundId"
                FROM refund WHERE booking_id = $1`, [bookingId])).rows;

describe('refunds under provider faults', () => {
  for (const status of [401, 409, 429, 400]) {
    it(`a ${status} from the provider keeps the refund PENDING and retries it until paid`, async () => {
      await sandbox(h).setRefundFaults({ rejectStatus: status, rejectCount: 2 });
      const b = await lateRefund();
      await waitFor(async () => ((await refundRow(b.id))[0]?.attempts ?? 0) >= 1);
      expect((await refundRow(b.id))[0]).toMatchObject({ status: 'PENDING' });
      const [refund] = await settledRefunds(h, b.id, 20_000);
      expect(refund!.status).toBe('SUCCEEDED');
      expect((await refundRow(b.id))[0]!.attempts).toBeGreaterThanOrEqual(3);
      expect(await sandbox(h).refundsFor(b.id)).toHaveLength(1);
    });
  }

  it('an answer lost after the provider created the refund, keys forgotten: exactly one provider refund', async () => {
    await sandbox(h).setRefundFaults({ loseAnswers: 3, forgetKeys: true, silentWebhooks: true });
    const b = await lateRefund();
    const [refund] = await settledRefunds(h, b.id, 20_000);
    await sleep(1_500); // a worker that POSTs again would do it within the first backoff
    const atProvider = await sandbox(h).refundsFor(b.id);
    expect(atProvider).toHaveLength(1);
    expect(refund!.status).toBe('SUCCEEDED');
    expect((await refundRow(b.id))[0]!.providerRefundId).toBe(atProvider[0]!.id);
  });

  it('a refund still pending at the provider is looked up, not created again, once its key is forgotten', async () => {
    await sandbox(h).setFaults({ refundOutcome: 'pending', refundSettleMs: 3_000 });
    await sandbox(h).setRefundFaults({ forgetKeys: true, silentWebhooks: true });
    const b = await lateRefund();
    const [refund] = await settledRefunds(h, b.id, 20_000);
    expect(refund!.status).toBe('SUCCEEDED');
    expect(await sandbox(h).refundsFor(b.id)).toHaveLength(1);
  });

  // Review finding: the read API is not in the contract; a provider without it answered 404 to every lookup and the
  // refund, once its first POST had failed, was never POSTed again (PENDING for ever).
  it('a provider without the refund read API (404): the refund is still paid, by the POST with its key', async () => {
    await sandbox(h).post('/faults/answers', { endpoint: 'refunds.list', answer: 404, rate: 1 });
    await sandbox(h).post('/faults/answers', { endpoint: 'refunds.get', answer: 404, rate: 1 });
    await sandbox(h).setFaults({ refundOutcome: 'pending', refundSettleMs: 500 });
    await sandbox(h).setRefundFaults({ rejectStatus: 429, rejectCount: 1 });
    const b = await lateRefund();
    const [refund] = await settledRefunds(h, b.id, 20_000);
    expect(refund!.status).toBe('SUCCEEDED');
    expect(await sandbox(h).refundsFor(b.id)).toHaveLength(1);
  });

  it('FAILED only when the provider says failed, and then once', async () => {
    await sandbox(h).setRefundFaults({ rejectStatus: 429, rejectCount: 1 });
    await sandbox(h).setFaults({ refundOutcome: 'failed' });
    const b = await lateRefund();
    const [refund] = await settledRefunds(h, b.id, 20_000);
    expect(refund!.status).toBe('FAILED');
    expect(await sandbox(h).refundsFor(b.id)).toEqual([expect.objectContaining({ status: 'failed' })]);
  });
});
