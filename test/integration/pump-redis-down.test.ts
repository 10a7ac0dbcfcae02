import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../shared/config.js';
import { requestRedis } from '../../shared/runtime.js';
import { pumpOnce } from '../../workers/pump-pass.js';
import { openQueues } from '../../shared/queues/queues.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { inHours } from '../helpers/http.js';

// Publishing waits on rows a dispatch pass holds (per-booking order), so the pump's dispatch lane must never
// keep outbox rows locked across a Redis outage.
let h: Harness;
beforeAll(async () => {
  h = await startHarness();
  const car = await h.req('POST', '/cars', { token: h.token(1, 'host'), body: { plate: 'RD', model: 'M', city: 'X', dailyPrice: 1, depositAmount: 1 } });
  const r = await h.req('POST', '/bookings', { token: h.token(2, 'customer'), body: { carId: car.json.id, from: inHours(30), to: inHours(31) } });
  expect(r.status).toBe(201);
  // booking.held asks for no job (expiry is a PostgreSQL loop); booking.cancelled asks for its notifications.
  expect((await h.req('POST', `/bookings/${r.json.bookingId}/cancel`, { token: h.token(2, 'customer'), body: {} })).status).toBe(200);
});
afterAll(async () => h?.close());

const rowLockable = async () => {
  const c = await h.sql('BEGIN; SELECT id FROM outbox FOR UPDATE NOWAIT; ROLLBACK;').then(() => true, () => false);
  return c;
};

describe('the outbox pump\'s dispatch lane during a Redis outage', () => {
  const dead = parseConfig({ REDIS_URL: 'redis://127.0.0.1:1/0', QUEUE_PREFIX: `dead${Date.now()}` });

  it('fails fast before locking anything when Redis does not answer', async () => {
    const probe = requestRedis(dead.REDIS_URL);
    probe.on('error', () => {});
    const queues = openQueues(dead);
    for (const q of Object.values(queues)) q.on('error', () => {});
    const t0 = Date.now();
    await expect(pumpOnce(h.deps.prepared, { jobs: { queues, alive: () => probe.ping() } })).rejects.toThrow();
    expect(Date.now() - t0).toBeLessThan(3_000);
    expect(await rowLockable()).toBe(true);
    probe.disconnect();
    await Promise.all(Object.values(queues).map((q) => q.close().catch(() => {})));
  });

  it('gives the rows back when enqueueing hangs (Redis gone after the check)', async () => {
    const queues = openQueues(dead);
    for (const q of Object.values(queues)) q.on('error', () => {});
    const t0 = Date.now();
    await expect(pumpOnce(h.deps.prepared, { jobs: { queues, alive: async () => 'PONG' } })).rejects.toThrow(/enqueue/);
    expect(Date.now() - t0).toBeLessThan(8_000);
    expect(await rowLockable()).toBe(true);
    const { rows } = await h.sql('SELECT count(*)::int AS n FROM outbox WHERE dispatched_at IS NULL');
    expect(rows[0].n).toBeGreaterThan(0);
    await Promise.all(Object.values(queues).map((q) => q.close().catch(() => {})));
  });
});
