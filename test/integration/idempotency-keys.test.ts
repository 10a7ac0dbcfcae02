import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { inHours } from '../helpers/http.js';
import { purgeIdempotencyKeys } from '../../shared/usecases/idempotency.js';

let h: Harness;
let carId: number;
beforeAll(async () => {
  h = await startHarness();
  const car = await h.req('POST', '/cars', { token: h.token(1, 'host'), body: { plate: 'IK-1', model: 'M', city: 'IK', dailyPrice: 1, depositAmount: 7 } });
  carId = car.json.id;
});
afterAll(async () => h?.close());

const keys = async () => (await h.sql(`SELECT key FROM idempotency_key ORDER BY key`)).rows.map((r) => r.key);

describe('Idempotency-Key', () => {
  it('purgeIdempotencyKeys deletes keys older than 48 h and keeps the others', async () => {
    for (const [i, key] of ['old', 'recent'].entries()) {
      const r = await h.req('POST', '/bookings', {
        token: h.token(10 + i, 'customer'), body: { carId, from: inHours(30 + i * 5), to: inHours(31 + i * 5) }, headers: { 'idempotency-key': key },
      });
      expect(r.status, r.text).toBe(201);
    }
    await h.sql(`UPDATE idempotency_key SET created_at = now() - interval '49 hours' WHERE key = 'old'`);
    expect(await purgeIdempotencyKeys(h.deps)).toBe(1);
    expect(await keys()).toEqual(['recent']);
  });

});
