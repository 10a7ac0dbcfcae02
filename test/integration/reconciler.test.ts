import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { holdCar } from '../helpers/cars.js';
import { createReconciler } from '../../shared/usecases/reconcile.js';
import { openQueueStore, type QueueStore } from '../../shared/queues/job-store.js';

// The reconciler's passes, run by the test (no workers): the rebuild pages every open row exactly once, one pass
// per kind runs at a time across processes, and an overdue row's job is re-armed (gone or ended) or promoted
// (delayed while its row says due).

let h: Harness;
let store: QueueStore;
beforeAll(async () => {
  h = await startHarness({ env: { HOLD_RATE_LIMIT: '100000' } });
  store = openQueueStore(h.config);
});
afterAll(async () => {
  await store?.close();
  await h?.close();
});

describe('the reconciler', () => {
  // Found by bench:rebuild: the page cursor kept the due time as a Date (ms), so rows of one millisecond whose due
  // times differ in microseconds were read again on the next page (armed twice: harmless adds, wasted work).
  it('a rebuild arms each open row exactly once across pages, due soonest first, and sets the canary', async () => {
    await h.sql(`INSERT INTO car (host_id, plate, model, city, daily_price, deposit_amount, currency, turnaround_minutes)
      SELECT 1, 'RC-' || g, 'M', 'Hanoi', 1, 1, 'VND', 0 FROM generate_series(1, 3) g`);
    await h.sql(`INSERT INTO booking (kind, status, customer_id, car_id, period, deposit_amount, total_amount, currency, hold_expires_at, next_expiry_check_at)
      SELECT 'car', 'HOLD', 7, c.id, tstzrange(now() + make_interval(days => 2, hours => k), now() + make_interval(days => 2, hours => k, mins => 30), '[)'),
             1, 1, 'VND', clock_timestamp() + interval '1 hour', clock_timestamp() + interval '1 hour'
      FROM (SELECT id FROM car WHERE plate LIKE 'RC-%') c, generate_series(1, 800) k`);
    const reconciler = createReconciler(h.deps, store);
    expect(await store.hasCanary('expiry')).toBe(false);
    const r = await reconciler.pass('expiry', 500);
    expect(r.rebuilt).toBe(2400);
    expect((await h.queues.expiry.getJobCounts('delayed')).delayed).toBe(2400);
    expect(await store.hasCanary('expiry')).toBe(true);
    // Next pass: nothing lost, nothing to do.
    expect(await reconciler.pass('expiry', 500)).toMatchObject({ rebuilt: 0, rearmed: { missing: 0, failed: 0 }, promoted: 0 });
  });

  it('one pass per kind at a time: a second reconciler (another process) skips while the first holds the kind', async () => {
    const [a, b] = [createReconciler(h.deps, store), createReconciler(h.deps, store)];
    const [x, y] = await Promise.all([a.pass('refunds', 5000), b.pass('refunds', 5000)]);
    expect([x.skipped, y.skipped].sort()).toEqual([false, true]);
  });

  it('an overdue row whose job is gone or ended gets a new generation; one whose job waits delayed is promoted', async () => {
    const reconciler = createReconciler(h.deps, store);
    await reconciler.pass('refunds', 5000); // the canary: this queue is intact from here on
    const b = await holdCar(h);
    const refund = async () => Number((await h.sql(`INSERT INTO refund (booking_id, payment_intent_id, amount, currency, reason, next_attempt_at)
      VALUES ($1, 'pi_rc', 1, 'VND', 'test', now() - interval '1 minute') RETURNING id`, [b.id])).rows[0].id);
    const [gone, ended, waiting] = [await refund(), await refund(), await refund()];
    const job = (id: number) => ({ kind: 'refunds' as const, bookingId: b.id, refundId: id, gen: 0 });
    expect(await store.enqueue([{ ...job(ended) }, { ...job(waiting), runAt: new Date(Date.now() + 3_600_000) }])).toEqual({ failed: 0 });
    await h.queues.refunds.getJob(`refund-${ended}-g0`).then((j) => j!.moveToFailed(new Error('stalled twice'), '0')).catch(() => {});
    // (moveToFailed needs the lock of an active job: when it is refused, mark the job finished the way BullMQ does.)
    await h.deps.producers!.connection.hset(`${h.config.QUEUE_PREFIX}:{refunds}:refund-${ended}-g0`, 'finishedOn', String(Date.now()));
    const r = await reconciler.pass('refunds', 5000);
    expect(r.rearmed).toEqual({ missing: 1, failed: 1 });
    expect(r.promoted).toBe(1);
    const gens = (await h.sql(`SELECT id::int, job_gen FROM refund WHERE id = ANY($1::bigint[]) ORDER BY id`, [[gone, ended, waiting]])).rows;
    expect(gens.map((g) => g.job_gen)).toEqual([1, 1, 0]);
    for (const id of [gone, ended]) expect(await h.queues.refunds.getJobState(`refund-${id}-g1`)).not.toBe('unknown');
    expect(await h.queues.refunds.getJobState(`refund-${waiting}-g0`)).toBe('waiting');
  });
});
