/**
 * POST /bookings/{id}/change on the whole system (`npm start`: api, workers, relay, dashboard, sandbox provider; Kafka
 * on), open loop: changes/s and their latency from the due time (no coordinated omission).
 *
 *   npm run bench:changes
 *   DURATION_S=3 RATE=40 npm run bench:changes      # quick smoke run
 *
 * Set up over HTTP: CARS cars with one HOLD each (periods 10 h apart), one hotel with ROOM_TYPES room types (100 rooms
 * a night) and STAYS stay HOLDs. The load cycles through the bookings, at most one change of a booking in flight:
 * cars extend / shorten their return (every fifth change moves to the neighbouring car, same deposit), stays grow or
 * shrink by a night (every fourth change also adds or drops a room: a new deposit, so a new deposit version). Every
 * change is a real one (never "changes nothing"), so nearly all answers are 200. Printed: changes/s answered 200,
 * latency percentiles, and the CPU the system used per change (its node processes and the database's backends, from
 * /proc: the figure that survives a busy machine). After the run check:invariants' car-no-overlap and stay-inventory
 * run on the database.
 *
 * Then the same open loop of new car holds (HOLDS=1), whose CPU per request is the scale for the changes' on a machine
 * whose load inflates both.
 *
 * Env (defaults): RATE (100 changes/s), DURATION_S (20), WARMUP_S (3, at RATE / 2), IDLE_S (3), HOLDS (1), CARS (150), STAYS (150),
 * ROOM_TYPES (20), API_WORKERS (the system's default), KAFKA_BROKERS (127.0.0.1:9092), BENCH_REDIS_URL
 * (redis://127.0.0.1:6379/13), BUILD (auto), KEEP_DB (0), BENCH_STRICT (0).
 * Target (issue 18): p99 ≤ 50 ms.
 */
import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { Redis } from 'ioredis';
import pg from 'pg';
import { ADMIN_DB, PG_BASE, ROOT, ensureBuild, envBool, envInt, envStr, finalVerdict, fmt, freePort, machineNote, printTable, procCpuSeconds, signJwt, verdict } from './lib.js';
import { openLoop, type OpenLoopRequest, type OpenLoopResult } from './open-loop.js';
import { startSystem, type RunningSystem } from './peak/system.js';
import { formatResults, runChecks } from '../scripts/invariants/index.js';

const RATE = envInt('RATE', 100);
const DURATION_S = envInt('DURATION_S', 20);
const WARMUP_S = envInt('WARMUP_S', 3);
const IDLE_S = envInt('IDLE_S', 3);
/** Also the same open loop of new car holds, for scale (HOLDS=0: not). */
const HOLDS_TOO = envBool('HOLDS', true);
const CARS = envInt('CARS', 150);
const STAYS = envInt('STAYS', 150);
const ROOM_TYPES = envInt('ROOM_TYPES', 20);
const REDIS_URL = envStr('BENCH_REDIS_URL', 'redis://127.0.0.1:6379/13');
const P99_TARGET_MS = 50;
const HOUR = 3_600_000;
const day = (n: number) => new Date(Date.now() + n * 86_400_000).toISOString().slice(0, 10);

interface Tracked {
  id: number;
  token: string;
  kind: 'car' | 'stay';
  /** Cars: the two cars it moves between and its from; stays: checkIn. */
  cars?: [number, number];
  from?: number;
  checkIn?: number;
  step: number;
}

async function api(url: string, token: string, method: string, path: string, body: unknown): Promise<any> {
  const r = await fetch(url + path, { method, headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify(body) });
  const json = await r.json();
  if (!r.ok) throw new Error(`${method} ${path} → ${r.status} ${JSON.stringify(json)}`);
  return json;
}

/** The catalogue and the holds to change, over the API (their holds, events and ledger entries are real). */
async function seed(url: string, secret: string): Promise<Tracked[]> {
  const host = signJwt(secret, { sub: '900', role: 'host' });
  const operator = signJwt(secret, { sub: '1', role: 'operator' });
  const customer = (i: number) => signJwt(secret, { sub: String(700_000 + i), role: 'customer' }, 24 * 3600);
  const out: Tracked[] = [];
  const cars: number[] = [];
  for (let i = 0; i < CARS; i++) {
    cars.push((await api(url, host, 'POST', '/cars', {
      plate: `BC-${randomBytes(4).toString('hex')}-${i}`, model: 'Bench', city: 'BenchCity', dailyPrice: 500_000, depositAmount: 1_000_000, turnaroundMinutes: 60,
    })).id);
  }
  const base = Math.ceil(Date.now() / HOUR) * HOUR + 48 * HOUR;
  for (let i = 0; i < CARS; i++) {
    const from = base + i * 10 * HOUR;
    const token = customer(i);
    const held = await api(url, token, 'POST', '/bookings', { carId: cars[i], from: new Date(from).toISOString(), to: new Date(from + 4 * HOUR).toISOString() });
    out.push({ id: held.bookingId, token, kind: 'car', cars: [cars[i]!, cars[i ^ 1] ?? cars[i]!], from, step: 0 });
  }
  const hotel = await api(url, operator, 'POST', '/hotels', { name: 'Bench', city: 'BenchCity', timezone: 'Asia/Ho_Chi_Minh' });
  const roomTypes: number[] = [];
  for (let i = 0; i < ROOM_TYPES; i++) {
    const rt = await api(url, operator, 'POST', `/hotels/${hotel.id}/room-types`, { name: `R${i}`, depositAmount: 500_000, maxGuests: 4 });
    await api(url, operator, 'PUT', `/room-types/${rt.id}/inventory`, { from: day(2), to: day(60), sellable: 100, reason: 'bench' });
    roomTypes.push(rt.id);
  }
  for (let i = 0; i < STAYS; i++) {
    const checkIn = 3 + (i % 40);
    const token = customer(CARS + i);
    const held = await api(url, token, 'POST', '/bookings', { roomTypeId: roomTypes[i % ROOM_TYPES], checkIn: day(checkIn), checkOut: day(checkIn + 2) });
    out.push({ id: held.bookingId, token, kind: 'stay', checkIn, step: 0 });
  }
  return out;
}

/** The next change of a booking: always different from its current terms (step toggles). */
function nextChange(b: Tracked): OpenLoopRequest {
  b.step++;
  let body: Record<string, unknown>;
  if (b.kind === 'car') {
    const to = new Date(b.from! + (b.step % 2 === 1 ? 6 : 4) * HOUR).toISOString();
    body = b.step % 5 === 0 ? { carId: b.cars![Math.floor(b.step / 5) % 2], to } : { to };
  } else {
    body = { checkOut: day(b.checkIn! + (b.step % 2 === 1 ? 3 : 2)) };
    if (b.step % 4 === 1) body.rooms = 2;
    if (b.step % 4 === 3) body.rooms = 1;
  }
  return { method: 'POST', path: `/bookings/${b.id}/change`, token: b.token, body: JSON.stringify(body) };
}

/** CPU ms used so far by each of `pids` (utime + stime; a process gone is left out). */
function cpuMs(pids: Iterable<number>): Map<number, number> {
  const out = new Map<number, number>();
  for (const pid of pids) {
    const used = procCpuSeconds(pid); // null: gone
    if (used) out.set(pid, (used.user + used.sys) * 1000);
  }
  return out;
}

/** The system's processes and the database's backends (the bench's own monitor connection aside). */
async function systemPids(system: RunningSystem, monitor: pg.Client, database: string): Promise<number[]> {
  const { rows } = await monitor.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, [database]);
  return [...system.processes().keys(), ...rows.map((r) => r.pid)];
}

function print(name: string, r: OpenLoopResult): void {
  const ok = r.outcomes.get('200') ?? 0;
  printTable(name, [
    ['requests', 'seconds', 'changes/s (200)', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'answers'],
    [r.sent, fmt(r.seconds, 1), fmt(ok / r.seconds, 1), fmt(r.latency.p50, 1), fmt(r.latency.p90, 1), fmt(r.latency.p99, 1), fmt(r.latency.max, 1),
      [...r.outcomes].map(([k, v]) => `${k}: ${v}`).join(', ')],
  ]);
}

async function main() {
  const tag = `${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
  const database = `bench_changes_${tag}`;
  const url = `${PG_BASE}/${database}`;
  console.log(`bench:changes ${machineNote()}\nRATE ${RATE}/s × ${DURATION_S} s (warm-up ${WARMUP_S} s), ${CARS} car holds, ${STAYS} stay holds on ${ROOM_TYPES} room types`);
  if (spawnSync('bash', ['scripts/kafka.sh', 'start'], { cwd: ROOT, stdio: 'inherit' }).status !== 0) throw new Error('no Kafka');
  ensureBuild(envStr('BUILD', 'auto'));
  const secret = `changes-${tag}-${randomBytes(16).toString('hex')}`;
  let system: RunningSystem | null = null;
  try {
    system = await startSystem({
      databaseUrl: url, port: await freePort(), dashboardPort: await freePort(), pspPort: await freePort(), redisUrl: REDIS_URL,
      prefix: `bench:${tag}:`, kafkaPrefix: 'bench.', kafkaBrokers: envStr('KAFKA_BROKERS', '127.0.0.1:9092'), jwtSecret: secret, searchCacheTtlS: 30,
      extra: {
        HOLD_TTL_S: String(DURATION_S + WARMUP_S + 900), HOLD_RATE_LIMIT: '1000000',
        ...(process.env.API_WORKERS ? { API_WORKERS: process.env.API_WORKERS } : {}),
      },
    }, `/tmp/bench-changes-${tag}.log`);
    console.log(`system up (log ${system.logFile}); seeding over HTTP`);
    const bookings = await seed(system.url, secret);
    let i = 0;
    const next = () => nextChange(bookings[i++ % bookings.length]!);
    if (WARMUP_S > 0) print('warm-up', await openLoop(system.url, Math.max(1, RATE / 2), WARMUP_S, next));
    const monitor = new pg.Client({ connectionString: url });
    await monitor.connect();
    const counters = async () => (await monitor.query<Record<string, string>>(`
      SELECT xact_commit, tup_returned, tup_fetched, tup_inserted, tup_updated, blks_hit FROM pg_stat_database WHERE datname = $1`, [database])).rows[0]!;
    const used = async (work: () => Promise<unknown>) => {
      const c0 = await counters();
      const before = cpuMs(await systemPids(system!, monitor, database));
      const t0 = performance.now();
      await work();
      const names = system!.processes();
      const after = cpuMs(await systemPids(system!, monitor, database));
      let ms = 0;
      const by = new Map<string, number>();
      for (const [pid, v] of after) {
        const d = v - (before.get(pid) ?? 0);
        ms += d;
        const name = names.get(pid) ?? 'postgres';
        by.set(name, (by.get(name) ?? 0) + d);
      }
      await new Promise((r) => setTimeout(r, 700)); // the statistics collector publishes within ~0.5 s
      const c1 = await counters();
      const db = Object.fromEntries(Object.keys(c1).map((k) => [k, Number(c1[k]) - Number(c0[k])]));
      return { ms, by, db, seconds: (performance.now() - t0) / 1000 };
    };
    // The system's own pollers (expiry, pump, due loops, search feeds) cost CPU when idle too: measured, then netted out.
    const idle = await used(() => new Promise((r) => setTimeout(r, IDLE_S * 1000)));
    /** An open loop at RATE for DURATION_S, its table, and the system's CPU per answer of `ok` (net of idle). */
    const measure = async (name: string, ok: string, gen: () => OpenLoopRequest) => {
      let run: OpenLoopResult | undefined;
      const busy = await used(async () => { run = await openLoop(system!.url, RATE, DURATION_S, gen); });
      print(`${name}, open loop at ${RATE}/s`, run!);
      const n = Math.max(1, run!.outcomes.get(ok) ?? 0);
      const net = busy.ms - (idle.ms / idle.seconds) * busy.seconds;
      console.log(`CPU of the system (node processes + PostgreSQL backends): ${fmt(busy.ms / n, 2)} ms per ${name} gross, ${fmt(net / n, 2)} ms net of idle`);
      const perProcess = [...busy.by].map(([p, ms]) => [p, ms - ((idle.by.get(p) ?? 0) / idle.seconds) * busy.seconds] as const).sort((a, b) => b[1] - a[1]);
      console.log(`  net ms per ${name} by process: ${perProcess.filter(([, ms]) => ms / n >= 0.01).map(([p, ms]) => `${p} ${fmt(ms / n, 2)}`).join(', ')}`);
      console.log(`  database per ${name} (gross): ${Object.entries(busy.db).map(([k, v]) => `${k} ${fmt(v / n, 1)}`).join(', ')}`);
      return { run: run!, net: net / n };
    };
    console.log(`idle: ${fmt(idle.ms / idle.seconds / 1000, 3)} cores`);
    const changes = await measure('change', '200', next);
    // The same load of new holds on the same system, for scale: a busy machine inflates both alike.
    let k = 0;
    const hold = (): OpenLoopRequest => {
      // Car k mod CARS, periods 2 h apart beyond every booking of the seed: all free (201).
      const from = Math.ceil(Date.now() / HOUR) * HOUR + (48 + CARS * 10 + 24 + k * 2) * HOUR;
      const carId = bookings[k++ % CARS]!.cars![0];
      const body = { carId, from: new Date(from).toISOString(), to: new Date(from + HOUR).toISOString() };
      return { method: 'POST', path: '/bookings', token: signJwt(secret, { sub: String(900_000 + k), role: 'customer' }), body: JSON.stringify(body) };
    };
    const holds = HOLDS_TOO ? await measure('hold', '201', hold) : null;
    await monitor.end();
    console.log(`\n${verdict('p99', changes.run.latency.p99, '<=', P99_TARGET_MS, ' ms')}`);
    if (holds) console.log(`CPU per change / per hold on this system now: ${fmt(changes.net / holds.net, 2)}×`);
    const results = await runChecks({ databaseUrl: url, graceS: 600, psp: null, kafka: null, only: ['car-no-overlap', 'stay-inventory'] });
    console.log(formatResults(results));
    if (results.some((r) => r.violations.length)) process.exitCode = 1;
    finalVerdict();
  } finally {
    await system?.stop().catch(() => {});
    if (!envBool('KEEP_DB', false)) {
      const admin = new pg.Client({ connectionString: ADMIN_DB });
      await admin.connect();
      await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(database)} WITH (FORCE)`).catch(() => {});
      await admin.end();
    }
    // The system's keys: cache / limiter under `bench:<tag>:`, BullMQ under `bench<tag>` (QUEUE_PREFIX has no colons).
    const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await redis.connect().then(async () => {
      for (const match of [`bench:${tag}:*`, `bench${tag}:*`]) {
        for await (const keys of redis.scanStream({ match, count: 1000 })) if ((keys as string[]).length) await redis.del(...(keys as string[]));
      }
    }).catch(() => {});
    redis.disconnect();
  }
}

await main();
