import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import type { Queue } from 'bullmq';
import { parseConfig, type Config } from '../../shared/config.js';
import { migrate } from '../../shared/db/migrate.js';
import { createDeps, requestRedis } from '../../shared/runtime.js';
import type { Clock } from '../../shared/domain/clock.js';
import { createApp } from '../../api/app.js';
import { createMetrics } from '../../api/metrics.js';
import { registerOpsGauges } from '../../api/ops-gauges.js';
import { createPspSandbox } from './sandbox.js';
import type { WorkerDeps } from '../../workers/runner.js';
import { startExpiryLoops } from '../../workers/expiry.js';
import { startRefundLoop } from '../../workers/refunds.js';
import { startNotificationLoop } from '../../workers/notifications.js';
import { openQueues, type Queues } from '../../shared/queues/queues.js';
import { webhookNotificationProvider } from '../../shared/usecases/notifications.js';
import { client, token, type Client } from './http.js';
import { startSearchIndexes } from '../../shared/search/start.js';
import type { SearchIndexes } from '../../shared/search/indexes.js';

export const ADMIN_DB = 'postgres://postgres@127.0.0.1:5432/postgres';

export interface HarnessOptions {
  env?: Record<string, string>;
  /**
   * Runs the expiry loops and the refund and notification due loops in this process. (The outbox pump only relays
   * to Kafka: tests that need it start one, test/helpers/kafka.ts.)
   */
  workers?: boolean;
  clock?: Clock;
  /** The PostgreSQL to make the test database on (default 5432, the machine's); a replica test runs its own. */
  postgresPort?: number;
  /** A streaming replica of that PostgreSQL: DATABASE_READ_URL is the test database there. */
  readReplicaPort?: number;
}

export interface Harness {
  config: Config;
  baseUrl: string;
  req: Client;
  token: (sub: number, role: 'customer' | 'host' | 'operator') => string;
  deps: WorkerDeps;
  queues: Record<string, Queue>;
  sql: (text: string, params?: unknown[]) => Promise<pg.QueryResult>;
  /** The in-memory search indexes, as the API process runs them (SEARCH_INDEX=on, SEARCH_CACHE_TTL_S ≥ 2), else null. */
  searchIndex: SearchIndexes | null;
  close: () => Promise<void>;
}

export async function startHarness(opts: HarnessOptions = {}): Promise<Harness> {
  const id = randomUUID().replace(/-/g, '').slice(0, 12);
  const pgPort = opts.postgresPort ?? 5432;
  const databaseUrl = `postgres://postgres@127.0.0.1:${pgPort}/test_${id}`;
  await migrate(databaseUrl);
  const secrets = { JWT_SECRET: `jwt-${id}`, PAYMENT_WEBHOOK_SECRET: `wh-${id}` };
  // The API's port is taken first, so the sandbox knows where to send webhooks from the start;
  // tests reach the sandbox only over HTTP (helpers/sandbox.ts), never through this object.
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const psp = createPspSandbox({ apiKey: 'test-key', webhookSecret: secrets.PAYMENT_WEBHOOK_SECRET, webhookUrl: `${baseUrl}/payments/webhook`, webhookBackoffMs: 50 });
  const { url: pspUrl, server: pspServer } = await psp.listen(0);
  const config = parseConfig({
    DATABASE_URL: databaseUrl, REDIS_URL: 'redis://127.0.0.1:6379/5', PSP_URL: pspUrl, PSP_API_KEY: 'test-key',
    // The in-memory search indexes only where a test asks for them (SEARCH_INDEX: 'on' and a TTL ≥ 2 s).
    QUEUE_PREFIX: `t${id}`, REDIS_KEY_PREFIX: `t${id}:`, SEARCH_CACHE_TTL_S: '0', SEARCH_INDEX: 'off', LOG_LEVEL: 'silent',
    ...(opts.readReplicaPort ? { DATABASE_READ_URL: `postgres://postgres@127.0.0.1:${opts.readReplicaPort}/test_${id}` } : {}),
    ...secrets, ...opts.env,
  });
  // The API's deps: the read replica too when the test names one (DATABASE_READ_URL).
  const base = await createDeps(config, { clock: opts.clock, readReplica: true });
  const redis = requestRedis(config.REDIS_URL, config.REDIS_KEY_PREFIX);
  redis.on('error', () => {});
  // Without workers there are no queues at all (a harness whose Redis is down must still close).
  const queues = opts.workers ? openQueues(config) : ({} as Queues);
  const deps: WorkerDeps = { ...base, queues };
  const metrics = createMetrics();
  const closeGauges = registerOpsGauges(metrics, base.db, config);
  const searchIndex = startSearchIndexes(base.prepared, config.SEARCH_CACHE_TTL_S, config.SEARCH_INDEX === 'on');
  server.on('request', createApp({ ...base, redis, metrics, searchIndex }).callback());

  const dueLoops: { stop(): Promise<void> }[] = [];
  let expiryLoops: { stop(): Promise<void> } | null = null;
  if (opts.workers) {
    expiryLoops = startExpiryLoops(deps);
    // Refunds and notifications: due loops over their PostgreSQL rows (no queue).
    dueLoops.push(startRefundLoop(deps), startNotificationLoop(deps, webhookNotificationProvider(config.NOTIFY_WEBHOOK_URL)));
  }
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 4 });

  return {
    config, baseUrl, req: client(baseUrl), deps, queues, searchIndex,
    token: (sub, role) => token(config.JWT_SECRET, { sub: String(sub), role }),
    sql: (text, params) => pool.query(text, params as unknown[]),
    async close() {
      await searchIndex?.stop();
      await expiryLoops?.stop();
      await Promise.all(dueLoops.map((l) => l.stop()));
      for (const q of Object.values(queues)) {
        await q.obliterate({ force: true }).catch(() => {});
        await q.close();
      }
      await new Promise<void>((r) => server.close(() => r()));
      server.closeAllConnections?.();
      await psp.close();
      pspServer.close();
      redis.disconnect();
      await closeGauges();
      await pool.end();
      await base.replica?.close();
      await base.db.end();
      await base.prepared.end();
      const admin = new pg.Client({ connectionString: ADMIN_DB.replace(':5432/', `:${pgPort}/`) });
      await admin.connect();
      await admin.query(`DROP DATABASE IF EXISTS test_${id} WITH (FORCE)`).catch(() => {});
      await admin.end();
    },
  };
}
