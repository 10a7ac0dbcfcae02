import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { DelayedError, Queue, Worker, type Job } from 'bullmq';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../shared/config.js';
import { redisClient, type RedisClient } from '../../shared/redis.js';
import { backoffStrategy, RetryLater } from '../../workers/lib/job-worker.js';
import { CANARY_FIELD } from '../../shared/queues/job-store.js';
import { sleep, waitFor } from '../helpers/http.js';

// The BullMQ 6.7 behaviour the job design relies on (docs/guarantees.md "Jobs"), pinned so that an upgrade that
// changes one of them fails here first. Real Redis, one fresh prefix per test, queue names with a hash tag as ours.

/** Redis Cluster's slot of a key (CRC16/XMODEM of its hash tag, else of the key, mod 16384), written out here. */
function slotOf(key: string): number {
  const open = key.indexOf('{');
  const close = open >= 0 ? key.indexOf('}', open + 1) : -1;
  const tagged = open >= 0 && close > open + 1 ? key.slice(open + 1, close) : key;
  let crc = 0;
  for (const byte of Buffer.from(tagged)) {
    crc ^= byte << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % 16384;
}

const config = parseConfig({ REDIS_URL: 'redis://127.0.0.1:6379/5' });
const opened: { close(): Promise<unknown> }[] = [];
const clients: RedisClient[] = [];
afterEach(async () => {
  for (const o of opened.splice(0).reverse()) await o.close().catch(() => {});
});
afterAll(() => clients.forEach((c) => c.disconnect()));

function setup(o: { name?: string } = {}) {
  const prefix = `bc${randomUUID().slice(0, 8)}`;
  const name = o.name ?? '{contract}';
  const connection = redisClient(config, 'worker');
  clients.push(connection);
  const queue = new Queue(name, { connection, prefix });
  opened.push({ close: async () => { await queue.obliterate({ force: true }).catch(() => {}); await queue.close(); } });
  const worker = (processor: ((job: Job, token?: string) => Promise<unknown>) | null, opts: Record<string, unknown> = {}) => {
    const c = redisClient(config, 'worker');
    clients.push(c);
    const w = new Worker(name, processor, { connection: c, prefix, ...opts });
    w.on('error', () => {});
    opened.push({ close: () => w.close(true) });
    return w;
  };
  const eventsOf = async (type: string) =>
    (await connection.xrange(`${prefix}:${name}:events`, '-', '+')).filter(([, f]) => f[1] === type).map(([, f]) => f);
  return { prefix, name, connection, queue, worker, eventsOf };
}

describe('BullMQ 6.7: what the job design relies on', () => {
  it('an add whose id exists in any state (delayed, completed, failed) is ignored, answers the old id and emits `duplicated`', async () => {
    const { queue, worker, eventsOf } = setup();
    await queue.add('x', { v: 1 }, { jobId: 'delayed-1', delay: 60_000 });
    await queue.add('x', { v: 1 }, { jobId: 'done-1' });
    await queue.add('x', { v: 1, fail: true }, { jobId: 'failed-1' });
    worker(async (job) => {
      if (job.data.fail) throw new Error('no');
      return 'ok';
    });
    await waitFor(async () => (await queue.getJobState('done-1')) === 'completed' && (await queue.getJobState('failed-1')) === 'failed', 10_000, 50);
    for (const id of ['delayed-1', 'done-1', 'failed-1']) {
      const again = await queue.add('x', { v: 2 }, { jobId: id });
      expect(again.id).toBe(id);
      expect((await queue.getJob(id))!.data.v, id).toBe(1);
    }
    expect((await eventsOf('duplicated')).length).toBe(3);
    expect(await queue.getJobState('delayed-1')).toBe('delayed');
  });

  it('a removed job (removeOnComplete: true) is no duplicate: the same id is added and runs again', async () => {
    const { queue, worker } = setup();
    let runs = 0;
    worker(async () => ++runs);
    await queue.add('x', {}, { jobId: 'again-1', removeOnComplete: true });
    await waitFor(async () => runs === 1 && (await queue.getJob('again-1')) === undefined, 10_000, 50);
    await queue.add('x', {}, { jobId: 'again-1', removeOnComplete: true });
    await waitFor(async () => runs === 2, 10_000, 50);
  });

  it('retention is lazy: a completed job past its removeOnComplete age stays until another job of the queue finishes', async () => {
    const { queue, worker } = setup();
    worker(async () => 'ok');
    await queue.add('x', {}, { jobId: 'old-1', removeOnComplete: { age: 1 } });
    await waitFor(async () => (await queue.getJobState('old-1')) === 'completed', 10_000, 50);
    await sleep(2_100);
    expect(await queue.getJobState('old-1')).toBe('completed');
    await queue.add('x', {}, { jobId: 'new-1', removeOnComplete: { age: 1 } });
    await waitFor(async () => (await queue.getJob('old-1')) === undefined, 10_000, 50);
  });

  it('a job that stalls past maxStalledCount fails without its processor running (it is never retried by itself)', async () => {
    const { queue, worker } = setup();
    await queue.add('x', {}, { jobId: 'stall-1', attempts: 5 });
    // A worker that takes the job and dies (never renews its lock), twice; the stalled checker of another moves it.
    const dead = worker(null, { lockDuration: 300, autorun: false });
    const checker = worker(null, { lockDuration: 300, stalledInterval: 200, maxStalledCount: 1, autorun: false }) as unknown as {
      moveStalledJobsToWait(): Promise<void>;
    };
    const takeAndDie = async () => {
      const job = await dead.getNextJob(randomUUID(), { block: false });
      expect(job?.id).toBe('stall-1');
    };
    await takeAndDie();
    await waitFor(async () => {
      await checker.moveStalledJobsToWait();
      return (await queue.getJobState('stall-1')) === 'waiting';
    }, 10_000, 200);
    await takeAndDie();
    await sleep(400);
    for (let i = 0; i < 3; i++) {
      await checker.moveStalledJobsToWait();
      await sleep(250);
    }
    let ran = 0;
    worker(async () => ++ran);
    await waitFor(async () => (await queue.getJobState('stall-1')) === 'failed', 10_000, 50);
    const job = (await queue.getJob('stall-1'))!;
    expect(job.failedReason).toMatch(/stalled more than allowable limit/);
    expect(ran).toBe(0);
    expect(job.finishedOn).toBeGreaterThan(0);
  });

  it('moveToDelayed + DelayedError counts no attempt; RateLimitError counts none either; a custom backoff gets the thrown error', async () => {
    const { queue, worker } = setup();
    const seen: { attemptsMade: number; at: number }[] = [];
    const w: Worker = worker(async (job, token) => {
      seen.push({ attemptsMade: job.attemptsMade, at: Date.now() });
      if (seen.length === 1) {
        await job.moveToDelayed(Date.now() + 200, token);
        throw new DelayedError();
      }
      if (seen.length === 2) {
        await w.rateLimit(300);
        throw Worker.RateLimitError();
      }
      if (seen.length === 3) throw new RetryLater(250, 'provider said pending');
      return 'ok';
    }, { settings: { backoffStrategy: backoffStrategy({ backoff: { baseMs: 60_000, capMs: 60_000 } }) } });
    await queue.add('x', {}, { jobId: 'defer-1', attempts: 3, backoff: { type: 'obligation' } });
    await waitFor(async () => (await queue.getJobState('defer-1')) === 'completed', 10_000, 50);
    expect(seen.map((s) => s.attemptsMade)).toEqual([0, 0, 0, 1]);
    expect(seen[1]!.at - seen[0]!.at).toBeGreaterThanOrEqual(150); // delayed ~200 ms
    expect(seen[2]!.at - seen[1]!.at).toBeGreaterThanOrEqual(250); // the queue paused ~300 ms
    expect(seen[3]!.at - seen[2]!.at).toBeGreaterThanOrEqual(200); // RetryLater's 250 ms, not the strategy's 60 s
    expect(seen[3]!.at - seen[2]!.at).toBeLessThan(5_000);
  });

  it('the limiter holds for the whole queue across workers (each with its own connection)', async () => {
    const { queue, worker } = setup();
    const starts: number[] = [];
    for (let i = 0; i < 2; i++) worker(async () => void starts.push(Date.now()), { concurrency: 5, limiter: { max: 3, duration: 500 } });
    await queue.addBulk(Array.from({ length: 12 }, (_, i) => ({ name: 'x', data: {}, opts: { jobId: `lim-${i}` } })));
    await waitFor(async () => starts.length === 12, 15_000, 50);
    starts.sort((a, b) => a - b);
    // 3 starts per 500 ms window for the queue, not per worker: 12 jobs need 4 windows (≥ 1.5 s; two workers each
    // with its own limit would take 2). The windows are fixed, so a sliding 500 ms may see up to twice the max.
    expect(starts.at(-1)! - starts[0]!).toBeGreaterThanOrEqual(1400);
    for (let i = 0; i + 6 < starts.length; i++) expect(starts[i + 6]! - starts[i]!, `starts ${i}..${i + 6}`).toBeGreaterThanOrEqual(450);
  });

  it('upsertJobScheduler twice is one scheduler with one pending job; its first tick is due at once', async () => {
    const { queue } = setup();
    for (let i = 0; i < 2; i++) await queue.upsertJobScheduler('purge', { every: 60_000 }, { name: 'purge', data: { task: 'x' } });
    expect((await queue.getJobSchedulers()).map((s) => s.key)).toEqual(['purge']);
    const counts = await queue.getJobCounts('waiting', 'delayed', 'prioritized');
    expect((counts.waiting ?? 0) + (counts.delayed ?? 0) + (counts.prioritized ?? 0)).toBe(1);
    expect(await queue.getJobScheduler('gone')).toBeUndefined();
  });

  it('a hash tag in the queue name puts every key of the queue in one slot; obliterate deletes the meta hash (the canary)', async () => {
    const { queue, worker, connection, prefix, name } = setup({ name: '{refunds-contract}' });
    worker(async () => 'ok');
    await queue.add('x', {}, { jobId: 'k-1', delay: 60_000 });
    await queue.add('x', {}, { jobId: 'k-2' });
    await waitFor(async () => (await queue.getJobState('k-2')) === 'completed', 10_000, 50);
    await connection.hset(`${prefix}:${name}:meta`, CANARY_FIELD, 'e1');
    const keys = await connection.keys(`${prefix}:*`);
    expect(keys.length).toBeGreaterThan(4);
    expect(new Set(keys.map((k) => slotOf(k))).size).toBe(1);
    expect(slotOf('123456789')).toBe(12739); // the CRC16 check value of the Redis Cluster spec
    await queue.obliterate({ force: true });
    expect(await connection.hget(`${prefix}:${name}:meta`, CANARY_FIELD)).toBeNull();
    expect(await connection.keys(`${prefix}:*`)).toEqual([]);
  });

  it('a job hash says what the reconciler reads: timestamp always, finishedOn only once finished, delayed in the delayed set', async () => {
    const { queue, connection, prefix, name, worker } = setup();
    await queue.add('x', {}, { jobId: 'h-1', delay: 60_000 });
    const [ts, fin] = await connection.hmget(`${prefix}:${name}:h-1`, 'timestamp', 'finishedOn');
    expect(Number(ts)).toBeGreaterThan(0);
    expect(fin).toBeNull();
    expect(await connection.zscore(`${prefix}:${name}:delayed`, 'h-1')).not.toBeNull();
    worker(async (job) => {
      await job.log('attempt 1: ok');
      return 'done';
    });
    await queue.add('x', {}, { jobId: 'h-2' });
    await waitFor(async () => (await connection.hget(`${prefix}:${name}:h-2`, 'finishedOn')) !== null, 10_000, 50);
    expect((await queue.getJobLogs('h-2')).logs).toEqual(['attempt 1: ok']);
    // Ids that are integers or contain ':' are refused (ours are `{kind}-{key}-g{gen}`).
    await expect(queue.add('x', {}, { jobId: '42' })).rejects.toThrow(/integer/i);
    await expect(queue.add('x', {}, { jobId: 'a:b' })).rejects.toThrow(/:/);
  });

  it('each delayed add re-adds the marker and wakes a worker blocked on it; one addBulk (a pipeline) wakes it about once', async () => {
    const { queue, prefix, name, worker } = setup();
    worker(async () => 'never due');
    // The worker's blocking reads of the queue's marker, as the server sees them (MONITOR on a plain socket: ioredis's
    // monitor mode races its own ready check).
    const monitor = net.connect(6379, '127.0.0.1');
    await new Promise((r) => monitor.once('connect', r));
    let wakes = 0;
    let seen = '';
    const read = new RegExp(`"bzpopmin" "${prefix}:\\{contract\\}:marker"`, 'gi');
    monitor.on('data', (chunk) => {
      seen += chunk.toString('utf8');
      const lines = seen.split('\r\n');
      seen = lines.pop()!;
      for (const l of lines) wakes += l.match(read)?.length ?? 0;
    });
    monitor.write('MONITOR\r\n');
    await sleep(100);
    const settle = async () => {
      await sleep(300);
      const n = wakes;
      wakes = 0;
      return n;
    };
    await settle();
    for (let i = 0; i < 20; i++) {
      await queue.add('x', {}, { jobId: `one-${i}`, delay: 600_000 });
      await sleep(20);
    }
    const oneByOne = await settle();
    await queue.addBulk(Array.from({ length: 20 }, (_, i) => ({ name: 'x', data: {}, opts: { jobId: `bulk-${i}`, delay: 600_000 } })));
    const bulk = await settle();
    monitor.destroy();
    expect(oneByOne).toBeGreaterThanOrEqual(15);
    expect(bulk).toBeLessThanOrEqual(3);
  });
});
