/**
 * One peak run: a fresh copy of the dataset, `npm start` on the bench's ports, the phases one after the other
 * (each: warm-up, then the steady window that is measured), then the checks, the pgbench floor and the plans.
 */
import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import pg from 'pg';
import { ROOT, ensureBuild, envStr, generatorFirst, machineNote, sleep } from '../lib.js';
import { rngFor, type DatasetOptions } from '../dataset/generate.js';
import { cloneDatabase, dbUrl, dropDatabase, ensureTemplate } from '../dataset/load.js';
import { CpuSampler, oneAtATime, runCpuTool, type CpuSample, type Queries, type ToolResult } from './cpu.js';
import { openLoop, type StreamSpec } from './loadgen.js';
import { StalenessChecker, countOverlaps, countOversold, stalenessSelfTest, type StalenessReport } from './checks.js';
import { runPgbench, type FloorResult } from './pgbench.js';
import { explainAll, type Plan } from './plans.js';
import { perSecond, streamStats, type SeriesPoint, type StreamStats } from './stats.js';
import { startSystem, type RunningSystem } from './system.js';
import { workload } from './workload.js';
import { printPanels, startPrometheus, type PanelValue, type Prometheus } from './prometheus.js';

export interface PhaseSpec {
  name: string;
  warmupS: number;
  steadyS: number;
  /** hotHold: holds on the hot-car phase's few cars (reported as the stream 'hot hold'). */
  rates: { hold: number; hotHold?: number; search: number; stays: number };
}

export interface RunConfig {
  dataset: DatasetOptions;
  phases: PhaseSpec[];
  ports: { api: number; dashboard: number; psp: number };
  redisUrl: string;
  prefix: string;
  kafkaPrefix: string;
  kafkaBrokers: string;
  searchCacheTtlS: number;
  connections: number;
  arrivals: 'uniform' | 'poisson';
  hotShare: number;
  holdWindowDays: number;
  /** One search in this many is checked for staleness (while the previous check runs, samples are skipped). */
  staleSampleEvery: number;
  floorSeconds: number;
  floorClients: number;
  keepDb: boolean;
  /** API_WORKERS of the system under test; null: its default (what a fresh install runs). */
  apiWorkers: number | null;
  hotPhaseCars: number;
  log: (m: string) => void;
}

export interface OutboxPoint { at: number; unpublished: number; oldestS: number }

export interface PhaseResult {
  spec: PhaseSpec;
  startEpoch: number;
  steadyFromEpoch: number;
  steadyToEpoch: number;
  streams: StreamStats[];
  series: Record<string, SeriesPoint[]>;
  cpu: { seconds: number; used: Record<string, number> };
  tool: ToolResult | null;
  generatorCores: number;
  holdsCreated: number;
  requests: number;
  /** pg_stat_database of this database over the steady window (transactions, rows, blocks). */
  dbCounters: Record<string, number>;
  /** The system's "event loop held" warnings (a second whose event-loop delay passed 50 ms) in the steady window. */
  stalls: Stall[];
}

export interface Stall { at: number; proc: string; pid: number; maxMs: number; p99Ms: number; gcMs: number; gcMaxMs: number }

/** Per process: seconds held, the worst delay, and the longest GC pause among those seconds. */
export function summarizeStalls(stalls: readonly Stall[]): string {
  if (stalls.length === 0) return 'never';
  const by = new Map<string, Stall[]>();
  for (const x of stalls) by.set(x.proc, [...(by.get(x.proc) ?? []), x]);
  return [...by].sort((a, b) => Math.max(...b[1].map((x) => x.maxMs)) - Math.max(...a[1].map((x) => x.maxMs)))
    .map(([proc, xs]) => `${proc} ${xs.length}× (worst ${Math.max(...xs.map((x) => x.maxMs))} ms, GC pause ≤ ${Math.max(...xs.map((x) => x.gcMaxMs))} ms)`).join('; ');
}

/** "event loop held" lines of the system's log (pino JSON, perhaps behind the supervisor's prefix). */
export function readStalls(logFile: string): Stall[] {
  const out: Stall[] = [];
  for (const line of readFileSync(logFile, 'utf8').split('\n')) {
    if (!line.includes('event loop held')) continue;
    try {
      const j = JSON.parse(line.slice(line.indexOf('{'))) as Record<string, number | string>;
      out.push({ at: Number(j.time), proc: String(j.proc), pid: Number(j.pid), maxMs: Number(j.maxMs), p99Ms: Number(j.p99Ms), gcMs: Number(j.gcMs), gcMaxMs: Number(j.gcMaxMs) });
    } catch { /* not a JSON line */ }
  }
  return out;
}

export interface PeakResult {
  startedAt: string;
  machine: string;
  gitRev: string;
  config: Omit<RunConfig, 'log'>;
  database: string;
  phases: PhaseResult[];
  cpuSeries: CpuSample[];
  outboxSeries: OutboxPoint[];
  checks: { overlaps: number; oversold: number; staleness: StalenessReport; selfTest: { detectsTaken: boolean; detectsOmitted: boolean } };
  floor: (FloorResult & { cpu: Record<string, number>; cpuSeconds: number }) | null;
  plans: Plan[];
  sizes: Record<string, number>;
  /** Each Grafana panel query evaluated by a Prometheus that scraped the system during the run (null: no Prometheus). */
  dashboard: PanelValue[] | null;
}

async function flushRedisDb(url: string, prefix: string): Promise<void> {
  const r = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await r.connect();
  try {
    for await (const keys of r.scanStream({ match: `${prefix}*`, count: 1000 })) if ((keys as string[]).length) await r.del(...(keys as string[]));
  } finally {
    r.disconnect();
  }
}

/** Cumulative counters of one database (pg_stat_database; the stats collector lags up to ~0.5 s). */
async function dbCounters(c: Queries, database: string): Promise<Record<string, number>> {
  const { rows } = await c.query<Record<string, string>>(`
    SELECT xact_commit, xact_rollback, tup_inserted, tup_updated, tup_deleted, tup_returned, tup_fetched, blks_hit, blks_read
    FROM pg_stat_database WHERE datname = $1`, [database]);
  return Object.fromEntries(Object.entries(rows[0] ?? {}).map(([k, v]) => [k, Number(v)]));
}

export async function runPeak(cfg: RunConfig): Promise<PeakResult> {
  const log = cfg.log;
  const tag = `${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
  const database = `bench_peak_${tag}`;
  const template = await ensureTemplate(cfg.dataset, log);
  const url = await cloneDatabase(template, database);
  log(`database ${database} (copy of ${template})`);
  const kafka = spawnSync('bash', ['scripts/kafka.sh', 'start'], { cwd: ROOT, stdio: 'inherit' });
  if (kafka.status !== 0) throw new Error('Kafka is not answering and could not be started');
  await flushRedisDb(cfg.redisUrl, cfg.prefix);
  ensureBuild(envStr('BUILD', 'auto'));

  const monitorClient = new pg.Client({ connectionString: url });
  const checker = new pg.Client({ connectionString: url });
  await monitorClient.connect();
  await checker.connect();
  const monitor = oneAtATime(monitorClient);
  const benchPids = new Set<number>();
  for (const c of [monitorClient, checker]) benchPids.add((await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid);
  const jwtSecret = `bench-${tag}-${randomBytes(16).toString('hex')}`;
  let system: RunningSystem | null = null;
  const extra = new Map<number, string>();
  const sampler = new CpuSampler({
    system: () => system?.processes() ?? new Map(), monitor, database, benchBackends: () => benchPids, extra: () => extra,
  });
  const outboxSeries: OutboxPoint[] = [];
  const outboxTimer = setInterval(() => {
    void monitor.query<{ unpublished: number; oldest: number }>(`
      SELECT count(*)::int AS unpublished, coalesce(extract(epoch FROM clock_timestamp() - min(created_at)), 0)::float8 AS oldest
      FROM outbox WHERE published_at IS NULL`).then(({ rows }) => {
      outboxSeries.push({ at: Date.now(), unpublished: rows[0]!.unpublished, oldestS: rows[0]!.oldest });
    }, () => {});
  }, 1000);
  const staleness = new StalenessChecker(checker, cfg.searchCacheTtlS);
  const phases: PhaseResult[] = [];
  let floor: PeakResult['floor'] = null;
  let plans: Plan[] = [];
  let prometheus: Prometheus | null = null;
  let dashboard: PanelValue[] | null = null;
  // Each worker's /metrics on the bench's own ports (METRICS_PORT_BASE + the kind's offset), not the defaults.
  const metricsPortBase = cfg.ports.api + 10;
  const startedAt = new Date().toISOString();
  try {
    system = await startSystem({
      databaseUrl: url, port: cfg.ports.api, dashboardPort: cfg.ports.dashboard, pspPort: cfg.ports.psp, redisUrl: cfg.redisUrl,
      prefix: cfg.prefix, kafkaPrefix: cfg.kafkaPrefix, kafkaBrokers: cfg.kafkaBrokers, jwtSecret, searchCacheTtlS: cfg.searchCacheTtlS,
      extra: { ...(cfg.apiWorkers === null ? {} : { API_WORKERS: String(cfg.apiWorkers) }), METRICS_PORT_BASE: String(metricsPortBase) },
    }, `/tmp/bench-peak-${tag}.log`);
    log(`npm start: pid ${system.pid}, ${system.url}, log ${system.logFile}; processes: ${[...new Set(system.processes().values())].join(', ')}`);
    prometheus = await startPrometheus({ apiPort: cfg.ports.api, dashboardPort: cfg.ports.dashboard, metricsPortBase }, cfg.ports.api + 90, log);
    await sampler.start();
    log(generatorFirst());
    const w = workload(cfg.dataset, { hotShare: cfg.hotShare, holdWindowDays: cfg.holdWindowDays, jwtSecret, seed: cfg.dataset.seed, hotCars: cfg.hotPhaseCars });
    for (const [i, spec] of cfg.phases.entries()) {
      if (i > 0) await sleep(2000);
      log(`phase ${spec.name}: holds ${spec.rates.hold}/s, hot-car holds ${spec.rates.hotHold ?? 0}/s, searches ${spec.rates.search}/s, stays ${spec.rates.stays}/s; ${spec.warmupS} s warm-up + ${spec.steadyS} s measured`);
      const streams: StreamSpec[] = [];
      if (spec.rates.hold > 0) streams.push({ name: 'hold', rate: spec.rates.hold, next: w.hold });
      if ((spec.rates.hotHold ?? 0) > 0) streams.push({ name: 'hot hold', rate: spec.rates.hotHold!, next: w.hotHold });
      if (spec.rates.search > 0) {
        streams.push({
          name: 'search', rate: spec.rates.search, next: w.search, sampleEvery: cfg.staleSampleEvery,
          onSample: (req, status, body, sentAt) => staleness.sample(req.path, status, body, performance.timeOrigin + sentAt),
        });
      }
      if (spec.rates.stays > 0) streams.push({ name: 'stays', rate: spec.rates.stays, next: w.stays });
      let counters0: Record<string, number> = {};
      const toolRun = (async () => {
        await sleep(spec.warmupS * 1000);
        counters0 = await dbCounters(monitor, database);
        return runCpuTool(spec.steadyS);
      })();
      const load = await openLoop(system.url, streams, spec.warmupS + spec.steadyS, {
        connections: cfg.connections, timeoutMs: 10_000, arrivals: cfg.arrivals, rng: rngFor(cfg.dataset.seed, 200 + i), maxInFlight: 50_000,
      });
      const tool = await toolRun;
      const counters1 = await dbCounters(monitor, database);
      const dbDelta = Object.fromEntries(Object.entries(counters1).map(([k, v]) => [k, v - (counters0[k] ?? 0)]));
      const fromMs = spec.warmupS * 1000;
      const toMs = (spec.warmupS + spec.steadyS) * 1000;
      const stats = load.streams.map((r) => streamStats(r, fromMs, toMs));
      const steadyToEpoch = load.t0Epoch + toMs;
      await sleep(1100); // the sampler's last interval of the window
      const hold = stats.find((s) => s.name === 'hold' || s.name === 'hot hold');
      const stalls = readStalls(system.logFile).filter((x) => x.at >= load.t0Epoch + fromMs && x.at < steadyToEpoch + 1000);
      phases.push({
        spec, startEpoch: load.t0Epoch, steadyFromEpoch: load.t0Epoch + fromMs, steadyToEpoch, streams: stats,
        series: Object.fromEntries(load.streams.map((r) => [r.name, perSecond(r)])),
        cpu: sampler.window(load.t0Epoch + fromMs, steadyToEpoch), tool, generatorCores: load.generatorCores,
        holdsCreated: hold ? Math.round(hold.okPerS * spec.steadyS) : 0,
        requests: stats.reduce((s, x) => s + x.answered, 0), dbCounters: dbDelta, stalls,
      });
      for (const s of stats) log(`  ${s.name}: ${s.answeredPerS.toFixed(0)}/s answered (${s.okPerS.toFixed(0)}/s 2xx), p50 ${s.p50.toFixed(1)} ms, p99 ${s.p99.toFixed(1)} ms; ${s.outcomes.map(([k, n]) => `${k}×${n}`).join(' ')}`);
      log(`  event loop held > 50 ms: ${summarizeStalls(stalls)}`);
    }
    await staleness.done();
    if (prometheus) {
      dashboard = await prometheus.panels();
      printPanels(dashboard, log);
    }
    await sleep(2000);
    await sampler.stop();
    clearInterval(outboxTimer);
    await system.stop();
    system = null;
    log('system stopped; checks, pgbench floor, plans');
    const checks = { overlaps: await countOverlaps(checker), oversold: await countOversold(checker), staleness: staleness.report, selfTest: await stalenessSelfTest(checker) };
    if (cfg.floorSeconds > 0) {
      const floorSampler = new CpuSampler({ system: () => new Map(), monitor, database, benchBackends: () => benchPids, extra: () => extra });
      await floorSampler.start();
      const t0 = Date.now();
      const r = await runPgbench(url, {
        cars: cfg.dataset.cars, windowDays: cfg.holdWindowDays, clients: cfg.floorClients, seconds: cfg.floorSeconds, file: `/tmp/bench-peak-${tag}.pgbench.sql`,
      }, (pid) => extra.set(pid, 'pgbench'));
      await floorSampler.stop();
      // Only intervals in which every pgbench backend was alive at both ends: a process's CPU cannot be read
      // after it exits, and a backend first seen counts from its second sample.
      const win = floorSampler.window(t0 + 1500, t0 + cfg.floorSeconds * 1000 - 300);
      floor = { ...r, cpu: win.used, cpuSeconds: win.seconds };
    }
    const day = 86_400_000;
    const from = new Date(Math.ceil(Date.now() / 3_600_000) * 3_600_000 + 20 * day);
    plans = await explainAll(url, {
      city: 'Hanoi', carFrom: from, carTo: new Date(from.getTime() + 3 * day), carId: 2,
      checkIn: new Date(Date.now() + 20 * day).toISOString().slice(0, 10), checkOut: new Date(Date.now() + 23 * day).toISOString().slice(0, 10),
    });
    const sizes = (await checker.query<Record<string, number>>(`
      SELECT pg_relation_size('booking')::float8 AS "booking heap bytes", pg_relation_size('booking_car_no_overlap')::float8 AS "GiST (exclusion) bytes",
             (SELECT count(*) FROM booking)::float8 AS "bookings", (SELECT count(*) FROM booking WHERE kind = 'car' AND status IN ('HOLD', 'CONFIRMED', 'ON_TRIP'))::float8 AS "active car bookings"`)).rows[0]!;
    return {
      sizes, startedAt, machine: machineNote(), gitRev: spawnSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT }).stdout.toString().trim(),
      config: { ...cfg, log: undefined } as Omit<RunConfig, 'log'>, database, phases, cpuSeries: sampler.samples, outboxSeries, checks, floor, plans, dashboard,
    };
  } finally {
    clearInterval(outboxTimer);
    await sampler.stop();
    await prometheus?.stop().catch(() => {});
    await system?.stop().catch(() => {});
    await monitorClient.end().catch(() => {});
    await checker.end().catch(() => {});
    await flushRedisDb(cfg.redisUrl, cfg.prefix).catch(() => {});
    if (!cfg.keepDb) await dropDatabase(database).catch(() => {});
    else log(`kept database ${database} (${dbUrl(database)})`);
  }
}
