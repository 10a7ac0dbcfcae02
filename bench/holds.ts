/**
 * POST /bookings (car holds) through the real API process vs the same INSERTs straight into PostgreSQL.
 *
 *   npm run bench:holds
 *   DURATION_S=5 CARS=2000 npm run bench:holds        # quick smoke run
 *
 * Env (defaults):
 *   DURATION_S (15)        seconds per measured run          WARMUP_S (3)      unmeasured warm-up
 *   RATE (300)             holds/s of the fixed-rate runs    RATE_CONNECTIONS (10) autocannon connections for it
 *   PACED (1)              also run an open-loop, evenly spaced generator at RATE (no per-second bursts)
 *   MAX_CONNECTIONS (32)   concurrency of the max-throughput runs, API and raw alike
 *   RAW_DRIVERS (slonik,pg) raw variants: slonik = product createDb pool + insertCarHold + writeEvent;
 *                          pg = plain pg.Pool with the exact SQL text slonik generates; none = skip raw runs
 *   RAW_POOL (20)          raw pool size (20 = the API's createDeps default)
 *   ROUNDS (1)             repeat [API max, raw...] interleaved; the ratio verdict uses the median
 *   CARS (20000)           cars seeded; each request takes a random car and a random 1–72 h period 1–365 days ahead
 *   BUILD (auto|1|0)       npm run build when dist is missing/older than the sources
 *   API_ENTRY (dist/api/server.js), API_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof")
 *   BENCH_REDIS_URL (redis://127.0.0.1:6379/7), KEEP_DB (0), BENCH_STRICT (0: exit 1 on a MISS when 1)
 * Every request carries a fresh customer `sub`, so the contract's 3 holds/customer/900 s limiter runs but never bites.
 *
 * Targets (from the issue): at RATE holds/s p99 ≤ 50 ms; API max throughput ≥ 0.5 × raw max throughput.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, statSync, unlinkSync } from 'node:fs';
import autocannon from 'autocannon';
import { openLoop } from './open-loop.js';
import { Redis } from 'ioredis';
import pg from 'pg';
import { createDb, type CommonQueryMethods, type DatabasePool } from '../shared/db/pool.js';
import { insertCarHold, type NewCarHold } from '../shared/db/bookings.js';
import { writeEvent } from '../shared/events/outbox.js';
import { carDays } from '../shared/domain/rates.js';
import {
  benchSecrets, captureSql, cleanupOnSignal, ensureBuild, envBool, envInt, envStr, finalVerdict, fmt, freshDb, machineNote, printTable,
  runTag, signJwt, sleep, startApiProcess, summarize, verdict, type ApiProcess, type Summary,
} from './lib.js';

const DURATION_S = envInt('DURATION_S', 15);
const WARMUP_S = envInt('WARMUP_S', 3);
const RATE = envInt('RATE', 300);
const RATE_CONNECTIONS = envInt('RATE_CONNECTIONS', 10);
const MAX_CONNECTIONS = envInt('MAX_CONNECTIONS', 32);
const CARS = envInt('CARS', 20_000);
const PACED = envBool('PACED', true);
const RAW_DRIVERS = envStr('RAW_DRIVERS', 'slonik,pg').split(',').map((s) => s.trim()).filter((s) => s && s !== 'none');
/** Extra node flags for the API child, e.g. API_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof". */
const API_NODE_ARGS = envStr('API_NODE_ARGS', '').split(' ').filter(Boolean);
/** The API entry point (experiments may wrap it); relative to the repo root. */
const API_ENTRY = envStr('API_ENTRY', 'dist/api/server.js');
const RAW_POOL = envInt('RAW_POOL', 20);
const ROUNDS = envInt('ROUNDS', 1);
const BUILD = envStr('BUILD', 'auto');
const REDIS_BASE = envStr('BENCH_REDIS_URL', 'redis://127.0.0.1:6379/7');
const P99_TARGET_MS = 50;
const RATIO_TARGET = 0.5;
const DEPOSIT = 2_000_000;

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** A random car and a random period 1 day–1 year ahead, 1–72 h long: collisions stay rare. */
function randomHold(): { carId: number; from: Date; to: Date } {
  const start = Math.floor(Date.now() / HOUR) * HOUR + DAY + Math.floor(Math.random() * 364 * 24) * HOUR;
  return {
    carId: 1 + Math.floor(Math.random() * CARS),
    from: new Date(start),
    to: new Date(start + (1 + Math.floor(Math.random() * 72)) * HOUR),
  };
}

// ---------------------------------------------------------------- build + API child

type Api = ApiProcess;

const startApi = (env: Record<string, string>, tag: string) =>
  startApiProcess(API_ENTRY, env, `/tmp/bench-holds-api-${tag}.log`, API_NODE_ARGS);

// ---------------------------------------------------------------- runs

interface RunResult {
  label: string;
  durationS: number;
  sent: number;
  statuses: Map<string, number>;
  latency: Summary;
  /** API process CPU use during the run, in cores (1.0 = one core busy), user and system. */
  apiCores?: { user: number; sys: number };
  benchCores: number;
  note?: string;
}

function cpuSince(api: Api, before: { user: number; sys: number }, seconds: number) {
  const now = api.cpuSeconds();
  return { user: (now.user - before.user) / seconds, sys: (now.sys - before.sys) / seconds };
}

const holdsPerS = (r: RunResult) => (r.statuses.get('201') ?? 0) / r.durationS;

function holdBody(): string {
  const h = randomHold();
  return JSON.stringify({ carId: h.carId, from: h.from.toISOString(), to: h.to.toISOString() });
}

let nextSub = 1_000_000;
function customerToken(secret: string): string {
  return signJwt(secret, { sub: String(nextSub++), role: 'customer' });
}

async function cannon(api: Api, secret: string, label: string, opts: { durationS: number; connections: number; overallRate?: number }): Promise<RunResult> {
  const latencies: number[] = [];
  const statuses = new Map<string, number>();
  const cpu0 = api.cpuSeconds();
  const bench0 = process.cpuUsage();
  let finish!: (r: autocannon.Result) => void;
  let fail!: (e: unknown) => void;
  const done = new Promise<autocannon.Result>((resolve, reject) => { finish = resolve; fail = reject; });
  const instance = autocannon({
    url: `${api.url}/bookings`,
    method: 'POST',
    connections: opts.connections,
    overallRate: opts.overallRate,
    duration: opts.durationS,
    timeout: 10,
    // Our own histogram below is exact; autocannon's CO correction uses a 1 ms interval at these rates.
    ...(opts.overallRate ? { ignoreCoordinatedOmission: true } : {}),
    requests: [{
      setupRequest: (req) => ({
        ...req,
        headers: { ...req.headers, 'content-type': 'application/json', authorization: `Bearer ${customerToken(secret)}` },
        body: holdBody(),
      }),
    }],
  }, (err, result) => (err ? fail(err) : finish(result)));
  instance.on('response', (_client, statusCode, _bytes, responseTime) => {
    latencies.push(responseTime);
    statuses.set(String(statusCode), (statuses.get(String(statusCode)) ?? 0) + 1);
  });
  const result = await done;
  if (result.errors) statuses.set('conn-error', result.errors);
  if (result.timeouts) statuses.set('timeout', result.timeouts);
  const bench = process.cpuUsage(bench0);
  return {
    label, durationS: result.duration, sent: result.requests.sent, statuses, latency: summarize(latencies),
    apiCores: cpuSince(api, cpu0, result.duration), benchCores: (bench.user + bench.system) / 1e6 / result.duration,
  };
}

/**
 * Open-loop generator (bench/open-loop.ts): request i is due at t0 + i/rate whatever happened before, latency is
 * measured from that due time (no coordinated omission). autocannon's overallRate instead lets each connection fire
 * its share of the second back to back and then sleep until the next second: bursts, not a steady 300/s.
 */
async function paced(api: Api, secret: string, label: string, rate: number, durationS: number): Promise<RunResult> {
  const cpu0 = api.cpuSeconds();
  const bench0 = process.cpuUsage();
  const r = await openLoop(api.url, rate, durationS, () => ({ method: 'POST', path: '/bookings', token: customerToken(secret), body: holdBody() }));
  const bench = process.cpuUsage(bench0);
  return {
    label, durationS: r.seconds, sent: r.sent, statuses: r.outcomes, latency: r.latency,
    apiCores: cpuSince(api, cpu0, r.seconds), benchCores: (bench.user + bench.system) / 1e6 / r.seconds,
  };
}

// ---------------------------------------------------------------- raw (no HTTP)

function newHold(): NewCarHold {
  const h = randomHold();
  return {
    customerId: nextSub++, carId: h.carId, from: h.from, to: h.to, days: carDays(h.from, h.to),
    holdExpiresAt: new Date(Date.now() + 900_000),
  };
}
const heldEvent = (id: number, h: NewCarHold) => ({
  type: 'booking.held' as const, key: id, occurredAt: new Date(),
  data: { bookingId: id, kind: 'car' as const, customerId: h.customerId, carId: h.carId, from: h.from.toISOString(), to: h.to.toISOString(), holdExpiresAt: h.holdExpiresAt.toISOString(), depositAmount: DEPOSIT,
    // the product writes the car's dailyPrice × days; the size of the event is what matters here
    totalAmount: 500_000 * h.days, currency: 'VND' },
});
const writeHeld = (db: CommonQueryMethods, e: ReturnType<typeof heldEvent>) => writeEvent(db, e.type, e.occurredAt, e.data);

type OneHold = () => Promise<void>;

/** `concurrency` loops each doing one hold transaction after the other, for durationS. */
async function rawLoop(label: string, one: OneHold, concurrency: number, durationS: number, note: string): Promise<RunResult> {
  const latencies: number[] = [];
  const statuses = new Map<string, number>();
  const bench0 = process.cpuUsage();
  const t0 = performance.now();
  const end = t0 + durationS * 1000;
  let sent = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (performance.now() < end) {
      const s = performance.now();
      sent++;
      let code = 'ok';
      try {
        await one();
      } catch (e) {
        const c = (e as { code?: string; cause?: { code?: string } });
        code = /exclusion/i.test(String((e as Error).name) + String((e as Error).message)) || c.code === '23P01' || c.cause?.code === '23P01'
          ? 'conflict(23P01)' : `error:${c.code ?? c.cause?.code ?? (e as Error).name}`;
      }
      latencies.push(performance.now() - s);
      statuses.set(code === 'ok' ? '201' : code, (statuses.get(code === 'ok' ? '201' : code) ?? 0) + 1);
    }
  }));
  const elapsed = (performance.now() - t0) / 1000;
  const bench = process.cpuUsage(bench0);
  return { label, durationS: elapsed, sent, statuses, latency: summarize(latencies), benchCores: (bench.user + bench.system) / 1e6 / elapsed, note };
}

function slonikHold(db: DatabasePool): OneHold {
  return async () => {
    const h = newHold();
    await db.transaction(async (tx) => {
      const hold = await insertCarHold(tx, h);
      await writeHeld(tx, heldEvent(hold!.id, h));
    });
  };
}

/**
 * Plain pg with the exact SQL text slonik generates for insertCarHold and writeEvent (captured from the product
 * functions once, checked against a sample), values computed here so the loop does no slonik work at all.
 */
async function pgHold(pool: pg.Pool): Promise<OneHold> {
  const sample = newHold();
  const ins = await captureSql((db) => insertCarHold(db, sample), { id: 1, depositAmount: DEPOSIT, totalAmount: 500_000 * sample.days, currency: 'VND' });
  const insValues = (h: NewCarHold) => [h.customerId, h.from.toISOString(), h.to.toISOString(), h.days,
    h.holdExpiresAt.toISOString(), h.holdExpiresAt.toISOString(), h.carId];
  const ev = heldEvent(42, sample);
  const out = await captureSql((db) => writeHeld(db, ev));
  // The last two are the row's request_id and traceparent: null, as outside a request.
  const outValues = (eventId: string, e: ReturnType<typeof heldEvent>) =>
    [eventId, e.type, String(e.key), JSON.stringify({ eventId, type: e.type, occurredAt: e.occurredAt.toISOString(), ...e.data }), null, null];
  if (JSON.stringify(ins.values) !== JSON.stringify(insValues(sample))) throw new Error('insertCarHold values changed; update bench/holds.ts');
  const capturedId = out.values[0] as string;
  const sorted = (json: string) => JSON.stringify(Object.entries(JSON.parse(json) as object).sort(([a], [b]) => a.localeCompare(b)));
  const expected = outValues(capturedId, ev);
  if (out.values.length !== expected.length || sorted(out.values[3] as string) !== sorted(expected[3]!)
    || out.values[4] !== null || out.values[5] !== null) {
    throw new Error('writeEvent values changed; update bench/holds.ts');
  }
  return async () => {
    const h = newHold();
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      const { rows } = await client.query<{ id: string }>(ins.text, insValues(h));
      await client.query(out.text, outValues(randomUUID(), heldEvent(Number(rows[0]!.id), h)));
      await client.query('COMMIT');
    } catch (e) {
      await client.query('ROLLBACK').catch(() => {});
      throw e;
    } finally {
      client.release();
    }
  };
}

async function rawDriver(driver: string, url: string): Promise<{ name: string; one: OneHold; close: () => Promise<void>; note: string }> {
  if (driver === 'slonik') {
    const pool = await createDb(url, { maximumPoolSize: RAW_POOL });
    return { name: driver, one: slonikHold(pool), close: () => pool.end(), note: `product createDb pool (max ${RAW_POOL}) + insertCarHold + writeEvent in db.transaction` };
  }
  if (driver === 'pg') {
    const pool = new pg.Pool({ connectionString: url, max: RAW_POOL });
    return { name: driver, one: await pgHold(pool), close: () => pool.end(), note: `plain pg.Pool (max ${RAW_POOL}), BEGIN + the exact SQL slonik generates + COMMIT` };
  }
  throw new Error(`unknown RAW_DRIVERS entry ${driver} (slonik, pg)`);
}

// ---------------------------------------------------------------- main

const sumStatuses = (r: RunResult) => [...r.statuses.values()].reduce((a, b) => a + b, 0);

function statusText(r: RunResult): string {
  return [...r.statuses].filter(([k]) => k !== '201').map(([k, n]) => `${k}×${n}`).join(' ') || '-';
}

async function main() {
  const tag = runTag();
  console.log(`bench:holds  ${machineNote()}`);
  console.log(`DURATION_S=${DURATION_S} WARMUP_S=${WARMUP_S} RATE=${RATE} RATE_CONNECTIONS=${RATE_CONNECTIONS} MAX_CONNECTIONS=${MAX_CONNECTIONS} CARS=${CARS} RAW_DRIVERS=${RAW_DRIVERS.join(',')} RAW_POOL=${RAW_POOL} ROUNDS=${ROUNDS}`);
  ensureBuild(BUILD);

  const db = await freshDb(tag);
  let api: Api | null = null;
  const redisPrefix = `bench-${tag}:`;
  const cleanup = cleanupOnSignal(async () => {
    await api?.stop().catch(() => {});
    const logFile = `/tmp/bench-holds-api-${tag}.log`;
    if (existsSync(logFile)) {
      if (statSync(logFile).size === 0) unlinkSync(logFile);
      else console.log(`\nAPI process logged ${fmt(statSync(logFile).size)} bytes at warn or above: ${logFile}`);
    }
    const redis = new Redis(REDIS_BASE, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await redis.connect().then(async () => {
      const stream = redis.scanStream({ match: `${redisPrefix}*`, count: 1000 });
      for await (const keys of stream) if ((keys as string[]).length) await redis.del(...(keys as string[]));
      const bull = redis.scanStream({ match: `b${tag}:*`, count: 1000 });
      for await (const keys of bull) if ((keys as string[]).length) await redis.del(...(keys as string[]));
    }).catch(() => {});
    redis.disconnect();
    await db.drop();
  });

  try {
    const seed = new pg.Client({ connectionString: db.url });
    await seed.connect();
    const t = performance.now();
    await seed.query(`
      INSERT INTO car (host_id, plate, model, city, daily_price, deposit_amount, currency, turnaround_minutes)
      SELECT 1 + g % 500, 'BENCH-' || g, 'Model ' || (g % 20), 'Hanoi', 500000 + (g % 100) * 10000, $2, 'VND', 120
      FROM generate_series(1, $1::int) g`, [CARS, DEPOSIT]);
    await seed.query('ANALYZE car');
    await seed.end();
    console.log(`db ${db.name}: migrated, ${fmt(CARS)} cars seeded in ${fmt(performance.now() - t, 0)} ms`);

    const secrets = benchSecrets(tag);
    const secret = secrets.JWT_SECRET!;
    api = await startApi({
      DATABASE_URL: db.url, REDIS_URL: REDIS_BASE, REDIS_KEY_PREFIX: redisPrefix, QUEUE_PREFIX: `b${tag}`,
      ...secrets,
      LOG_LEVEL: 'warn', NODE_ENV: 'production', NOTIFY_WEBHOOK_URL: 'none',
      SEARCH_CACHE_TTL_S: '0',
    }, tag);
    console.log(`api: pid ${api.child.pid} on ${api.url} (log ${api.logFile})`);

    const runs: RunResult[] = [];
    if (WARMUP_S > 0) {
      const w = await cannon(api, secret, 'warm-up', { durationS: WARMUP_S, connections: 8 });
      console.log(`warm-up: ${fmt(holdsPerS(w), 0)} holds/s, statuses ${[...w.statuses].map(([k, n]) => `${k}×${n}`).join(' ')}`);
    }
    console.log(`running: API @${RATE}/s (autocannon overallRate, ${RATE_CONNECTIONS} connections) for ${DURATION_S}s ...`);
    const atRate = await cannon(api, secret, `API @${RATE}/s autocannon`, { durationS: DURATION_S, connections: RATE_CONNECTIONS, overallRate: RATE });
    runs.push(atRate);
    let pacedRun: RunResult | null = null;
    if (PACED) {
      console.log(`running: API @${RATE}/s (open-loop, evenly spaced) for ${DURATION_S}s ...`);
      pacedRun = await paced(api, secret, `API @${RATE}/s paced`, RATE, DURATION_S);
      runs.push(pacedRun);
    }
    // Max throughput, API then raw, ROUNDS times interleaved: on a shared box the load drifts, so each ratio
    // compares runs a few seconds apart and the verdict uses the median ratio.
    const drivers: { name: string; one: OneHold; close: () => Promise<void>; note: string }[] = [];
    for (const driver of RAW_DRIVERS) drivers.push(await rawDriver(driver, db.url));
    const ratios = new Map<string, number[]>();
    const apiMaxRuns: RunResult[] = [];
    const rawRuns = new Map<string, RunResult[]>();
    for (let round = 1; round <= ROUNDS; round++) {
      const suffix = ROUNDS > 1 ? ` #${round}` : '';
      console.log(`running: API max (autocannon, ${MAX_CONNECTIONS} connections) for ${DURATION_S}s ...`);
      const apiMax = await cannon(api, secret, `API max c=${MAX_CONNECTIONS}${suffix}`, { durationS: DURATION_S, connections: MAX_CONNECTIONS });
      runs.push(apiMax);
      apiMaxRuns.push(apiMax);
      for (const d of drivers) {
        if (round === 1 && WARMUP_S > 0) await rawLoop('warm-up', d.one, MAX_CONNECTIONS, Math.min(WARMUP_S, 2), '');
        console.log(`running: raw ${d.name} max (${MAX_CONNECTIONS} concurrent) for ${DURATION_S}s ...`);
        const r = await rawLoop(`raw ${d.name} c=${MAX_CONNECTIONS}${suffix}`, d.one, MAX_CONNECTIONS, DURATION_S, d.note);
        runs.push(r);
        rawRuns.set(d.name, [...(rawRuns.get(d.name) ?? []), r]);
        ratios.set(d.name, [...(ratios.get(d.name) ?? []), holdsPerS(apiMax) / holdsPerS(r)]);
      }
    }
    for (const d of drivers) await d.close();
    await sleep(1000); // let requests autocannon abandoned at its deadline finish before SIGTERM
    await api.stop();
    api = null;

    printTable('POST /bookings (car holds)', [
      ['run', 'sent', 'holds/s', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'api cores (usr/sys)', 'cpu ms/op', 'bench cores', 'non-201'],
      ...runs.map((r) => [
        r.label, fmt(r.sent), fmt(holdsPerS(r), 0), fmt(r.latency.p50, 1), fmt(r.latency.p90, 1), fmt(r.latency.p99, 1), fmt(r.latency.max, 0),
        r.apiCores === undefined ? '-' : `${fmt(r.apiCores.user + r.apiCores.sys, 2)} (${fmt(r.apiCores.user, 2)}/${fmt(r.apiCores.sys, 2)})`,
        fmt((1000 * (r.apiCores ? r.apiCores.user + r.apiCores.sys : r.benchCores) * r.durationS) / Math.max(1, sumStatuses(r)), 2),
        fmt(r.benchCores, 2), statusText(r),
      ]),
    ]);
    console.log('  cpu ms/op: CPU of the API process per answer (API runs) or of this process per transaction (raw runs: the DB client side).');
    console.log('  latency of "paced" is measured from each request\'s due time (open loop); the others from the moment it was sent.');
    console.log('  autocannon overallRate sends each connection\'s share of a second back to back, then waits for the next second.');
    for (const d of drivers) console.log(`  raw ${d.name}: ${d.note}`);

    console.log('\n== targets');
    for (const r of [atRate, pacedRun]) {
      if (r && sumStatuses(r) / r.durationS < RATE * 0.95) {
        console.log(`  NOTE ${r.label}: only ${fmt(sumStatuses(r) / r.durationS, 0)} answers/s, below ${RATE}/s: the fixed-rate figure is not at ${RATE}/s`);
      }
    }
    console.log(`API @${RATE}/s autocannon p99 ${fmt(atRate.latency.p99)} ms   ${verdict(`p99@${RATE}/s autocannon`, atRate.latency.p99, '<=', P99_TARGET_MS, ' ms')}`);
    if (pacedRun) console.log(`API @${RATE}/s paced      p99 ${fmt(pacedRun.latency.p99)} ms   ${verdict(`p99@${RATE}/s paced`, pacedRun.latency.p99, '<=', P99_TARGET_MS, ' ms')}`);
    const median = (xs: number[]) => {
      const a = [...xs].sort((x, y) => x - y);
      return a.length % 2 ? a[(a.length - 1) / 2]! : (a[a.length / 2 - 1]! + a[a.length / 2]!) / 2;
    };
    const apiMaxRate = median(apiMaxRuns.map(holdsPerS));
    for (const d of drivers) {
      const ratio = median(ratios.get(d.name)!);
      const rawRate = median(rawRuns.get(d.name)!.map(holdsPerS));
      const each = ROUNDS > 1 ? ` (rounds: ${ratios.get(d.name)!.map((x) => fmt(x, 2)).join(', ')}; median)` : '';
      console.log(`API max / raw ${d.name}: ${fmt(apiMaxRate, 0)} / ${fmt(rawRate, 0)} holds/s, ratio ${fmt(ratio, 2)}${each}   ${verdict(`ratio vs raw ${d.name}`, ratio, '>=', RATIO_TARGET)}`);
    }
    finalVerdict();
  } finally {
    await cleanup();
  }
}

await main();
