import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { sleep, waitFor } from '../helpers/http.js';
import { settledRefunds, statusOf } from '../helpers/bookings.js';
import { holdCar, requestPay } from '../helpers/cars.js';
import { sandbox } from '../helpers/sandbox.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { startWork, type RunningWork } from '../../workers/lib/worker-process.js';
import { workerRestarts } from '../../shared/metrics/work.js';
import { watchWorker, WorkerActivity } from '../../workers/lib/worker-watchdog.js';

// A BullMQ worker that stays up but takes no job while its queue fills (seen after a Redis Cluster failover) is
// replaced by the watchdog (workers/lib/worker-watchdog.ts). The worker here reaches Redis through a proxy that
// freezes its connections: bytes stop, no socket closes, so neither ioredis nor BullMQ notices. The API adds the
// jobs on its own connection, and the watchdog reads the queue on the process's producer connection (direct).

const WATCHDOG = { checkMs: 250, stallMs: 2_000 };
let h: Harness;
let proxy: TcpProxy;
let work: RunningWork | null = null;

beforeAll(async () => {
  h = await startHarness({ env: { HOLD_RATE_LIMIT: '1000' } });
  proxy = await startTcpProxy({ host: '127.0.0.1', port: 6379 });
});
afterAll(async () => {
  await work?.stop();
  await proxy?.close();
  await h?.close();
});

/** The refunds process's work, its Redis through the proxy. */
function startRefundsWork(): RunningWork {
  const url = new URL(h.config.REDIS_URL);
  url.port = String(proxy.port);
  work = startWork({ ...h.deps, config: { ...h.config, REDIS_URL: url.toString() } }, ['refunds'], WATCHDOG);
  return work;
}

/** A confirmed booking cancelled by an operator: one refund owed, its job added by the API. */
async function refundOwed(): Promise<number> {
  const b = await holdCar(h);
  const intentId = await requestPay(h, b);
  await sandbox(h).post(`/intents/${intentId}/succeed`);
  await waitFor(async () => (await statusOf(h, b.id)) === 'CONFIRMED');
  const r = await h.req('POST', `/bookings/${b.id}/cancel`, { token: h.token(1, 'operator'), body: {} });
  expect(r.status, r.text).toBe(200);
  return b.id;
}
const restarts = async () => (await workerRestarts.get()).values.find((v) => v.labels.queue === 'refunds')?.value ?? 0;

describe('worker watchdog', () => {
  it('a worker whose Redis connections froze is replaced by a new one, which does the waiting jobs', async () => {
    const w = startRefundsWork();
    expect((await settledRefunds(h, await refundOwed()))[0].status).toBe('SUCCEEDED');
    const stuck = w.workers[0];
    const before = await restarts();

    expect(proxy.freeze()).toBeGreaterThan(0);
    const id = await refundOwed();
    await sleep(500);
    expect((await h.sql(`SELECT status FROM refund WHERE booking_id = $1`, [id])).rows[0].status).toBe('PENDING');
    expect(stuck!.isRunning()).toBe(true); // BullMQ sees nothing wrong

    expect((await settledRefunds(h, id, 20_000))[0].status).toBe('SUCCEEDED');
    expect(w.workers[0]).not.toBe(stuck);
    expect(await restarts()).toBe(before + 1);
  }, 40_000);

  it('a paused queue (as bull-board pauses it) is not a stuck worker: nothing is replaced', async () => {
    const w = work ?? startRefundsWork();
    const current = w.workers[0];
    const before = await restarts();
    await h.queues.refunds.pause();
    try {
      const id = await refundOwed();
      await sleep(WATCHDOG.stallMs * 2);
      expect((await h.sql(`SELECT status FROM refund WHERE booking_id = $1`, [id])).rows[0].status).toBe('PENDING');
      expect(w.workers[0]).toBe(current);
      expect(await restarts()).toBe(before);
    } finally {
      await h.queues.refunds.resume();
    }
  }, 30_000);

  it('the rule, on a queue with a job ready and no worker: every slot busy is not stuck; a free slot and nothing taken is', async () => {
    const queue = h.queues.notifications; // nothing works it in this file
    await queue.add('notify', { eventId: 'x', channel: 'log', bookingId: 1, gen: 0, dueAt: Date.now() }, { jobId: 'watchdog-rule' });
    const activity = new WorkerActivity();
    activity.lastAt = 0;
    activity.inFlight = 2; // a long job in each slot
    const restarts: string[] = [];
    const stop = watchWorker({ ...WATCHDOG, queue, activity: () => activity, slots: () => 2, restart: async (why) => void restarts.push(why) });
    try {
      await sleep(WATCHDOG.stallMs * 2);
      expect(restarts).toEqual([]);
      activity.inFlight = 1;
      await waitFor(async () => restarts.length > 0, WATCHDOG.stallMs * 3, 50);
      expect(restarts[0]).toMatch(/^\d+ jobs ready and none started or finished/);
    } finally {
      stop();
      await queue.remove('watchdog-rule');
    }
  }, 30_000);
});
