import { spawn, type ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import type { Harness } from './harness.js';
import { waitFor } from './http.js';
import { freePort, spawnTs } from './processes.js';

// The pieces of the fault tests: a redis-server of the test's own (no persistence: a restart loses everything, as
// FLUSHALL does; never the shared one), and worker processes as `npm start` runs them (their Procfile entries), on
// that Redis and the harness's database.

export interface PrivateRedis {
  url: string;
  port: number;
  /** The test's own client (not counted among the processes' connections). */
  client: Redis;
  /** Connections other than the test's own: the processes using this Redis. */
  processConnections(): Promise<number>;
  stop(): Promise<void>;
  start(): Promise<void>;
}

export async function privateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  let server: ChildProcess | null = null;
  const client = new Redis({ port, lazyConnect: true, maxRetriesPerRequest: 1, connectionName: 'fault-test' });
  client.on('error', () => {});
  const r: PrivateRedis = {
    url: `redis://127.0.0.1:${port}/0`,
    port,
    client,
    async processConnections() {
      const list = String(await client.client('LIST'));
      return list.split('\n').filter((l) => l.trim() && !/ name=fault-test /.test(l)).length;
    },
    async stop() {
      const s = server;
      server = null;
      if (!s || s.exitCode !== null) return;
      const exited = new Promise((res) => s.once('exit', res));
      s.kill('SIGKILL');
      await exited;
    },
    async start() {
      server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
      // ping, not connect(): after a refused connect ioredis keeps reconnecting, and a second connect() rejects.
      await waitFor(async () => (await client.ping().catch(() => null)) === 'PONG', 10_000, 50);
    },
  };
  await r.start();
  return r;
}

export type WorkerChild = ChildProcess & { output: () => string };

/** The environment of a worker process beside the harness: its database, provider and secrets, and `redisUrl`. */
export function workerEnv(h: Harness, redisUrl: string, extra: Record<string, string> = {}): Record<string, string> {
  const c = h.config;
  return {
    NODE_ENV: 'test', LOG_LEVEL: 'info', METRICS_PORT: '0', KAFKA_BROKERS: 'none',
    DATABASE_URL: c.DATABASE_URL, REDIS_URL: redisUrl, QUEUE_PREFIX: c.QUEUE_PREFIX, PSP_URL: c.pspUrl, PSP_API_KEY: c.PSP_API_KEY,
    JWT_SECRET: c.JWT_SECRET, PAYMENT_WEBHOOK_SECRET: c.PAYMENT_WEBHOOK_SECRET, DASHBOARD_PASSWORD: 'test-dashboard-password',
    HOLD_TTL_S: String(c.HOLD_TTL_S), PAYMENT_GRACE_S: String(c.PAYMENT_GRACE_S), LEASE_S: String(c.LEASE_S), JOB_LOCK_S: String(c.JOB_LOCK_S),
    PSP_RATE_LIMIT: String(c.PSP_RATE_LIMIT), ...(c.NOTIFY_WEBHOOK_URL ? { NOTIFY_WEBHOOK_URL: c.NOTIFY_WEBHOOK_URL } : {}),
    ...extra,
  };
}

/** Starts a Procfile worker (`expiry`, `refunds`, `notifications`, `maintenance`); resolves once it runs. */
export async function startWorkerProcess(name: string, env: Record<string, string>, into?: WorkerChild[]): Promise<WorkerChild> {
  const child = spawnTs(`workers/${name}.ts`, { ...env, PROC_NAME: name });
  into?.push(child);
  await waitFor(async () => child.output().includes('"msg":"started"'), 45_000, 50)
    .catch(() => { throw new Error(`${name} process did not start:\n${child.output().slice(-2000)}`); });
  return child;
}

/** kill -9, and wait until it is gone. */
export async function kill9(child: WorkerChild): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await exited;
}
