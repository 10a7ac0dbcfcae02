import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { parseConfig, type Config } from '../../shared/config.js';
import { migrate } from '../../shared/db/migrate.js';
import { closeDeps, createDeps, type ProcessDeps } from '../../shared/runtime.js';
import { redisClient } from '../../shared/redis.js';
import type { Clock } from '../../shared/domain/clock.js';
import { JOB_KINDS, type JobKind } from '../../shared/domain/jobs.js';
import { openProducers, type QueueSet } from '../../shared/queues/producer.js';
import { createHandler } from '../../api/app.js';
import { createMetrics } from '../../api/metrics.js';
import { registerOpsGauges } from '../../api/ops-gauges.js';
import { createPspSandbox } from './sandbox.js';
import { startWork, type RunningWork } from '../../workers/lib/worker-process.js';
import { client, token, type Client } from './http.js';
import { startSearchIndexes } from '../../shared/search/start.js';
import type { SearchIndexes } from '../../shared/search/indexes.js';

export const ADMIN_DB = 'postgres://postgres@127.0.0.1:5432/postgres';

export interface HarnessOptions {
  env?: Record<string, string>;
  /**
   * Works the queues in this process, as the worker processes do (BullMQ workers and their reconciler): every
   * kind (`true`) or these. (The outbox pump only relays to Kafka: tests that need it start one, helpers/kafka.ts.)
   */
  workers?: boolean | readonly JobKind[];
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
  deps: ProcessDeps;
  /** The producers' queues (the harness's QUEUE_PREFIX), to look at jobs. */
  queues: QueueSet;
  /** The in-process workers and reconciler, when `workers` asked for them. */
  work: RunningWork | null;
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
    // A killed or stalled job is taken up again within seconds, not a minute.
    JOB_LOCK_S: '5',
    ...secrets, ...opts.env,
  });
  // The API's deps: the read replica too when the test names one (DATABASE_READ_URL).
  const deps = await createDeps(config, { clock: opts.clock, poolSize: 8, readReplica: true });
  // The tests' own view of the queues, on a connection that waits up to 5 s (the reconciler's): the producers'
  // 300 ms fail-fast timeout is the API's, and a loaded machine makes a test's getJob time out on it.
  const inspection = openProducers(config, 'reconciler');
  const queues = inspection.queues;
  const redis = redisClient(config, 'request', { keyPrefix: config.REDIS_KEY_PREFIX });
  redis.on('error', () => {});
  const metrics = createMetrics();
  registerOpsGauges(metrics, deps.db, queues);
  const searchIndex = startSearchIndexes(deps.prepared, config.SEARCH_CACHE_TTL_S, config.SEARCH_INDEX === 'on');
  server.on('request', createHandler({ ...deps, redis, metrics, searchIndex }));

  const kinds = opts.workers === true ? JOB_KINDS : opts.workers || [];
  const work = kinds.length ? startWork(deps, kinds) : null;
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 4 });

  return {
    config, baseUrl, req: client(baseUrl), deps, queues, work, searchIndex,
    token: (sub, role) => token(config.JWT_SECRET, { sub: String(sub), role }),
    sql: (text, params) => pool.query(text, params as unknown[]),
    async close() {
      await searchIndex?.stop();
      await work?.stop();
      await deps.producers?.settle(); // adds not waited for land before the queues are obliterated, not after
      if (inspection.connection.status === 'ready') {
        for (const q of Object.values(queues)) await q.obliterate({ force: true }).catch(() => {});
      }
      await inspection.close();
      await new Promise<void>((r) => server.close(() => r()));
      server.closeAllConnections?.();
      await psp.close();
      pspServer.close();
      redis.disconnect();
      await pool.end();
      await closeDeps(deps);
      const admin = new pg.Client({ connectionString: ADMIN_DB.replace(':5432/', `:${pgPort}/`) });
      await admin.connect();
      await admin.query(`DROP DATABASE IF EXISTS test_${id} WITH (FORCE)`).catch(() => {});
      await admin.end();
    },
  };
}
