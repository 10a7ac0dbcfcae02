// The whole topology on one host as a library: a PostgreSQL primary and its streaming replica, a Redis Cluster
// (3 masters, 3 replicas), a 3-broker Kafka, every Procfile worker once, N API processes behind HAProxy; and the
// faults a run applies to it (kill a Redis master, kill and restart a broker, kill an API, stop and start the
// replica). `npm run topology` (up.ts), test/integration/topology.test.ts and bench/topology.ts use it.
//
// Start-up order matters on a small, loaded machine: the APIs start first and one after the other (the first one
// compiles the TypeScript into tsx's cache, the next ones read it), each waited for on /ready; the workers follow.
// Every process gets ports of its own (the sandbox provider, the dashboard; no worker metrics ports), so nothing
// lands on a port of another `npm start` or test run on the same host.
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { migrate } from '../../shared/db/migrate.js';
import { freePort } from '../free-port.js';
import { parseProcfile } from '../procfile.js';
import { topologyPostgres, startPrimary } from './postgres.js';
import { startRedisCluster, type RedisCluster } from './redis-cluster.js';
import { spawnApi, stopApi, waitReady, type ApiProcess } from './apis.js';
import { startHaproxy, type Haproxy } from './haproxy.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const exec = promisify(execFile);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface TopologyOptions {
  dir: string;
  apis: number;
  port: number;
  kafkaPort: number;
  /** PG_PRIMARY_PORT / PG_REPLICA_PORT (55432 / 55433 unless set) */
  pgPrimaryPort?: number;
  pgReplicaPort?: number;
  /** Extra environment of every process (HOLD_TTL_S, HOLD_RATE_LIMIT, …). */
  env?: Record<string, string>;
  /** How long each API may take to answer /ready (default 180 s: a cold tsx start on a loaded machine). */
  readyTimeoutMs?: number;
  log?: (m: string) => void;
  /**
   * The single-node topology instead, for comparison: one PostgreSQL (no replica), one Redis, one Kafka broker
   * (replication factor 1), the workers and one API, which the load reaches directly (no HAProxy). No faults.
   */
  single?: boolean;
}

export interface Topology {
  env: Record<string, string>;
  envFile: string;
  url: string;
  apis: ApiProcess[];
  workers: Map<string, ChildProcess>;
  haproxy: Haproxy | undefined;
  redis: RedisCluster;
  pg: ReturnType<typeof topologyPostgres>;
  kafka(cmd: string, ...args: string[]): Promise<string>;
  /** SIGKILL of the master serving `slot`'s keys (default: the first master); resolves once its replica took over. */
  killRedisMaster(): Promise<{ killed: number; promoted: number }>;
  /** SIGKILL of broker n (1-3), then `restartBroker(n)`. */
  killBroker(n: number): Promise<void>;
  restartBroker(n: number): Promise<void>;
  /** SIGKILL of API i, then it is started again on its port and waited for (HAProxy takes it back on its checks). */
  killApi(i: number): Promise<void>;
  restartApi(i: number): Promise<void>;
  stopReplica(): Promise<void>;
  startReplica(): Promise<void>;
  /** Everything down and its data deleted. */
  stop(): Promise<void>;
}

/** Redis Cluster masters as `CLUSTER NODES` on `port` sees them: port → role. */
export function redisRoles(port: number): Map<number, { role: 'master' | 'slave'; id: string; masterId: string; failed: boolean }> {
  const out = spawnSync('redis-cli', ['-p', String(port), 'cluster', 'nodes'], { encoding: 'utf8' }).stdout ?? '';
  const roles = new Map<number, { role: 'master' | 'slave'; id: string; masterId: string; failed: boolean }>();
  for (const line of out.trim().split('\n').filter(Boolean)) {
    const [id, addr, flags, masterId] = line.split(' ');
    const p = Number(addr!.split('@')[0]!.split(':')[1]);
    roles.set(p, { role: flags!.includes('master') ? 'master' : 'slave', id: id!, masterId: masterId!, failed: /fail/.test(flags!) });
  }
  return roles;
}

async function redisCli(port: number, ...args: string[]): Promise<string> {
  try {
    return (await exec('redis-cli', ['-p', String(port), ...args], { encoding: 'utf8', timeout: 20_000 })).stdout;
  } catch {
    return '';
  }
}

async function redisRolesAsync(port: number): Promise<ReturnType<typeof redisRoles>> {
  const out = await redisCli(port, 'cluster', 'nodes');
  const roles: ReturnType<typeof redisRoles> = new Map();
  for (const line of out.trim().split('\n').filter(Boolean)) {
    const [id, addr, flags, masterId] = line.split(' ');
    roles.set(Number(addr!.split('@')[0]!.split(':')[1]), { role: flags!.includes('master') ? 'master' : 'slave', id: id!, masterId: masterId!, failed: /fail/.test(flags!) });
  }
  return roles;
}

/** pg_ctl without blocking the event loop (as the postgres user when root, as postgres.ts runs it). */
async function pgCtl(args: string[]): Promise<void> {
  const bin = path.join(process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin', 'pg_ctl');
  const [file, argv] = process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
  await exec(file, argv, { encoding: 'utf8', timeout: 90_000 });
}

/** One redis-server (the single-node topology's), in the RedisCluster shape. */
async function startRedisServer(dir: string, port: number): Promise<RedisCluster> {
  fs.mkdirSync(dir, { recursive: true });
  const server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' });
  for (let t = 0; spawnSync('redis-cli', ['-p', String(port), 'ping'], { encoding: 'utf8' }).stdout?.trim() !== 'PONG'; t++) {
    if (t > 100) throw new Error('redis-server did not answer');
    await sleep(100);
  }
  return { nodes: [`127.0.0.1:${port}`], servers: [server], stop: async () => stopChild(server, 'SIGKILL') };
}

/** A Procfile process (built entries `node dist/X.js`) run from source under tsx. */
function spawnWorker(name: string, args: string[], env: Record<string, string>): ChildProcess {
  const entry = args[0]!.replace(/^dist\//, '').replace(/\.js$/, '.ts');
  return spawn(process.execPath, ['--import', 'tsx', entry], { cwd: ROOT, env: { PATH: process.env.PATH!, ...env, PROC_NAME: name }, stdio: ['ignore', 'ignore', 'inherit'] });
}

async function stopChild(c: ChildProcess, signal: NodeJS.Signals = 'SIGTERM', killAfterMs = 20_000): Promise<void> {
  if (c.exitCode !== null || c.signalCode !== null) return;
  const exited = new Promise((r) => c.once('exit', r));
  c.kill(signal);
  const t = setTimeout(() => c.kill('SIGKILL'), killAfterMs);
  await exited;
  clearTimeout(t);
}

/** Removes what a topology left under `dir` (a run that was killed): its PostgreSQL pair, brokers and data. */
export function destroyTopology(dir: string, env: NodeJS.ProcessEnv = process.env): void {
  const pg = topologyPostgres({ ...env, TOPOLOGY_DIR: dir });
  spawnSync('bash', [path.join(ROOT, 'scripts/kafka-cluster.sh'), 'destroy'], {
    env: { ...env, KAFKA_CLUSTER_DIR: path.join(dir, 'kafka') }, stdio: ['ignore', 'ignore', 'inherit'],
  });
  if (fs.existsSync(path.join(dir, 'kafka-single'))) {
    spawnSync('bash', [path.join(ROOT, 'scripts/kafka.sh'), 'stop'], { env: { ...env, KAFKA_HOME_DIR: path.join(dir, 'kafka-single') }, stdio: ['ignore', 'ignore', 'inherit'] });
  }
  pg.down();
  // Redis servers and HAProxy of a killed run: their pid files (written by startTopology).
  for (const f of ['redis.pids', 'haproxy.pid']) {
    const file = path.join(dir, f);
    if (!fs.existsSync(file)) continue;
    for (const pid of fs.readFileSync(file, 'utf8').split(/\s+/).filter(Boolean).map(Number)) {
      try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
    }
  }
  fs.rmSync(dir, { recursive: true, force: true });
}

export async function startTopology(o: TopologyOptions): Promise<Topology> {
  const log = o.log ?? ((m: string) => console.error(`[topology] ${m}`));
  const readyMs = o.readyTimeoutMs ?? 180_000;
  fs.mkdirSync(o.dir, { recursive: true, mode: 0o755 });
  fs.chmodSync(o.dir, 0o755); // a mkdtemp directory is 0700: the postgres user must reach its clusters
  const pgEnv = { ...process.env, TOPOLOGY_DIR: o.dir, ...(o.pgPrimaryPort ? { PG_PRIMARY_PORT: String(o.pgPrimaryPort) } : {}), ...(o.pgReplicaPort ? { PG_REPLICA_PORT: String(o.pgReplicaPort) } : {}) };
  const pg = topologyPostgres(pgEnv);
  const kafkaEnv = { ...process.env, KAFKA_CLUSTER_DIR: path.join(o.dir, 'kafka'), KAFKA_CLUSTER_PORT: String(o.kafkaPort) };
  // Asynchronous, so the APIs' and the caller's event loops go on while a broker starts.
  const kafka = async (cmd: string, ...args: string[]) =>
    (await exec('bash', [path.join(ROOT, 'scripts/kafka-cluster.sh'), cmd, ...args], { env: kafkaEnv, encoding: 'utf8', timeout: 240_000 })).stdout;
  const apis: ApiProcess[] = [];
  const workers = new Map<string, ChildProcess>();
  let haproxy: Haproxy | undefined;
  let redis: RedisCluster | undefined;
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await haproxy?.stop();
    await Promise.all(apis.map((a) => stopApi(a)));
    await Promise.all([...workers.values()].map((w) => stopChild(w)));
    await redis?.stop();
    destroyTopology(o.dir, pgEnv);
  };
  try {
    let urls: { DATABASE_URL: string; DATABASE_READ_URL?: string };
    let redisEnv: Record<string, string>;
    let brokers: string;
    if (o.single) {
      log('single node: one PostgreSQL, one Redis, one Kafka broker, one API');
      urls = { DATABASE_URL: startPrimary(pg.primaryDir, pg.primaryPort).url.replace(/postgres$/, 'booking') };
      await migrate(urls.DATABASE_URL!);
      redis = await startRedisServer(path.join(o.dir, 'redis'), await freePort());
      redisEnv = { REDIS_URL: `redis://${redis.nodes[0]}` };
      const single = { ...process.env, KAFKA_HOME_DIR: path.join(o.dir, 'kafka-single'), KAFKA_PORT: String(o.kafkaPort + 50), KAFKA_CONTROLLER_PORT: String(o.kafkaPort + 51),
        KAFKA_LIBS_DIR: process.env.KAFKA_LIBS_DIR ?? path.join(ROOT, '.kafka/libs') };
      await exec('bash', [path.join(ROOT, 'scripts/kafka.sh'), 'start'], { env: single, encoding: 'utf8', timeout: 240_000 });
      brokers = `127.0.0.1:${o.kafkaPort + 50}`;
    } else {
      log('PostgreSQL: a primary and a pg_basebackup replica');
      urls = pg.up();
      await migrate(urls.DATABASE_URL!);
      log('Redis Cluster: 3 masters, 3 replicas');
      redis = await startRedisCluster(path.join(o.dir, 'redis'), await Promise.all(Array.from({ length: 6 }, () => freePort())));
      redisEnv = { REDIS_CLUSTER_NODES: redis.nodes.join(',') };
      log('Kafka: 3 brokers (KRaft)');
      await kafka('start');
      brokers = (await kafka('brokers')).trim();
    }
    fs.writeFileSync(path.join(o.dir, 'redis.pids'), redis.servers.map((s) => s.pid).join(' '));
    const [pspPort, dashboardPort, statsPort] = [await freePort(), await freePort(), await freePort()];
    const env: Record<string, string> = {
      NODE_ENV: 'development', ...urls, ...redisEnv, KAFKA_BROKERS: brokers,
      JWT_SECRET: randomBytes(32).toString('hex'), PAYMENT_WEBHOOK_SECRET: randomBytes(32).toString('hex'), PSP_API_KEY: randomBytes(16).toString('hex'),
      DASHBOARD_PASSWORD: randomBytes(12).toString('hex'), PUBLIC_BASE_URL: `http://127.0.0.1:${o.port}`, SHUTDOWN_DELAY_S: '2', LOG_LEVEL: 'warn',
      // Ports of its own: the sandbox provider (and the URL every process calls it at), the dashboard; no metrics ports.
      PSP_PORT: String(pspPort), PSP_URL: `http://127.0.0.1:${pspPort}`, DASHBOARD_PORT: String(dashboardPort), METRICS_PORT: '0',
      ...o.env,
    };
    const envFile = path.join(o.dir, 'topology.env');
    fs.writeFileSync(envFile, Object.entries(env).map(([k, v]) => `export ${k}=${v}`).join('\n') + '\n', { mode: 0o600 });
    for (let i = 0; i < (o.single ? 1 : o.apis); i++) {
      const t0 = Date.now();
      const api = spawnApi(`api${i + 1}`, await freePort(), env);
      apis.push(api);
      await waitReady(api.port, readyMs, api.child);
      log(`${api.name} ready on :${api.port} after ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    }
    if (!o.single) {
      haproxy = await startHaproxy(path.join(o.dir, 'haproxy'), { port: o.port, statsPort, backends: apis.map((a) => ({ name: a.name, port: a.port })) });
      fs.writeFileSync(path.join(o.dir, 'haproxy.pid'), String(haproxy.child.pid));
      for (let t = 0; Object.values(await haproxy.states()).filter((s) => s === 'UP').length < apis.length; t++) {
        if (t > 200) throw new Error(`HAProxy does not see every API up: ${JSON.stringify(await haproxy.states())}`);
        await sleep(100);
      }
    }
    log('workers: every Procfile process but the API');
    for (const spec of parseProcfile(fs.readFileSync(path.join(ROOT, 'Procfile'), 'utf8'))) {
      if (spec.name === 'release' || spec.name === 'api') continue;
      const w = spawnWorker(spec.name, spec.args, env);
      w.once('exit', (code, sig) => { if (!stopping) log(`worker ${spec.name} exited (${code ?? sig})`); });
      workers.set(spec.name, w);
    }
    // The sandbox provider answers before anyone pays.
    for (let t = 0; ; t++) {
      try { if ((await fetch(`${env.PSP_URL}/health`)).status === 200) break; } catch { /* not yet */ }
      if (t > readyMs / 250) throw new Error('the sandbox provider did not answer');
      await sleep(250);
    }
    const h = haproxy;
    const r = redis;
    const topo: Topology = {
      env, envFile, url: o.single ? `http://127.0.0.1:${apis[0]!.port}` : `http://127.0.0.1:${o.port}`, apis, workers, haproxy: h, redis: r, pg, kafka, stop,
      async killRedisMaster() {
        // Asynchronous throughout (redis-cli through execFile): the caller's load goes on while the cluster fails over.
        const ports = r.nodes.map((n) => Number(n.split(':')[1]));
        const alive = ports.filter((p, i) => r.servers[i]!.exitCode === null && r.servers[i]!.signalCode === null);
        let roles = await redisRolesAsync(alive[0]!);
        // A loaded machine: redis-cli may time out; ask again (another node) until one answers with a master.
        for (let t = 1; ![...roles.values()].some((v) => v.role === 'master'); t++) {
          if (t > 20) throw new Error('no Redis node answered CLUSTER NODES');
          await sleep(500);
          roles = await redisRolesAsync(alive[t % alive.length]!);
        }
        const victim = [...roles].find(([p, v]) => v.role === 'master' && !v.failed && alive.includes(p))![0];
        const victimId = roles.get(victim)!.id;
        const replica = [...roles].find(([, v]) => v.masterId === victimId)?.[0];
        const server = r.servers[ports.indexOf(victim)]!;
        const exited = new Promise((res) => server.once('exit', res));
        server.kill('SIGKILL');
        await exited;
        const witness = alive.find((p) => p !== victim)!;
        for (let t = 0; ; t++) {
          const now = await redisRolesAsync(witness);
          const promoted = replica !== undefined && now.get(replica)?.role === 'master';
          const ok = /cluster_state:ok/.test(await redisCli(witness, 'cluster', 'info'));
          if (promoted && ok) return { killed: victim, promoted: replica! };
          if (t > 300) throw new Error(`no replica took over from :${victim} in 30 s`);
          await sleep(100);
        }
      },
      async killBroker(n) { await kafka('kill', String(n)); },
      async restartBroker(n) { await kafka('start-node', String(n)); },
      async killApi(i) { await stopApi(apis[i]!, 'SIGKILL'); },
      async restartApi(i) {
        const old = apis[i]!;
        apis[i] = spawnApi(old.name, old.port, env);
        await waitReady(old.port, readyMs, apis[i]!.child);
        for (let t = 0; h && (await h.states())[old.name] !== 'UP'; t++) {
          if (t > 300) throw new Error(`${old.name} not back in HAProxy's pool`);
          await sleep(100);
        }
      },
      async stopReplica() { await pgCtl(['-D', pg.replicaDir, '-m', 'immediate', '-w', '-t', '60', 'stop']); },
      async startReplica() { await pgCtl(['-D', pg.replicaDir, '-l', path.join(pg.replicaDir, 'server.log'), '-w', '-t', '60', 'start']); },
    };
    return topo;
  } catch (e) {
    log(`failed: ${(e as Error).message}`);
    await stop();
    throw e;
  }
}
