import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { waitFor } from '../helpers/http.js';
import { holdCar, requestPay } from '../helpers/cars.js';
import { makeDue } from '../helpers/expiry.js';
import { signedWebhook } from '../helpers/webhooks.js';

// What the api's /metrics shows after real work: the api's own metrics, the work of the workers running
// in this process (due loops, expiry lag, provider calls), and the gauges read from PostgreSQL.

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ workers: true, env: { HOLD_RATE_LIMIT: '100' } });
});
afterAll(async () => h?.close());

const scrape = async () => (await h.req('GET', '/metrics')).text;

/** The value of one sample (`name{labels}`), labels in any order; null when absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | null {
  for (const line of text.split('\n')) {
    const m = line.match(/^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[3]);
  }
  return null;
}

describe('/metrics after real work', () => {
  it('counts provider calls, webhooks, jobs, expiry lag and holds; HTTP buckets reach 10 s', async () => {
    const paid = await holdCar(h);
    await requestPay(h, paid);
    const processing = { id: `evt_m_${Date.now()}`, type: 'payment_intent.processing', created: Math.floor(Date.now() / 1000),
      data: { paymentIntentId: 'pi_m', reference: String(paid.id), amount: 1, currency: 'VND', providerTxnId: null } };
    expect((await signedWebhook(h, processing)).status).toBe(200);
    expect((await signedWebhook(h, processing, { signature: 't=1,v1=00' })).status).toBe(401);

    const unpaid = await holdCar(h);
    await makeDue(h, unpaid.id); // the expiry loop finds it
    await waitFor(async () => ((await h.sql('SELECT status FROM booking WHERE id = $1', [unpaid.id])).rows[0].status === 'EXPIRED'), 15_000);

    const text = await waitFor(async () => {
      const t = await scrape();
      return (sample(t, 'expiry_lag_seconds_count', { pay_requested: 'false' }) ?? 0) >= 1 ? t : null;
    }, 10_000);
    expect(sample(text, 'psp_request_duration_seconds_count', { operation: 'POST /v1/payment_intents', outcome: 'ok' })).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'webhooks_total', { type: 'payment_intent.processing', outcome: 'ignored' })).toBe(1);
    expect(sample(text, 'webhooks_total', { type: 'unverified', outcome: 'invalid_signature' })).toBe(1);
    // The expiry is no job (issue 8: a PostgreSQL loop); the notifications of booking.expired are timed as jobs by their due loop.
    await waitFor(async () => (sample(await scrape(), 'job_duration_seconds_count', { queue: 'notifications', name: 'notify', outcome: 'completed' }) ?? 0) >= 1, 10_000);
    expect(sample(text, 'bookings_total', { kind: 'car', outcome: 'held' })).toBeGreaterThanOrEqual(2);
    expect(sample(text, 'http_request_duration_seconds_bucket', { route: '/bookings/:id/pay', le: '10' })).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'psp_request_duration_seconds_bucket', { operation: 'POST /v1/payment_intents', le: '10' })).toBeGreaterThanOrEqual(1);
  });

  it('reads the outbox backlog and pending refunds from the database, in honest units', async () => {
    const b = await holdCar(h);
    await h.sql(`INSERT INTO refund (booking_id, payment_intent_id, amount, currency, reason, created_at)
      VALUES ($1, 'pi_old', 5, 'VND', 'metrics test', now() - interval '2 hours'), ($1, 'pi_new', 5, 'VND', 'metrics test', now())`, [b.id]);
    await h.sql(`UPDATE outbox SET created_at = now() - interval '90 seconds' WHERE message_key = $1`, [String(b.id)]);
    await h.sql(`INSERT INTO notification (event_id, channel, booking_id, event_type, recipient, body, created_at, sent_at)
      VALUES (gen_random_uuid(), 'sms', $1, 'booking.cancelled', 1, 'metrics test', now() - interval '2 hours', NULL)`, [b.id]);
    const text = await scrape();
    // No pump runs here: every event waits for Kafka, the oldest for at least 90 s.
    expect(sample(text, 'outbox_unpublished_events')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'outbox_oldest_unpublished_age_seconds')).toBeGreaterThanOrEqual(90);
    expect(sample(text, 'refunds_pending')).toBe(2);
    expect(sample(text, 'refunds_pending_over_1h')).toBe(1);
    expect(sample(text, 'refunds_pending_oldest_age_seconds')).toBeGreaterThanOrEqual(7200);
    expect(sample(text, 'refunds_pending_oldest_age_seconds')).toBeLessThan(7300);
    expect(sample(text, 'notifications_unsent')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'notifications_unsent_oldest_age_seconds')).toBeGreaterThanOrEqual(7200);
    for (const state of ['waiting', 'active', 'delayed', 'failed']) expect(sample(text, 'queue_depth', { queue: 'maintenance', state }), state).not.toBeNull();
  });
});
