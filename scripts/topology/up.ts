// The whole topology on one host, in the foreground: a PostgreSQL primary and its streaming replica, a Redis Cluster
// (3 masters, 3 replicas), a 3-broker Kafka, the workers, N API processes behind HAProxy. Ctrl-C (or SIGTERM) brings it
// all down again and deletes its data; `npm run topology -- down` cleans up after a run that was killed.
//   npm run topology                 TOPOLOGY_DIR (/tmp/booking-topology), TOPOLOGY_APIS (3), TOPOLOGY_PORT (8080)
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { migrate } from '../../shared/db/migrate.js';
import { freePort } from '../free-port.js';
import { parseProcfile } from '../procfile.js';
import { topologyPostgres } from './postgres.js';
import { startRedisCluster, type RedisCluster } from './redis-cluster.js';
import { spawnApi, stopApi, waitReady, type ApiProcess } from './apis.js';
import { startHaproxy, type Haproxy } from './haproxy.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const DIR = process.env.TOPOLOGY_DIR ?? '/tmp/booking-topology';
const APIS = Number(process.env.TOPOLOGY_APIS ?? 3);
const PORT = Number(process.env.TOPOLOGY_PORT ?? 8080);
const KAFKA_PORT = Number(process.env.TOPOLOGY_KAFKA_PORT ?? 29092);
const log = (m: string) => console.error(`[topology] ${m}`);
const kafkaCluster = (cmd: string) => execFileSync('bash', [path.join(ROOT, 'scripts/kafka-cluster.sh'), cmd], {
  env: { ...process.env, KAFKA_CLUSTER_DIR: path.join(DIR, 'kafka'), KAFKA_CLUSTER_PORT: String(KAFKA_PORT) }, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8',
});

function down(): void {
  const pg = topologyPostgres({ ...process.env, TOPOLOGY_DIR: DIR });
  try { kafkaCluster('destroy'); } catch { /* not there */ }
  pg.down();
  fs.rmSync(DIR, { recursive: true, force: true });
}

/** A Procfile process (built entries `node dist/X.js`) run from source under tsx. */
function spawnWorker(name: string, args: string[], env: Record<string, string>): ChildProcess {
  const entry = args[0]!.replace(/^dist\//, '').replace(/\.js$/, '.ts');
  return spawn(process.execPath, ['--import', 'tsx', entry], { cwd: ROOT, env: { PATH: process.env.PATH!, ...env, PROC_NAME: name }, stdio: ['ignore', 'ignore', 'inherit'] });
}

async function up(): Promise<void> {
  fs.mkdirSync(DIR, { recursive: true, mode: 0o755 });
  const started: { workers: ChildProcess[]; apis: ApiProcess[]; haproxy?: Haproxy; redis?: RedisCluster } = { workers: [], apis: [] };
  let stopping = false;
  const stopAll = async (code: number) => {
    if (stopping) return;
    stopping = true;
    log('bringing the topology down');
    await started.haproxy?.stop();
    await Promise.all(started.apis.map((a) => stopApi(a)));
    await Promise.all(started.workers.map((w) => (w.exitCode !== null ? null : new Promise((r) => { w.once('exit', r); w.kill('SIGTERM'); }))));
    await started.redis?.stop();
    down();
    process.exit(code);
  };
  process.on('SIGINT', () => void stopAll(0));
  process.on('SIGTERM', () => void stopAll(0));
  try {
    log('PostgreSQL: a primary and a pg_basebackup replica');
    const pg = topologyPostgres({ ...process.env, TOPOLOGY_DIR: DIR }).up();
    await migrate(pg.DATABASE_URL);
    log('Redis Cluster: 3 masters, 3 replicas');
    started.redis = await startRedisCluster(path.join(DIR, 'redis'), await Promise.all(Array.from({ length: 6 }, () => freePort())));
    log('Kafka: 3 brokers (KRaft)');
    kafkaCluster('start');
    const env: Record<string, string> = {
      NODE_ENV: 'development', ...pg, REDIS_CLUSTER_NODES: started.redis.nodes.join(','), KAFKA_BROKERS: kafkaCluster('brokers').trim(),
      JWT_SECRET: randomBytes(32).toString('hex'), PAYMENT_WEBHOOK_SECRET: randomBytes(32).toString('hex'), PSP_API_KEY: randomBytes(16).toString('hex'),
      DASHBOARD_PASSWORD: randomBytes(12).toString('hex'), PUBLIC_BASE_URL: `http://127.0.0.1:${PORT}`, SHUTDOWN_DELAY_S: '2', LOG_LEVEL: 'warn',
    };
    const envFile = path.join(DIR, 'topology.env');
    fs.writeFileSync(envFile, Object.entries(env).map(([k, v]) => `export ${k}=${v}`).join('\n') + '\n', { mode: 0o600 });
    for (const spec of parseProcfile(fs.readFileSync(path.join(ROOT, 'Procfile'), 'utf8'))) {
      if (spec.name === 'release' || spec.name === 'api') continue;
      started.workers.push(spawnWorker(spec.name, spec.args, env));
    }
    for (let i = 0; i < APIS; i++) started.apis.push(spawnApi(`api${i + 1}`, await freePort(), { ...env, METRICS_PORT: '0' }));
    await Promise.all(started.apis.map((a) => waitReady(a.port, 120_000)));
    started.haproxy = await startHaproxy(path.join(DIR, 'haproxy'), {
      port: PORT, statsPort: await freePort(), backends: started.apis.map((a) => ({ name: a.name, port: a.port })),
    });
    log(`up: the API behind HAProxy at http://127.0.0.1:${PORT} (${APIS} processes), its environment in ${envFile}`);
    console.log(`API=http://127.0.0.1:${PORT}`);
  } catch (e) {
    log(`failed: ${(e as Error).message}`);
    await stopAll(1);
  }
}

if (process.argv[2] === 'down') down();
else await up();
