/**
 * CPU per operation, by process — the figure that survives a busy machine (latency does not). The whole system
 * (`npm start`, Kafka included) on a copy of the bench:data catalogue; first an idle window, then each kind of
 * request on its own at a moderate open-loop rate. A hold's window lasts until its events are published (the
 * outbox drained), so the pump's work is counted with the hold that caused it.
 *
 *   npm run bench:cost
 *   npm run bench:cost -- --holds 2000 --hold-rate 200 --searches 4000 --search-rate 400 --stays 0
 *
 * Options (defaults): --holds (3000) --hold-rate (200) --searches (6000) --search-rate (400) --stays (6000)
 *   --stays-rate (400) --idle (6 s) --ttl (30) --port (5400) --api-workers (2: API_WORKERS) --node-options (NODE_OPTIONS for the system's processes, e.g.
 *   "--require bench/profile-on-signal.cjs" to profile on SIGUSR2; Node refuses --cpu-prof there) and the dataset's (see bench/data.ts).
 * Printed per process: idle cores, then ms of CPU per request of each kind, gross (all CPU in its window) and net
 * (minus the idle rate over the same window), plus pg_stat_database counters per request.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import pg from 'pg';
import { datasetArgs } from './data.js';
import { ROOT, ensureBuild, envStr, fmt, machineNote, printTable, sleep } from './lib.js';
import { cloneDatabase, dropDatabase, ensureTemplate } from './dataset/load.js';
import { rngFor } from './dataset/generate.js';
import { CpuSampler } from './peak/cpu.js';
import { openLoop, type StreamSpec } from './peak/loadgen.js';
import { startSystem, type RunningSystem } from './peak/system.js';
import { workload } from './peak/workload.js';
import { spawnSync } from 'node:child_process';

const OPTIONS = {
  holds: { type: 'string' }, 'hold-rate': { type: 'string' }, searches: { type: 'string' }, 'search-rate': { type: 'string' },
  stays: { type: 'string' }, 'stays-rate': { type: 'string' }, idle: { type: 'string' }, ttl: { type: 'string' }, port: { type: 'string' }, 'node-options': { type: 'string' }, 'api-workers': { type: 'string' },
} as const;

interface Window {
  name: string; requests: number; seconds: number; used: Record<string, number>; db: Record<string, number>; p50: number; p99: number;
  tables: Record<string, Record<string, number>>;
}

const NOT_SYSTEM = new Set(['load generator', 'bench checks (postgres)']);

async function counters(c: pg.Client, database: string): Promise<Record<string, number>> {
  const { rows } = await c.query<Record<string, string>>(`
    SELECT xact_commit, xact_rollback, tup_inserted, tup_updated, tup_returned, tup_fetched, blks_hit
    FROM pg_stat_database WHERE datname = $1`, [database]);
  return Object.fromEntries(Object.entries(rows[0] ?? {}).map(([k, v]) => [k, Number(v)]));
}

/** Per table: scans and rows read/written (pg_stat_user_tables; the stats collector lags ~0.5 s). */
async function tableCounters(c: pg.Client): Promise<Record<string, Record<string, number>>> {
  const { rows } = await c.query<Record<string, string>>(`
    SELECT relname, seq_scan, seq_tup_read, idx_scan, idx_tup_fetch, n_tup_ins, n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables`);
  return Object.fromEntries(rows.map(({ relname, ...r }) => [relname!, Object.fromEntries(Object.entries(r).map(([k, v]) => [k, Number(v ?? 0)]))]));
}

async function main() {
  const { options: dataset, rest } = datasetArgs(process.argv.slice(2), OPTIONS);
  const num = (k: string, def: number) => (rest[k] === undefined ? def : Number(rest[k]));
  const port = num('port', 5400);
  const tag = `${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
  const database = `bench_cost_${tag}`;
  console.log(`bench:cost ${machineNote()}\ndataset ${JSON.stringify(dataset)}`);
  const template = await ensureTemplate(dataset, console.log);
  const url = await cloneDatabase(template, database);
  if (spawnSync('bash', ['scripts/kafka.sh', 'start'], { cwd: ROOT, stdio: 'inherit' }).status !== 0) throw new Error('no Kafka');
  ensureBuild(envStr('BUILD', 'auto'));
  const monitor = new pg.Client({ connectionString: url });
  await monitor.connect();
  const monitorPid = (await monitor.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
  const jwtSecret = `cost-${tag}-${randomBytes(16).toString('hex')}`;
  let system: RunningSystem | null = null;
  const sampler = new CpuSampler({
    system: () => system?.processes() ?? new Map(), monitor, database, benchBackends: () => new Set([monitorPid]), extra: () => new Map(),
  }, 250);
  const windows: Window[] = [];
  try {
    system = await startSystem({
      databaseUrl: url, port, dashboardPort: port + 1, pspPort: port + 2, redisUrl: envStr('BENCH_REDIS_URL', 'redis://127.0.0.1:6379/13'),
      prefix: `bench:${tag}:`, kafkaPrefix: 'bench.', kafkaBrokers: envStr('KAFKA_BROKERS', '127.0.0.1:9092'), jwtSecret, searchCacheTtlS: num('ttl', 30),
      extra: {
        API_WORKERS: String(num('api-workers', 2)),
        ...(typeof rest['node-options'] === 'string' ? { NODE_OPTIONS: rest['node-options'] } : {}),
      },
    }, `/tmp/bench-cost-${tag}.log`);
    console.log(`system up (log ${system.logFile}); settling 3 s`);
    await sleep(3000);
    await sampler.start();
    const w = workload(dataset, { hotShare: 0.5, holdWindowDays: 365, jwtSecret, seed: dataset.seed });
    const measure = async (name: string, run: () => Promise<{ requests: number; p50: number; p99: number }>) => {
      const c0 = await counters(monitor, database);
      const t0s = await tableCounters(monitor);
      const t0 = Date.now();
      const r = await run();
      await sleep(600);
      const t1 = Date.now();
      await sleep(400);
      const c1 = await counters(monitor, database);
      const t1s = await tableCounters(monitor);
      const tables = Object.fromEntries(Object.entries(t1s).map(([t, m]) => [t, Object.fromEntries(Object.entries(m).map(([k, v]) => [k, v - (t0s[t]?.[k] ?? 0)]))]));
      const win = sampler.window(t0, t1);
      windows.push({ name, ...r, seconds: win.seconds, used: win.used, tables, db: Object.fromEntries(Object.entries(c1).map(([k, v]) => [k, v - (c0[k] ?? 0)])) });
      console.log(`${name}: ${r.requests} requests in ${fmt(win.seconds, 1)} s, p50 ${fmt(r.p50, 1)} ms, p99 ${fmt(r.p99, 1)} ms`);
    };
    const drained = async () => {
      for (;;) {
        const { rows } = await monitor.query<{ n: number }>(`SELECT count(*)::int AS n FROM outbox WHERE published_at IS NULL`);
        if (rows[0]!.n === 0) return;
        await sleep(100);
      }
    };
    const load = async (spec: StreamSpec, count: number, after?: () => Promise<void>) => {
      const res = await openLoop(system!.url, [spec], count / spec.rate, {
        connections: 32, timeoutMs: 30_000, arrivals: 'uniform', rng: rngFor(dataset.seed, 300), maxInFlight: 50_000,
      });
      if (after) await after();
      const s = res.streams[0]!;
      const lat = Float64Array.from(s.latency).sort();
      const pct = (p: number) => lat[Math.min(lat.length - 1, Math.floor((p / 100) * lat.length))] ?? NaN;
      const bad = new Map<string, number>();
      s.outcome.forEach((o, i) => { if (s.status[i]! >= 500 || s.status[i] === 0) bad.set(s.labels[o]!, (bad.get(s.labels[o]!) ?? 0) + 1); });
      if (bad.size) console.log(`  ${spec.name}: errors ${[...bad].map(([k, n]) => `${k}×${n}`).join(' ')}`);
      return { requests: s.due.length, p50: pct(50), p99: pct(99) };
    };
    await measure('idle', async () => {
      await sleep(num('idle', 6) * 1000);
      return { requests: 0, p50: NaN, p99: NaN };
    });
    if (num('holds', 3000) > 0) await measure('hold', () => load({ name: 'hold', rate: num('hold-rate', 200), next: w.hold }, num('holds', 3000), drained));
    if (num('searches', 6000) > 0) await measure('search', () => load({ name: 'search', rate: num('search-rate', 400), next: w.search }, num('searches', 6000)));
    if (num('stays', 6000) > 0) await measure('stays', () => load({ name: 'stays', rate: num('stays-rate', 400), next: w.stays }, num('stays', 6000)));
  } finally {
    await sampler.stop();
    await system?.stop().catch(() => {});
    await monitor.end().catch(() => {});
    await dropDatabase(database).catch(() => {});
    // The system's keys: cache / limiter under `bench:<tag>:`, BullMQ under `bench<tag>` (QUEUE_PREFIX has no colons).
    const redis = new Redis(envStr('BENCH_REDIS_URL', 'redis://127.0.0.1:6379/13'), { lazyConnect: true, maxRetriesPerRequest: 1 });
    await redis.connect().then(async () => {
      for (const match of [`bench:${tag}:*`, `bench${tag}:*`]) {
        for await (const keys of redis.scanStream({ match, count: 1000 })) if ((keys as string[]).length) await redis.del(...(keys as string[]));
      }
    }).catch(() => {});
    redis.disconnect();
  }
  const idle = windows.find((x) => x.name === 'idle')!;
  const idleRate = (g: string) => (idle.used[g] ?? 0) / (idle.seconds || 1);
  const ops = windows.filter((x) => x.name !== 'idle');
  const groups = [...new Set(windows.flatMap((x) => Object.keys(x.used)))].sort((a, b) =>
    ops.reduce((s, o) => s + (o.used[b] ?? 0), 0) - ops.reduce((s, o) => s + (o.used[a] ?? 0), 0));
  const per = (o: Window, g: string) => (1000 * (o.used[g] ?? 0)) / Math.max(1, o.requests);
  const net = (o: Window, g: string) => (1000 * ((o.used[g] ?? 0) - idleRate(g) * o.seconds)) / Math.max(1, o.requests);
  const sum = (f: (g: string) => number) => groups.filter((g) => !NOT_SYSTEM.has(g)).reduce((s, g) => s + f(g), 0);
  printTable('CPU by process: idle cores; ms per request (gross / net of idle)', [
    ['process', 'idle cores', ...ops.map((o) => `${o.name} ms`)],
    ...groups.map((g) => [g, fmt(idleRate(g), 3), ...ops.map((o) => `${fmt(per(o, g), 3)} / ${fmt(net(o, g), 3)}`)]),
    ['= system', fmt(sum(idleRate), 3), ...ops.map((o) => `${fmt(sum((g) => per(o, g)), 3)} / ${fmt(sum((g) => net(o, g)), 3)}`)],
  ]);
  for (const o of ops) {
    const n = Math.max(1, o.requests);
    console.log(`  ${o.name}: database per request ${Object.entries(o.db).map(([k, v]) => `${k} ${fmt(v / n, 2)}`).join(', ')}`);
    const busy = Object.entries(o.tables).filter(([, m]) => Object.values(m).some((v) => v > 0))
      .sort((a, b) => (b[1].seq_tup_read! + b[1].idx_tup_fetch!) - (a[1].seq_tup_read! + a[1].idx_tup_fetch!)).slice(0, 6);
    for (const [t, m] of busy) console.log(`    ${t}: ${Object.entries(m).filter(([, v]) => v).map(([k, v]) => `${k} ${fmt(v / n, 2)}`).join(', ')}`);
  }
}

await main();
