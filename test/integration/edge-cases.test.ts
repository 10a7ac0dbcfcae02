import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { inHours, token, waitFor } from '../helpers/http.js';
import { sweepStaleRefunds } from '../../workers/refunds.js';
import { PspClient } from '../../shared/psp/client.js';
import { statusOf } from '../helpers/bookings.js';
import { holdCar, requestPay } from '../helpers/cars.js';
import { expireNow } from '../helpers/expiry.js';
import { sandbox } from '../helpers/sandbox.js';
import { paymentSucceeded, signedWebhook } from '../helpers/webhooks.js';

// Edge cases found by a second reading of the contract.
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ workers: true, env: { HOLD_TTL_S: '1', PAYMENT_GRACE_S: '30' } });
});
afterAll(async () => h?.close());

describe('roles are refused before the input is read', () => {
  it('403 for a host holding, a customer listing a car, a customer picking up, a host paying', async () => {
    const host = h.token(900, 'host'), customer = h.token(77, 'customer');
    expect((await h.req('POST', '/bookings', { token: host, body: { nonsense: true } })).status).toBe(403);
    expect((await h.req('POST', '/cars', { token: customer, body: {} })).status).toBe(403);
    expect((await h.req('POST', '/bookings/abc/pickup', { token: customer })).status).toBe(403);
    expect((await h.req('POST', '/bookings/abc/return', { token: customer })).status).toBe(403);
    expect((await h.req('GET', '/bookings/1/pay', { token: host })).status).toBe(403);
  });

  it('a sub beyond 2^53 is not a valid identity', async () => {
    const t = token(h.config.JWT_SECRET, { sub: '9007199254740993', role: 'customer' });
    expect((await h.req('GET', '/bookings/1', { token: t })).status).toBe(401);
  });
});

describe('validation before the limiter', () => {
  it('a customer at the limit still gets 400 for a past from, not 429', async () => {
    const t = h.token(4242, 'customer');
    for (let i = 0; i < 3; i++) {
      const b = await holdCar(h);
      await h.req('POST', `/bookings/${b.id}/cancel`, { token: b.token });
      const r = await h.req('POST', '/bookings', { token: t, body: { carId: b.carId, from: inHours(300 + i), to: inHours(301 + i) } });
      expect(r.status).toBe(201);
    }
    const past = await h.req('POST', '/bookings', { token: t, body: { carId: 1, from: inHours(-2), to: inHours(1) } });
    expect(past.status).toBe(400);
    const fourth = await h.req('POST', '/bookings', { token: t, body: { carId: 1, from: inHours(400), to: inHours(401) } });
    expect(fourth.status).toBe(429);
  });
});

describe('expiry never hangs on a provider answer', () => {
  it('a succeeded intent with the wrong amount does not keep the hold: refunded, and the hold expires', async () => {
    const b = await holdCar(h, { fromHours: 500 });
    await requestPay(h, b);
    // Besides the deposit intent the customer asked for, the provider holds a succeeded one of another amount.
    const wrong = await sandbox(h).createIntent({ amount: b.deposit - 1, currency: 'VND', reference: String(b.id) });
    await sandbox(h).post(`/intents/${wrong.id}/succeed-silently`);
    expect((await expireNow(h, b.id)).kind).toBe('expired');
    expect(await statusOf(h, b.id)).toBe('EXPIRED');
    const { rows } = await h.sql(`SELECT amount::int FROM refund WHERE booking_id = $1`, [b.id]);
    expect(rows).toEqual([{ amount: b.deposit - 1 }]);
  });

  it('a provider 4xx is not "unreachable": the hold expires', async () => {
    const b = await holdCar(h, { fromHours: 510 });
    await requestPay(h, b);
    const other = { ...h.deps, psp: new PspClient({ baseUrl: h.config.pspUrl, apiKey: 'wrong-key', retries: 0 }) };
    expect((await expireNow(h, b.id, other)).kind).toBe('expired');
  });
});

describe('webhook edge cases', () => {
  it('a zero-amount success for an expired booking is acknowledged (200) and needs no refund', async () => {
    const b = await holdCar(h, { fromHours: 520 });
    await expireNow(h, b.id);
    const r = await signedWebhook(h, paymentSucceeded(b.id, 0));
    expect(r.status).toBe(200);
    const { rows } = await h.sql(`SELECT count(*)::int AS n FROM refund WHERE booking_id = $1`, [b.id]);
    expect(rows[0].n).toBe(0);
  });

  it('a success without providerTxnId is malformed: 400 and nothing written', async () => {
    const b = await holdCar(h, { fromHours: 530 });
    const event = paymentSucceeded(b.id, b.deposit) as { data: Record<string, unknown> };
    delete event.data.providerTxnId;
    const r = await signedWebhook(h, event);
    expect(r.status).toBe(400);
    expect(r.json.error.code).toBe('VALIDATION');
    expect(await statusOf(h, b.id)).toBe('HOLD');
  });

  it('/pay on a booking that is no longer HOLD is 409', async () => {
    const b = await holdCar(h, { fromHours: 540 });
    await h.req('POST', `/bookings/${b.id}/cancel`, { token: b.token });
    const r = await h.req('GET', `/bookings/${b.id}/pay`, { token: b.token });
    expect(r.status).toBe(409);
    expect(r.json.error.code).toBe('INVALID_STATE');
  });
});

describe('refund safety net', () => {
  it('a PENDING refund whose job was lost is re-queued by the sweep and paid', async () => {
    const b = await holdCar(h, { fromHours: 550 });
    await h.req('POST', `/bookings/${b.id}/cancel`, { token: b.token });
    // A refund that exists only in the database: its event was "dispatched" but the job never reached Redis.
    await h.sql(`INSERT INTO refund (booking_id, payment_intent_id, amount, currency, reason, updated_at)
                 VALUES ($1, 'pi_lost', 1234, 'VND', 'test', now() - interval '1 hour')`, [b.id]);
    expect(await sweepStaleRefunds(h.deps, 60)).toBeGreaterThanOrEqual(1);
    await waitFor(async () => (await h.sql(`SELECT status FROM refund WHERE booking_id = $1`, [b.id])).rows[0].status === 'SUCCEEDED', 10_000);
  });
});

describe('operations', () => {
  it('echoes any header-safe X-Request-Id', async () => {
    const r = await h.req('GET', '/health', { headers: { 'x-request-id': 'trace abc/42:x' } });
    expect(r.headers.get('x-request-id')).toBe('trace abc/42:x');
  });
  it('lists no car for a period that starts in the past', async () => {
    await holdCar(h, { fromHours: 560 });
    const r = await h.req('GET', `/cars?city=HN&from=${encodeURIComponent(inHours(-1))}&to=${encodeURIComponent(inHours(2))}`);
    expect(r.status).toBe(200);
    expect(r.json.cars).toEqual([]);
  });
  it('declares path parameters in the OpenAPI document', async () => {
    const r = await h.req('GET', '/openapi.json');
    expect(r.json.paths['/bookings/{id}'].get.parameters).toContainEqual(expect.objectContaining({ name: 'id', in: 'path', required: true }));
  });
});
