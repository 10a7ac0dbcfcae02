import { existsSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuild } from '../../bench/lib.js';
import { dropDatabase, templateName } from '../../bench/dataset/load.js';
import type { DatasetOptions } from '../../bench/dataset/generate.js';
import { portProblems } from '../../scripts/preflight.js';
import { destroyTopology } from '../../scripts/topology/topology.js';
import { ADMIN_DB } from '../helpers/harness.js';
import { sleep } from '../helpers/http.js';
import { alive, childrenOf, spawnTs } from '../helpers/processes.js';
import { privateRedis, type PrivateRedis } from '../helpers/worker-processes.js';

// A short smoke of every `npm run bench:*` script: each runs as a child process with the smallest sizes it allows
// and must run to the end, i.e. exit 0 and print its figure lines. Speed is never judged here: a bench exits 0 when
// it misses a target (MISS, unless BENCH_STRICT=1, which the clean environment below never sets) and 1 when
// something broke (an exception, a 5xx, an oversold night, an invariant violated). What it catches: a bench that
// rotted as the product changed under it (as bench:holds' raw pg driver had: it failed on writeEvent's two new
// columns, and nobody ran it).
//
// Isolation: the benches that take BENCH_REDIS_URL get a redis-server of this file's own (bench:peak deletes every
// `bench:*` key of its Redis db before and after a run, which would hit a bench:peak run of a developer on the
// shared one); bench:peak, bench:scale and bench:cost get free ports instead of 5400; every bench makes its own
// database(s), named by a random tag, and drops them; the catalogue template bench:data builds for the dataset
// below is dropped in afterAll; bench:topology's topology (its own PostgreSQL pair, Redis Cluster, three brokers,
// HAProxy) gets a directory and ports of its own and is taken down and deleted by the bench.

const id = randomUUID().replace(/-/g, '').slice(0, 10);
/** A small catalogue for bench:data, bench:peak, bench:scale and bench:cost (one template, built once). */
const DATASET: Omit<DatasetOptions, 'anchor'> = { seed: 4242, cars: 500, bookings: 5000, hotCars: 20, roomTypes: 20, nights: 60 };
const datasetArgs = (skip: string[] = []) => Object.entries(DATASET).filter(([k]) => !skip.includes(k))
  .flatMap(([k, v]) => [`--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`, String(v)]);
/** Its template's name without the anchor date (today's; a run that crosses midnight makes two). */
const templatePrefix = templateName({ ...DATASET, anchor: '' });
const dataCopy = `bench_smoke_${id}`;
const topologyDir = path.join(os.tmpdir(), `smoke-topology-${id}`);
// As topology.test.ts picks them, in another range: brokers on P…P+2, their controllers P+100…, PostgreSQL P+500, P+501.
const topologyPorts = 46_000 + Math.floor(Math.random() * 80) * 10;

let redis: PrivateRedis;
/**
 * Run on its own (`BENCH_SMOKE=1 npm test -- test/integration/bench-smoke.test.ts`, a step of .ci/run), not beside
 * the other files: a dozen whole systems started one after another loaded the 2-core machine enough to break the
 * timing of other files' tests (a provider call answered later than its 429 test allows, npm start's 60 s).
 */
const enabled = process.env.BENCH_SMOKE === '1';

beforeAll(async () => {
  if (!enabled) return;
  redis = await privateRedis();
  // What bench:holds, peak, scale, cost and changes would each do first: build dist when it is missing or stale
  // (a clean clone has none), done once here so that no smoke's time limit has to include it.
  ensureBuild();
}, 180_000);

afterAll(async () => {
  if (!enabled) return;
  redis?.client.disconnect();
  await redis?.stop();
  const admin = new pg.Client({ connectionString: ADMIN_DB });
  await admin.connect();
  const { rows } = await admin.query<{ datname: string }>(
    "SELECT datname FROM pg_database WHERE datname = $1 OR starts_with(datname, $2)", [dataCopy, templatePrefix]);
  for (const { datname } of rows) await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(datname)} WITH (FORCE)`);
  await admin.end();
  // What a bench:topology killed past its limit left (bench/topology.ts names its directory `<TOPOLOGY_DIR>-full`).
  if (existsSync(`${topologyDir}-full`)) destroyTopology(`${topologyDir}-full`);
}, 120_000);

/**
 * A port whose next two are free too (bench:peak and bench:cost take --port for the api, +1 and +2 for the others),
 * below the kernel's ephemeral range (32768–60999): a port the kernel handed out was taken by another listener in the
 * second between this check and the bench's own.
 */
async function freePortRun(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const claims = [0, 1, 2].map((i) => ({ port: port + i, variable: 'PORT' as const, process: `bench+${i}` }));
    if ((await portProblems(claims)).length === 0) return port;
  }
}

const descendants = (pid: number): number[] => childrenOf(pid).flatMap((c) => [c, ...descendants(c)]);

interface Run { code: number | null; out: string }

/**
 * Runs bench/<name>.ts with `args` and `env` (on a clean environment, as `npm run bench:<name>` would). Past
 * `limitS` it gets SIGTERM (the bench/lib.ts benches drop their database on it, bench:topology takes its topology
 * down), then every process of its tree still there 30 s later (bench:peak's `npm start` is a group of its own)
 * gets SIGKILL, and the database of a bench that dies on SIGTERM without its cleanup is dropped here.
 */
async function bench(name: string, args: string[], env: Record<string, string>, limitS: number): Promise<Run> {
  const t0 = performance.now();
  const child = spawnTs(`bench/${name}.ts`, {
    HOME: process.env.HOME ?? '/root', BENCH_REDIS_URL: redis.url, BENCH_LOG_LEVEL: 'warn', ...env,
  }, args);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let timer: NodeJS.Timeout | undefined;
  const overdue = new Promise<'overdue'>((resolve) => { timer = setTimeout(() => resolve('overdue'), limitS * 1000); });
  const first = await Promise.race([exited, overdue]);
  clearTimeout(timer);
  if (first === 'overdue') {
    const tree = [child.pid!, ...descendants(child.pid!)];
    child.kill('SIGTERM');
    await Promise.race([exited, sleep(30_000)]);
    for (const pid of tree.filter(alive)) {
      try { process.kill(pid, 'SIGKILL'); } catch { /* gone meanwhile */ }
    }
    // bench:peak (scale's runs too), cost and changes: `bench_<kind>_<tag>`, named in the output as it or by its log.
    for (const [, kind, tag] of child.output().matchAll(/\bbench[-_](peak|cost|changes)[-_]([a-z0-9]+)\b/g)) await dropDatabase(`bench_${kind}_${tag}`);
  }
  const out = child.output();
  removeFiles(out);
  const seconds = (performance.now() - t0) / 1000;
  console.log(`bench:${name} smoke: ${first === 'overdue' ? `killed after ${limitS} s` : `exit ${first}`} in ${seconds.toFixed(1)} s`);
  return { code: first === 'overdue' ? null : first, out };
}

/** The files a bench names in its output: its processes' logs under /tmp (and pgbench's script), its reports. */
function removeFiles(out: string): void {
  for (const [stem] of out.matchAll(/\/tmp\/bench-[\w-]+/g)) for (const ext of ['.log', '.pgbench.sql']) rmSync(stem + ext, { force: true });
  for (const [, file] of out.matchAll(/report:? (\S+)\.(?:html|json)/g)) for (const ext of ['.html', '.json']) rmSync(file + ext, { force: true });
}

/** It ran to the end: exit 0 and each figure line printed. */
function expectRan(r: Run, figures: RegExp[]): void {
  expect(r.code, `exit status; the output's end:\n${r.out.slice(-4000)}`).toBe(0);
  for (const f of figures) expect(r.out, `${f}`).toMatch(f);
}

// Each test's timeout is its bench's limit (the last argument of bench(), several times what it takes here) + 60 s.
describe.skipIf(!enabled)('every bench:* script runs to the end at its smallest (figures printed, speed not judged)', () => {
  it('bench:holds', async () => {
    const r = await bench('holds', [], { DURATION_S: '1', WARMUP_S: '0', RATE: '50', RATE_CONNECTIONS: '2', MAX_CONNECTIONS: '4', RAW_POOL: '4', CARS: '200' }, 120);
    expectRan(r, [
      /^== POST \/bookings \(car holds\)$/m, /^API @50\/s paced\s+\d+/m, /^raw slonik c=4\s+\d+/m, /^raw pg c=4\s+\d+/m,
      /^API max \/ raw pg: [\d,]+ \/ [\d,]+ holds\/s, ratio [\d.]+/m, /^verdict: /m,
    ]);
  }, 180_000);

  it('bench:expiry', async () => {
    const r = await bench('expiry', [], { HOLDS: '50', HOLD_TTL_S: '2', SPREAD_S: '1', WAIT_S: '15' }, 90);
    expectRan(r, [/^lag via booking\.expired outbox created_at\s+\d+/m, /^holds: 50 created, \d+ expired/m, /^expiry lag p99 \S+ ms/m, /^verdict: /m]);
  }, 150_000);

  it('bench:rebuild', async () => {
    const r = await bench('rebuild', [], { HOLDS: '2000' }, 90);
    // Every open hold armed again after the FLUSHALL is what the bench is about, not a speed.
    expectRan(r, [/^first pass \(no canary yet\)\s+2,000\s/m, /^after FLUSHALL\s+2,000\s/m, /^Redis memory with 2000 delayed expiry jobs: /m]);
  }, 150_000);

  it('bench:relay', async () => {
    const r = await bench('relay', [], { BURST_EVENTS: '2000', BURST_CHUNK: '500', STEADY_RATE: '500', STEADY_S: '2', DRAIN_TIMEOUT_S: '60' }, 120);
    expectRan(r, [/^burst \(backlog drain\)\s+2,000\s/m, /^burst drain [\d,]+ events\/s/m, /^steady p99 lag \S+ ms/m, /^unpublished \d+/m, /^verdict: /m]);
  }, 180_000);

  it('bench:stays', async () => {
    const r = await bench('stays', [], {
      DURATION_S: '1', WARMUP_S: '0', CONNECTIONS: '8', HOT_SELLABLE: '50', SPREAD_ROOM_TYPES: '3', SPREAD_NIGHTS: '10',
    }, 120);
    // It exits 1 itself on an oversold night, a count that does not add up, or a 5xx.
    expectRan(r, [/^hot\s+[\d.]+\s+[\d,]+/m, /^spread\s+[\d.]+\s+[\d,]+/m, /^oversold nights: 0$/m, /^held = Σ rooms of HOLD bookings on every night: yes$/m]);
  }, 180_000);

  it('bench:data', async () => {
    // --force: the loader itself runs even when the template is there (bench:peak, scale and cost copy it next).
    const r = await bench('data', [...datasetArgs(), '--force', '--db', dataCopy], {}, 90);
    expectRan(r, [/^dataset: built bench_tpl_\w+ in [\d.]+ s: \{.*"carBooking":5000/m, new RegExp(`^copied into ${dataCopy} in `, 'm')]);
  }, 150_000);

  it('bench:peak', async () => {
    // Every phase of the default list (sustained included), each 1 s warm-up + 2 s measured at 5 % of its rate.
    const phases = ['holds', 'mixed', 'hot', 'search', 'stays', 'sustained'];
    const r = await bench('peak', [
      ...datasetArgs(), '--phases', phases.join(','), '--scale', '0.05', '--duration', '2', '--warmup', '1',
      '--sustained-warmup', '1', '--sustained-rate', '60', '--floor-seconds', '1', '--floor-clients', '2', '--connections', '8',
      '--port', String(await freePortRun()),
    ], {}, 240);
    expectRan(r, [
      ...phases.map((p) => new RegExp(`^== phase ${p} \\(2 s measured after 1 s warm-up\\)$`, 'm')),
      /^PASS {2}overlapping active car bookings: 0/m, /^PASS {2}oversold nights: 0/m, /^report: \S+\.html$/m, /^verdict: /m,
    ]);
  }, 300_000);

  it('bench:scale', async () => {
    // One size (the catalogue above): each size is a whole bench:peak run of two phases.
    const r = await bench('scale', [
      ...datasetArgs(['bookings']), '--sizes', String(DATASET.bookings), '--duration', '2', '--warmup', '1',
      '--hold-rate', '20', '--search-rate', '40', '--connections', '8', '--port', String(await freePortRun()),
    ], {}, 180);
    expectRan(r, [/^== cost curve/m, /^5,000\s+[\d,]+\s+\d+\s+\d+\s+\d+/m, /^report: \S+scale-\S+\.html$/m]);
  }, 240_000);

  it('bench:cost', async () => {
    const r = await bench('cost', [
      ...datasetArgs(), '--holds', '20', '--hold-rate', '20', '--searches', '40', '--search-rate', '40', '--stays', '40', '--stays-rate', '40',
      '--idle', '1', '--port', String(await freePortRun()),
    ], {}, 150);
    expectRan(r, [/^hold: 20 requests in /m, /^search: 40 requests in /m, /^stays: 40 requests in /m, /^== CPU by process: idle cores/m, /^= system\s+[\d.]+/m]);
  }, 210_000);

  it('bench:quotes', async () => {
    const r = await bench('quotes', [], { DURATION_S: '1', WARMUP_S: '0', RATE: '50', ROOM_TYPES: '20', NIGHTS: '40', HOTELS: '5' }, 120);
    // It exits 1 itself on a 5xx or a connection error.
    expectRan(r, [/^-- readStay/m, /^== POST \/quotes/m, /^quotes stored: \d+/m, /^(PASS|MISS) \(p99 /m, /^verdict: /m]);
  }, 180_000);

  it('bench:changes', async () => {
    const r = await bench('changes', [], { DURATION_S: '1', WARMUP_S: '0', IDLE_S: '1', RATE: '20', CARS: '10', STAYS: '10', ROOM_TYPES: '2' }, 150);
    // It exits 1 itself when check:invariants' car-no-overlap or stay-inventory finds a violation.
    expectRan(r, [
      /^== change, open loop at 20\/s$/m, /^== hold, open loop at 20\/s$/m, /^CPU of the system .* per change gross/m,
      /^ok +car-no-overlap/m, /^ok +stay-inventory/m, /^verdict: /m,
    ]);
  }, 210_000);

  it('bench:topology', async () => {
    // The full topology once (no single-node comparison, no faults), one API behind HAProxy, 15 s of light load:
    // about a minute, most of it starting six redis-servers, three brokers and a replica.
    const r = await bench('topology', [
      '--seconds', '15', '--hold-rate', '2', '--search-rate', '4', '--cars', '20', '--apis', '1', '--hold-ttl', '10', '--single', 'no', '--faults', 'no',
    ], { TOPOLOGY_DIR: topologyDir, TOPOLOGY_KAFKA_PORT: String(topologyPorts), PG_PRIMARY_PORT: String(topologyPorts + 500) }, 300);
    // It exits 1 itself on an invariant violated, an event lost or out of order, or no quiet.
    expectRan(r, [
      /^== topology: per minute/m, /^ {2}hold: answers \{.*"201":\d+/m, /^ {2}check:invariants: 0 violations/m, /^PASS: 0 violations, 0 events lost/m,
    ]);
  }, 360_000);
});
