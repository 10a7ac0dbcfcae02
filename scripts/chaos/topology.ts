import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import net from 'node:net';
import pg from 'pg';
import { Redis } from 'ioredis';
import { migrate } from '../../shared/db/migrate.js';
import { logger } from '../../shared/logger.js';
import { readProcfile } from '../procfile.js';
import { createPspSandbox } from '../../sandbox/app.js';
import { startNotifyReceiver } from './notify-receiver.js';
import { supervise, type Proc } from './procs.js';
import { freePort } from '../free-port.js';
export { freePort };

// The scaled-out topology a chaos run owns: its own database, redis-server and Kafka broker (never the shared
// ones: FLUSHALL and restarts are among the faults), the sandbox provider and the notification receiver (in this
// process), 2 API processes and 2 of every other Procfile process (the pump is the relay), supervised.

export const ADMIN_DB = 'postgres://postgres@127.0.0.1:5432/postgres';
const NOT_DOUBLED = new Set(['release', 'dashboard', 'psp', 'api']);


const portOpen = (port: number) => new Promise<boolean>((resolve) => {
  const s = net.connect(port, '127.0.0.1');
  s.once('connect', () => (s.destroy(), resolve(true)));
  s.once('error', () => resolve(false));
});

export async function waitFor(what: string, fn: () => Promise<boolean>, timeoutMs: number, everyMs = 200): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (await fn().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`timed out waiting for ${what}`);
}

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  return new Promise((resolve) => {
    const c = spawn(cmd, args, { env, stdio: 'ignore' });
    c.on('exit', (code) => resolve(code ?? 1));
    c.on('error', () => resolve(1));
  });
}

/**
 * The Kafka jars: KAFKA_LIBS_DIR, else this checkout's `.kafka/libs`, else (in a git worktree) the main checkout's,
 * else this checkout's again (kafka.sh then resolves them there with Maven, once).
 */
function kafkaLibs(root: string): string {
  if (process.env.KAFKA_LIBS_DIR) return process.env.KAFKA_LIBS_DIR;
  const own = path.join(root, '.kafka', 'libs');
  if (existsSync(path.join(own, '.resolved'))) return own;
  try {
    const common = execFileSync('git', ['rev-parse', '--path-format=absolute', '--git-common-dir'], { cwd: root, encoding: 'utf8' }).trim();
    const main = path.join(path.dirname(common), '.kafka', 'libs');
    if (existsSync(path.join(main, '.resolved'))) return main;
  } catch {
    // not a git checkout
  }
  return own;
}

export interface TopologyOptions {
  root: string;
  runDir: string;
  holdTtlS: number;
  graceS: number;
}

async function build(o: TopologyOptions, undo: (() => Promise<unknown>)[]) {
  const id = randomUUID().replace(/-/g, '').slice(0, 10);
  const dbName = `chaos_${id}`;
  const databaseUrl = `postgres://postgres@127.0.0.1:5432/${dbName}`;
  await migrate(databaseUrl);
  const dropDb = async () => {
    const c = new pg.Client({ connectionString: ADMIN_DB });
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => undefined);
    await c.end();
  };
  undo.push(dropDb);

  // Redis: no persistence, so a restart loses everything, like FLUSHALL.
  const redisPort = await freePort();
  let redis: ChildProcess | null = null;
  const startRedis = async () => {
    redis = spawn('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    await waitFor('redis-server', () => portOpen(redisPort), 10_000);
  };
  const killRedis = async () => {
    const r = redis;
    redis = null;
    if (!r || r.exitCode !== null) return;
    const exited = new Promise((res) => r.once('exit', res));
    r.kill('SIGKILL');
    await exited;
  };
  await startRedis();
  undo.push(killRedis);

  // Kafka: scripts/kafka.sh on free ports, in the run's directory, sharing the project's jars.
  const kafkaPort = await freePort();
  const kafkaEnv = {
    ...process.env, KAFKA_PORT: String(kafkaPort), KAFKA_CONTROLLER_PORT: String(await freePort()),
    KAFKA_HOME_DIR: path.join(o.runDir, 'kafka'),
    KAFKA_LIBS_DIR: kafkaLibs(o.root),
  };
  const kafkaSh = path.join(o.root, 'scripts', 'kafka.sh');
  const startKafka = async () => {
    if ((await run('bash', [kafkaSh, 'start'], kafkaEnv)) !== 0) throw new Error(`kafka.sh start failed (see ${kafkaEnv.KAFKA_HOME_DIR})`);
  };
  const stopKafka = async () => void (await run('bash', [kafkaSh, 'stop'], kafkaEnv));
  undo.push(stopKafka);
  await startKafka();
  const brokers = [`127.0.0.1:${kafkaPort}`];

  const secrets = { JWT_SECRET: `jwt-${randomUUID()}`, PAYMENT_WEBHOOK_SECRET: `wh-${randomUUID()}`, PSP_API_KEY: `psp-${randomUUID()}`, DASHBOARD_PASSWORD: randomUUID() };
  const apiPorts = [await freePort(), await freePort()];
  const apiUrls = apiPorts.map((p) => `http://127.0.0.1:${p}`);
  const psp = createPspSandbox({
    apiKey: secrets.PSP_API_KEY, webhookSecret: secrets.PAYMENT_WEBHOOK_SECRET, webhookUrl: `${apiUrls[0]}/payments/webhook`,
    webhookAttempts: 8, webhookBackoffMs: 250,
    // Injected 5xx answers are the point here, not news: the sandbox logs only fatal errors.
    logger: logger.child({ component: 'psp-sandbox' }, { level: 'fatal' }),
  });
  const { url: pspUrl } = await psp.listen(0);
  undo.push(() => psp.close());
  const notifyLog = path.join(o.runDir, 'notify.log');
  const receiver = await startNotifyReceiver(notifyLog);
  undo.push(() => receiver.close());

  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', NODE_ENV: 'test', LOG_LEVEL: 'warn',
    DATABASE_URL: databaseUrl, REDIS_URL: `redis://127.0.0.1:${redisPort}`, KAFKA_BROKERS: brokers.join(','), KAFKA_TOPIC_PREFIX: '',
    PSP_URL: pspUrl, ...secrets, NOTIFY_WEBHOOK_URL: receiver.url, PUBLIC_BASE_URL: apiUrls[0]!,
    HOLD_TTL_S: String(o.holdTtlS), PAYMENT_GRACE_S: String(o.graceS), HOLD_RATE_LIMIT: '1000000',
    METRICS_PORT: '0', SEARCH_INDEX: 'off', SEARCH_CACHE_TTL_S: '0', KAFKAJS_NO_PARTITIONER_WARNING: '1',
    // A killed worker's job is taken up again within seconds (BullMQ's lock and stalled check), as are leases.
    QUEUE_PREFIX: 'bull', JOB_LOCK_S: '5', LEASE_S: '10',
  };
  const procs: Proc[] = [];
  apiPorts.forEach((port, i) => procs.push(supervise(o.root, o.runDir, 'api', i + 1, 'api/server.ts', { ...env, PORT: String(port) })));
  const workerKinds = readProcfile(path.join(o.root, 'Procfile')).filter((s) => !NOT_DOUBLED.has(s.name));
  for (const spec of workerKinds) {
    const entry = spec.args.at(-1)!.replace(/^dist\/(.+)\.js$/, '$1.ts');
    if (!existsSync(path.join(o.root, entry))) throw new Error(`Procfile ${spec.name}: no ${entry}`);
    for (const i of [1, 2]) procs.push(supervise(o.root, o.runDir, spec.name, i, entry, env));
  }
  undo.push(() => Promise.all(procs.map((p) => p.stop())));
  for (const url of apiUrls) await waitFor(`${url}/health`, async () => (await fetch(`${url}/health`)).ok, 180_000, 500);

  const admin = new pg.Pool({ connectionString: ADMIN_DB, max: 2 });
  let redisChain: Promise<void> = Promise.resolve();
  let kafkaChain: Promise<void> = Promise.resolve();
  const flusher = () => new Redis(redisPort, '127.0.0.1', { maxRetriesPerRequest: 1, lazyConnect: true });

  return {
    databaseUrl, dbName, brokers, pspUrl, apiUrls, psp, receiver, notifyLog, procs, secrets, env, queuePrefix: 'bull',
    workerKinds: workerKinds.map((s) => s.name),
    redisFlushAll: async () => {
      const r = flusher();
      try {
        await r.connect();
        await r.flushall();
      } finally {
        r.disconnect();
      }
    },
    // One restart at a time per server: two overlapping restarts would start two servers on one port, the second
    // failing to bind and the first left running untracked.
    redisRestart: (downMs: number) => (redisChain = redisChain.catch(() => undefined).then(async () => {
      await killRedis();
      await new Promise((r) => setTimeout(r, downMs));
      await startRedis();
    })),
    kafkaRestart: (downMs: number) => (kafkaChain = kafkaChain.catch(() => undefined).then(async () => {
      await stopKafka();
      await new Promise((r) => setTimeout(r, downMs));
      await startKafka();
    })),
    /** pg_terminate_backend of every connection the app's processes hold to the run's database. */
    pgTerminate: async (): Promise<number> => {
      const { rows } = await admin.query(`SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
        WHERE datname = $1 AND pid <> pg_backend_pid() AND application_name <> 'check-invariants'`, [dbName]);
      return rows[0].n as number;
    },
    async stop(keepDb: boolean) {
      await Promise.all(procs.map((p) => p.stop()));
      await psp.close();
      await receiver.close();
      await stopKafka();
      await killRedis();
      if (!keepDb) await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => undefined);
      await admin.end();
    },
  };
}

/** Starts the topology; when a step fails, what is up so far is taken down in reverse (nothing left behind). */
export async function startTopology(o: TopologyOptions) {
  const undo: (() => Promise<unknown>)[] = [];
  try {
    return await build(o, undo);
  } catch (e) {
    for (const step of undo.reverse()) await step().catch(() => undefined);
    throw e;
  }
}
export type Topology = Awaited<ReturnType<typeof build>>;
