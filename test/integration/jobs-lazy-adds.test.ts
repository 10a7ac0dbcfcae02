import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { newCar } from '../helpers/cars.js';
import { newCustomer } from '../helpers/customers.js';
import { inHours } from '../helpers/http.js';
import { openProducers, DEFER_AHEAD_MS } from '../../shared/queues/producer.js';
import { jobsEnqueueFailed } from '../../shared/metrics/work.js';
import { waitFor } from '../helpers/http.js';

/** jobs_enqueue_failed_total{queue="expiry"} of this process. */
const failedAdds = async () => (await jobsEnqueueFailed.get()).values.find((v) => v.labels.queue === 'expiry')?.value ?? 0;

// A job due minutes ahead (a hold's expiry) is added without the caller waiting for it: the answer does not wait
// for Redis, the add leaves with its kind's next batch, and nothing is lost by it while the process lives (an add
// that fails is counted and added again) or when it stops (close() waits for it).

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

describe('lazy job adds', () => {
  it('holds are answered while their expiry adds are held up; the adds then arrive, at most two batches, each job delayed to its hold\'s expiry', async () => {
    const expiry = h.deps.producers!.queues.expiry;
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const sends: number[] = [];
    const { add, addBulk } = expiry;
    expiry.add = (async (...args: Parameters<typeof add>) => {
      sends.push(1);
      await gate;
      return add.apply(expiry, args);
    }) as typeof add;
    expiry.addBulk = (async (jobs: Parameters<typeof addBulk>[0]) => {
      sends.push(jobs.length);
      await gate;
      return addBulk.call(expiry, jobs);
    }) as typeof addBulk;
    try {
      const cars = await Promise.all(Array.from({ length: 6 }, () => newCar(h)));
      const held = await Promise.all(cars.map(async (carId) => {
        const r = await h.req('POST', '/bookings', { token: newCustomer(h).token, body: { carId, from: inHours(240), to: inHours(244) } });
        expect(r.status, r.text).toBe(201);
        return { id: r.json.bookingId as number, expiresAt: new Date(r.json.holdExpiresAt).getTime() };
      }));
      // Every hold answered, and not one of their jobs in Redis yet.
      for (const b of held) expect(await h.queues.expiry.getJob(`expire-${b.id}-g0`)).toBeUndefined();
      open();
      await h.deps.producers!.settle();
      // The first batch left before the rest came; all that came meanwhile waited behind it as one.
      expect(sends.length).toBeLessThanOrEqual(2);
      expect(sends.reduce((a, b) => a + b, 0)).toBe(6);
      for (const b of held) {
        const job = (await h.queues.expiry.getJob(`expire-${b.id}-g0`))!;
        expect(await job.getState()).toBe('delayed');
        expect(Math.abs(job.timestamp + job.delay - b.expiresAt)).toBeLessThan(1_000);
      }
    } finally {
      open();
      expiry.add = add;
      expiry.addBulk = addBulk;
    }
  });

  it('an add nobody waited for that fails is counted and added again once Redis answers', async () => {
    const expiry = h.deps.producers!.queues.expiry;
    const { add, addBulk } = expiry;
    let refused = 0;
    const refuse = () => {
      refused++;
      return Promise.reject(new Error('Redis said no'));
    };
    expiry.add = ((...args: Parameters<typeof add>) => (refused === 0 ? refuse() : add.apply(expiry, args))) as typeof add;
    expiry.addBulk = ((jobs: Parameters<typeof addBulk>[0]) => (refused === 0 ? refuse() : addBulk.call(expiry, jobs))) as typeof addBulk;
    try {
      const failedBefore = await failedAdds();
      const carId = await newCar(h);
      const r = await h.req('POST', '/bookings', { token: newCustomer(h).token, body: { carId, from: inHours(250), to: inHours(254) } });
      expect(r.status, r.text).toBe(201);
      const id = `expire-${r.json.bookingId}-g0`;
      await waitFor(async () => (await h.queues.expiry.getJobState(id)) === 'delayed', 10_000, 50);
      expect(refused).toBe(1);
      expect(await failedAdds()).toBe(failedBefore + 1);
      const job = (await h.queues.expiry.getJob(id))!;
      expect(Math.abs(job.timestamp + job.delay - new Date(r.json.holdExpiresAt).getTime())).toBeLessThan(1_000);
    } finally {
      expiry.add = add;
      expiry.addBulk = addBulk;
    }
  });

  it('a process that stops sends the adds it did not wait for before it closes; a job due soon is added before the caller goes on', async () => {
    const producers = openProducers(h.config);
    await new Promise<void>((resolve) => producers.connection.once('ready', () => resolve()));
    const later = { kind: 'expiry' as const, bookingId: 910_001, gen: 0, runAt: new Date(Date.now() + 15 * 60_000) };
    const soon = { kind: 'expiry' as const, bookingId: 910_002, gen: 0, runAt: new Date(Date.now() + DEFER_AHEAD_MS / 2) };
    expect(await producers.enqueue([later, soon])).toEqual({ failed: 0 });
    expect(await h.queues.expiry.getJob('expire-910002-g0')).toBeTruthy();
    await producers.close();
    expect(await h.queues.expiry.getJobState('expire-910001-g0')).toBe('delayed');
  });
});
