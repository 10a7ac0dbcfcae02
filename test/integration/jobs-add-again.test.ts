import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { holdCar } from '../helpers/cars.js';
import { waitFor } from '../helpers/http.js';
import { privateRedis, type PrivateRedis } from '../helpers/worker-processes.js';

// A job add that fails right after the commit (Redis down, or a timeout under load) is added again by the process
// that committed, once Redis answers: the hold's expiry job is in Redis within seconds of Redis coming back, long
// before the hold is due (the reconciler would arm it only once overdue). No worker and no reconciler run here, so
// the job can only come from the API's own second add.

let redis: PrivateRedis;
let h: Harness;
beforeAll(async () => {
  redis = await privateRedis();
  h = await startHarness({ env: { REDIS_URL: redis.url } });
});
afterAll(async () => {
  await h?.close();
  redis?.client.disconnect();
  await redis?.stop();
});

describe('a job add that failed after the commit', () => {
  it('is added again once Redis is back: the hold answers 201 meanwhile, and its expiry job appears, delayed to its due time', async () => {
    await redis.stop();
    await waitFor(async () => !h.deps.producers!.ready(), 5_000, 20);
    const held = await Promise.all([holdCar(h), holdCar(h)]);
    await redis.start();
    for (const b of held) {
      const id = `expire-${b.id}-g0`;
      await waitFor(async () => (await h.queues.expiry.getJobState(id)) === 'delayed', 10_000, 50);
      const job = (await h.queues.expiry.getJob(id))!;
      // Due at the hold's expiry, counted from the second add: not run early, not lost.
      expect(job.timestamp + job.delay).toBeGreaterThanOrEqual(b.holdExpiresAt.getTime() - 1_000);
      expect(job.timestamp + job.delay).toBeLessThanOrEqual(b.holdExpiresAt.getTime() + 1_000);
    }
  });
});
