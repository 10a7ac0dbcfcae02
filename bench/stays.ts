/**
 * POST /bookings for stays (hotel room-nights) through the real API process, driven by autocannon.
 *
 *   npm run bench:stays
 *   DURATION_S=3 npm run bench:stays          # quick smoke run
 *
 * Scenarios, each DURATION_S long:
 *   hot    — every request asks for the same 3 nights of one room type (sellable HOT_SELLABLE, 1 room):
 *            the first HOT_SELLABLE succeed, then SOLD_OUT; all of them queue on the same three row locks.
 *   spread — requests over SPREAD_ROOM_TYPES room types × SPREAD_NIGHTS nights (sellable SPREAD_SELLABLE),
 *            1–3 nights and 1–2 rooms each: little contention, mostly 201.
 * Every request carries its own customer's token (setupRequest), and HOLD_RATE_LIMIT is lifted for the API.
 * After each scenario, SQL counts oversold nights (held + confirmed > sellable: must be 0) and nights whose
 * held / confirmed differ from the sum of rooms over the bookings covering them (must be 0).
 *
 * Env (defaults): DURATION_S (10), CONNECTIONS (32), WARMUP_S (2), HOT_SELLABLE (500), SPREAD_ROOM_TYPES (40),
 * SPREAD_NIGHTS (60), SPREAD_SELLABLE (20), API_ENTRY (api/server.ts, run through tsx; dist/api/server.js
 * works too), BENCH_REDIS_URL (redis://127.0.0.1:6379/7), KEEP_DB (0).
 */
import autocannon from 'autocannon';
import { Redis } from 'ioredis';
import pg from 'pg';
import {
  benchSecrets, cleanupOnSignal, envInt, envStr, fmt, freshDb, machineNote, printTable, runTag, signJwt, sleep, startApiProcess, summarize,
  type ApiProcess,
} from './lib.js';
import { NIGHTS_VS_BOOKINGS } from '../test/helpers/stays.js';

const DURATION_S = envInt('DURATION_S', 10);
const CONNECTIONS = envInt('CONNECTIONS', 32);
const WARMUP_S = envInt('WARMUP_S', 2);
const HOT_SELLABLE = envInt('HOT_SELLABLE', 500);
const SPREAD_ROOM_TYPES = envInt('SPREAD_ROOM_TYPES', 40);
const SPREAD_NIGHTS = envInt('SPREAD_NIGHTS', 60);
const SPREAD_SELLABLE = envInt('SPREAD_SELLABLE', 20);
const API_ENTRY = envStr('API_ENTRY', 'api/server.ts');
const REDIS_BASE = envStr('BENCH_REDIS_URL', 'redis://127.0.0.1:6379/7');
const FIRST_NIGHT = '2027-06-01';
const DEPOSIT = 1_000_000;

const addDays = (date: string, n: number) => new Date(Date.parse(`${date}T00:00:00Z`) + n * 86_400_000).toISOString().slice(0, 10);
const randInt = (min: number, max: number) => min + Math.floor(Math.random() * (max - min + 1));

// ---------------------------------------------------------------- API child

type Api = ApiProcess;

const startApi = (env: Record<string, string>, tag: string) => startApiProcess(API_ENTRY, env, `/tmp/bench-stays-api-${tag}.log`);

// ---------------------------------------------------------------- catalogue, over the API

async function call(api: Api, token: string, method: string, p: string, body: unknown): Promise<any> {
  const r = await fetch(api.url + p, {
    method, headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify(body),
  });
  const json = await r.json();
  if (!r.ok) throw new Error(`${method} ${p} → ${r.status} ${JSON.stringify(json)}`);
  return json;
}

async function roomTypes(api: Api, operator: string, hotelId: number, n: number, nights: number, sellable: number): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < n; i++) {
    const rt = await call(api, operator, 'POST', `/hotels/${hotelId}/room-types`, { name: `Room ${i}`, depositAmount: DEPOSIT });
    await call(api, operator, 'PUT', `/room-types/${rt.id}/inventory`, {
      from: FIRST_NIGHT, to: addDays(FIRST_NIGHT, nights), sellable, reason: 'bench setup',
    });
    ids.push(rt.id as number);
  }
  return ids;
}

// ---------------------------------------------------------------- runs

interface Run {
  label: string;
  durationS: number;
  statuses: Map<string, number>;
  latency: ReturnType<typeof summarize>;
  /** 201s per second from the start to the last 201 (while stock lasted). */
  holdsPerSWhileStock: number;
  roomTypeIds: number[];
  check?: Check;
}

let nextSub = 5_000_000;

async function cannon(api: Api, secret: string, label: string, durationS: number, body: () => object, roomTypeIds: number[]): Promise<Run> {
  const latencies: number[] = [];
  const statuses = new Map<string, number>();
  const count = (k: string) => statuses.set(k, (statuses.get(k) ?? 0) + 1);
  let t0 = 0;
  let last201 = 0;
  let finish!: (r: autocannon.Result) => void;
  let fail!: (e: unknown) => void;
  const done = new Promise<autocannon.Result>((resolve, reject) => { finish = resolve; fail = reject; });
  const instance = autocannon({
    url: `${api.url}/bookings`,
    method: 'POST',
    connections: CONNECTIONS,
    duration: durationS,
    timeout: 10,
    requests: [{
      setupRequest: (req) => ({
        ...req,
        headers: {
          ...req.headers, 'content-type': 'application/json',
          authorization: `Bearer ${signJwt(secret, { sub: String(nextSub++), role: 'customer' })}`,
        },
        body: JSON.stringify(body()),
      }),
      onResponse: (status, resBody) => {
        if (status === 201) {
          last201 = performance.now();
          count('201');
        } else {
          let code = '';
          try {
            code = (JSON.parse(resBody) as { error?: { code?: string } }).error?.code ?? '';
          } catch { /* not JSON */ }
          count(code ? `${status} ${code}` : String(status));
        }
      },
    }],
  }, (err, result) => (err ? fail(err) : finish(result)));
  instance.on('start', () => { t0 = performance.now(); });
  instance.on('response', (_client, _status, _bytes, responseTime) => latencies.push(responseTime));
  const result = await done;
  if (result.errors) statuses.set('conn-error', result.errors);
  if (result.timeouts) statuses.set('timeout', result.timeouts);
  return {
    label, durationS: result.duration, statuses, latency: summarize(latencies), roomTypeIds,
    holdsPerSWhileStock: last201 > t0 ? (statuses.get('201') ?? 0) / ((last201 - t0) / 1000) : 0,
  };
}

// ---------------------------------------------------------------- consistency, by SQL

interface Check {
  /** Holds the database has for the scenario's room types (the client misses answers still in flight at the end). */
  holds: number;
  nights: number;
  oversold: number;
  heldMismatch: number;
  confirmedMismatch: number;
  heldRooms: number;
  bookedRooms: number;
}

async function check(db: pg.Client, roomTypeIds: number[]): Promise<Check> {
  const { rows } = await db.query(
    `${NIGHTS_VS_BOOKINGS}
     SELECT (SELECT count(*)::int FROM booking WHERE room_type_id = ANY($1::bigint[])) AS holds,
            count(n.night)::int AS nights,
            count(*) FILTER (WHERE n.held + n.confirmed > n.sellable)::int AS oversold,
            count(*) FILTER (WHERE n.night IS NULL OR n.held <> coalesce(b.held, 0))::int AS "heldMismatch",
            count(*) FILTER (WHERE n.night IS NULL OR n.confirmed <> coalesce(b.confirmed, 0))::int AS "confirmedMismatch",
            coalesce(sum(n.held), 0)::int AS "heldRooms", coalesce(sum(b.held), 0)::int AS "bookedRooms"
     FROM n FULL JOIN b ON b.room_type_id = n.room_type_id AND b.night = n.night`,
    [roomTypeIds],
  );
  return rows[0] as Check;
}

/** Waits until the API has finished the requests autocannon abandoned at the end of its run. */
async function drain(db: pg.Client): Promise<void> {
  const until = Date.now() + 10_000;
  while (Date.now() < until) {
    const { rows } = await db.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND state <> 'idle'`);
    if (rows[0].n === 0) return;
    await sleep(50);
  }
}

// ---------------------------------------------------------------- main

async function main() {
  const tag = runTag();
  console.log(`bench:stays  ${machineNote()}`);
  console.log(`DURATION_S=${DURATION_S} CONNECTIONS=${CONNECTIONS} HOT_SELLABLE=${HOT_SELLABLE} SPREAD=${SPREAD_ROOM_TYPES} room types × ${SPREAD_NIGHTS} nights × ${SPREAD_SELLABLE} rooms`);
  const db = await freshDb(`stays_${tag}`);
  let api: Api | null = null;
  const redisPrefix = `bench-stays-${tag}:`;
  const cleanup = cleanupOnSignal(async () => {
    await api?.stop().catch(() => {});
    const redis = new Redis(REDIS_BASE, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await redis.connect().then(async () => {
      for (const match of [`${redisPrefix}*`, `bs${tag}:*`]) {
        for await (const keys of redis.scanStream({ match, count: 1000 })) if ((keys as string[]).length) await redis.del(...(keys as string[]));
      }
    }).catch(() => {});
    redis.disconnect();
    await db.drop();
  });

  const sqlClient = new pg.Client({ connectionString: db.url });
  try {
    const secrets = benchSecrets(tag);
    const secret = secrets.JWT_SECRET!;
    api = await startApi({
      DATABASE_URL: db.url, REDIS_URL: REDIS_BASE, REDIS_KEY_PREFIX: redisPrefix, QUEUE_PREFIX: `bs${tag}`,
      ...secrets,
      LOG_LEVEL: 'warn', NODE_ENV: 'production', NOTIFY_WEBHOOK_URL: 'none',
      SEARCH_CACHE_TTL_S: '0', HOLD_RATE_LIMIT: '1000000000', HOLD_RATE_WINDOW_S: '60',
    }, tag);
    console.log(`db ${db.name}; api pid ${api.child.pid} on ${api.url} (${API_ENTRY}; log ${api.logFile})`);
    await sqlClient.connect();

    const operator = signJwt(secret, { sub: '1', role: 'operator' });
    const hotel = await call(api, operator, 'POST', '/hotels', { name: 'Bench Hotel', city: 'Da Nang', timezone: 'Asia/Ho_Chi_Minh' });
    const t = performance.now();
    const [warm] = await roomTypes(api, operator, hotel.id, 1, 30, 100_000);
    const [hot] = await roomTypes(api, operator, hotel.id, 1, 3, HOT_SELLABLE);
    const spread = await roomTypes(api, operator, hotel.id, SPREAD_ROOM_TYPES, SPREAD_NIGHTS, SPREAD_SELLABLE);
    console.log(`seeded ${SPREAD_ROOM_TYPES + 2} room types over the API in ${fmt(performance.now() - t, 0)} ms`);

    const stayBody = (roomTypeId: number, maxStart: number, maxNights: number, maxRooms: number) => {
      const start = randInt(0, maxStart);
      return { roomTypeId, checkIn: addDays(FIRST_NIGHT, start), checkOut: addDays(FIRST_NIGHT, start + randInt(1, maxNights)), rooms: randInt(1, maxRooms) };
    };
    if (WARMUP_S > 0) {
      const w = await cannon(api, secret, 'warm-up', WARMUP_S, () => stayBody(warm!, 26, 3, 2), [warm!]);
      console.log(`warm-up: ${[...w.statuses].map(([k, n]) => `${k}×${n}`).join(' ')}`);
    }

    const runs: Run[] = [];
    console.log(`running: hot (1 room type, the same 3 nights, sellable ${HOT_SELLABLE}) for ${DURATION_S}s ...`);
    const hotBody = { roomTypeId: hot, checkIn: FIRST_NIGHT, checkOut: addDays(FIRST_NIGHT, 3), rooms: 1 };
    runs.push(await cannon(api, secret, 'hot', DURATION_S, () => hotBody, [hot!]));
    await drain(sqlClient);
    runs[0]!.check = await check(sqlClient, [hot!]);
    console.log(`running: spread (${SPREAD_ROOM_TYPES} room types × ${SPREAD_NIGHTS} nights, 1–3 nights, 1–2 rooms) for ${DURATION_S}s ...`);
    runs.push(await cannon(api, secret, 'spread', DURATION_S,
      () => stayBody(spread[randInt(0, spread.length - 1)]!, SPREAD_NIGHTS - 3, 3, 2), spread));
    await drain(sqlClient);
    runs[1]!.check = await check(sqlClient, spread);

    const other = (r: Run) => [...r.statuses].filter(([k]) => k !== '201' && k !== '409 SOLD_OUT').map(([k, n]) => `${k}×${n}`).join(' ') || '0';
    printTable('POST /bookings (stays)', [
      ['scenario', 'secs', 'requests', 'req/s', '201', '409 SOLD_OUT', 'other', 'holds/s', 'holds/s while stock', 'p50 ms', 'p99 ms', 'max ms'],
      ...runs.map((r) => {
        const n = [...r.statuses.values()].reduce((a, b) => a + b, 0);
        const ok = r.statuses.get('201') ?? 0;
        return [r.label, fmt(r.durationS, 1), fmt(n), fmt(n / r.durationS, 0), fmt(ok), fmt(r.statuses.get('409 SOLD_OUT') ?? 0), other(r),
          fmt(ok / r.durationS, 0), fmt(r.holdsPerSWhileStock, 0), fmt(r.latency.p50, 1), fmt(r.latency.p99, 1), fmt(r.latency.max, 0)];
      }),
    ]);
    printTable('consistency (SQL, after each scenario)', [
      ['scenario', 'holds in DB', 'nights', 'oversold nights', 'held ≠ Σ HOLD rooms', 'confirmed ≠ Σ CONFIRMED rooms', 'held room-nights', 'Σ HOLD room-nights'],
      ...runs.map((r) => [r.label, fmt(r.check!.holds), fmt(r.check!.nights), fmt(r.check!.oversold), fmt(r.check!.heldMismatch),
        fmt(r.check!.confirmedMismatch), fmt(r.check!.heldRooms), fmt(r.check!.bookedRooms)]),
    ]);
    console.log('  "holds in DB" may exceed the 201 column: autocannon drops the answers still in flight when its time is up.');
    const oversold = runs.reduce((s, r) => s + r.check!.oversold, 0);
    const mismatched = runs.reduce((s, r) => s + r.check!.heldMismatch + r.check!.confirmedMismatch, 0);
    const hotRun = runs[0]!;
    const hotHolds = hotRun.check!.holds;
    const hotExact = hotHolds <= HOT_SELLABLE && hotRun.check!.heldRooms === 3 * hotHolds;
    console.log(`\noversold nights: ${oversold}`);
    console.log(`held = Σ rooms of HOLD bookings on every night: ${mismatched === 0 ? 'yes' : `NO (${mismatched} nights differ)`}`);
    console.log(`hot: ${hotHolds} holds for ${HOT_SELLABLE} rooms (${hotHolds === HOT_SELLABLE ? 'sold out' : 'not sold out within the run'}), ` +
      `each of its 3 nights held = holds: ${hotExact ? 'yes' : 'NO'}`);
    const bad = runs.some((r) => [...r.statuses.keys()].some((k) => k.startsWith('5') || k === 'conn-error' || k === 'timeout'));
    if (bad) console.log(`5xx / errors seen: see ${api.logFile}`);
    if (oversold || mismatched || !hotExact || bad) process.exitCode = 1;
  } finally {
    await sqlClient.end().catch(() => {});
    await cleanup();
  }
}

await main();
