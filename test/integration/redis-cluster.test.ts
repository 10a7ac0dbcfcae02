import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { waitFor } from '../helpers/http.js';
import { notificationsOf, outboxOf, settledRefunds, statusOf } from '../helpers/bookings.js';
import { holdCar } from '../helpers/cars.js';
import { paymentSucceeded, signedWebhook } from '../helpers/webhooks.js';
import { freePort } from '../helpers/processes.js';
import { QUEUES } from '../../shared/queues/registry.js';

// Redis Cluster readiness (REDIS_CLUSTER_NODES): a real local cluster of six redis-server (three masters, one
// replica each), created with `redis-cli --cluster create`. Every Redis client of the service (producers, workers,
// the reconciler, the limiter) is a Cluster client; each queue's keys share its hash tag's slot, and the queues
// spread over the masters. A hold expires through it and a refund is paid through it.

const HOLD_TTL_S = 2;
let dir: string;
const servers: ChildProcess[] = [];
let ports: number[] = [];
let admin: Cluster;
let h: Harness;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'redis-cluster-'));
  ports = [];
  for (let i = 0; i < 6; i++) ports.push(await freePort());
  for (const port of ports) {
    servers.push(spawn('redis-server', [
      '--port', String(port), '--bind', '127.0.0.1', '--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`,
      '--cluster-node-timeout', '2000', '--save', '', '--appendonly', 'no', '--dir', dir,
    ], { stdio: 'ignore' }));
  }
  await waitFor(async () => ports.every((p) => spawnSync('redis-cli', ['-p', String(p), 'ping'], { encoding: 'utf8' }).stdout.trim() === 'PONG'), 10_000, 100);
  const create = spawnSync('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '1', '--cluster-yes'], { encoding: 'utf8' });
  expect(create.status, create.stdout + create.stderr).toBe(0);
  await waitFor(async () => ports.every((p) => /cluster_state:ok/.test(spawnSync('redis-cli', ['-p', String(p), 'cluster', 'info'], { encoding: 'utf8' }).stdout)), 20_000, 200);
  admin = new Cluster([{ host: '127.0.0.1', port: ports[0]! }]);
  h = await startHarness({
    workers: true,
    env: { REDIS_CLUSTER_NODES: ports.map((p) => `127.0.0.1:${p}`).join(','), HOLD_TTL_S: String(HOLD_TTL_S), HOLD_RATE_LIMIT: '1000' },
  });
}, 90_000);
afterAll(async () => {
  await h?.close();
  admin?.disconnect();
  for (const s of servers) s.kill('SIGKILL');
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('on a Redis Cluster (REDIS_CLUSTER_NODES)', () => {
  it('a hold expires within 1 s through its job, a late payment\'s refund is paid, both notified; each queue lives in one slot', async () => {
    const b = await holdCar(h);
    expect(await admin.exists(`${h.config.QUEUE_PREFIX}:${QUEUES.expiry.name}:expire-${b.id}-g0`)).toBe(1);
    await waitFor(async () => (await statusOf(h, b.id)) === 'EXPIRED', 10_000, 25);
    const expired = (await outboxOf(h, b.id)).find((e) => e.topic === 'booking.expired')!;
    expect(new Date(expired.payload.occurredAt).getTime() - b.holdExpiresAt.getTime()).toBeLessThan(1000);
    // The job commits the expiry, then BullMQ moves it to completed: the status can be read in between.
    await waitFor(async () => (await h.queues.expiry.getJobState(`expire-${b.id}-g0`)) === 'completed', 5_000, 25);

    expect((await signedWebhook(h, paymentSucceeded(b.id, b.deposit))).status).toBe(200);
    const [refund] = await settledRefunds(h, b.id);
    expect(refund).toMatchObject({ status: 'SUCCEEDED', amount: b.deposit });
    await waitFor(async () => (await notificationsOf(h, b.id)).length === 4, 10_000);

    // Each queue's keys in one slot (its hash tag); the six queues spread over more than one master.
    const slots = new Map<string, Set<number>>();
    for (const node of admin.nodes('master')) {
      for (const key of await node.keys(`${h.config.QUEUE_PREFIX}:*`)) {
        const queue = key.split(':')[1]!;
        slots.set(queue, (slots.get(queue) ?? new Set()).add(Number(await node.cluster('KEYSLOT', key))));
      }
    }
    expect([...slots.keys()]).toEqual(expect.arrayContaining(['{expiry}', '{refunds}', '{notifications}', '{maintenance}']));
    for (const [queue, s] of slots) expect(s.size, queue).toBe(1);
    const owners = new Set([...slots.values()].map((s) => admin.slots[[...s][0]!]![0]));
    expect(owners.size).toBeGreaterThan(1);
  }, 60_000);
});
