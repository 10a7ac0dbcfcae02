/**
 * POST /quotes through the real API process, open loop, on a catalogue of ROOM_TYPES room types × NIGHTS nights
 * (inventory and one rate plan each, priced every night).
 *
 *   npm run bench:quotes
 *   DURATION_S=3 ROOM_TYPES=200 npm run bench:quotes     # quick smoke run
 *
 * Each request: a random room type, a check-in in the first NIGHTS − 30 nights, 1–7 nights, 1–2 rooms, 1–3 guests
 * per room, a customer from a pool of pre-signed tokens (quotes are not rate limited). One night in seven has
 * minStay 2, so a share of the answers is 409 STAY_RESTRICTED, as in real traffic.
 * The catalogue is seeded by SQL (triggers off: the ledgers are not what is measured) and never ANALYZEd, like
 * production with autovacuum off; the plans of the quote's queries are printed (EXPLAIN without ANALYZE).
 *
 * Env (defaults): RATE (1000), DURATION_S (10), WARMUP_S (3, at RATE / 2), ROOM_TYPES (2000), NIGHTS (365),
 * HOTELS (100), API_ENTRY (api/server.ts through tsx; dist/api/server.js after npm run build), API_NODE_ARGS,
 * BENCH_REDIS_URL (redis://127.0.0.1:6379/7), KEEP_DB (0), BENCH_STRICT (0).
 * Target (issue 9): 1,000 quotes/s with p99 ≤ 30 ms.
 */
import pg from 'pg';
import { Redis } from 'ioredis';
import { createPool, type Interceptor } from 'slonik';
import {
  benchSecrets, cleanupOnSignal, envInt, envStr, finalVerdict, fmt, freshDb, generatorFirst, machineNote, printTable, runTag, signJwt, startApiProcess, verdict,
} from './lib.js';
import { openLoop, type OpenLoopResult } from './open-loop.js';
import { addDays } from '../shared/domain/hotel-dates.js';
import { readStay } from '../shared/db/rate-plans.js';
import { findQuote, insertQuote } from '../shared/db/quotes.js';
import type { PreparedQueries } from '../shared/db/prepared.js';

const RATE = envInt('RATE', 1000);
const DURATION_S = envInt('DURATION_S', 10);
const WARMUP_S = envInt('WARMUP_S', 3);
const ROOM_TYPES = envInt('ROOM_TYPES', 2000);
const NIGHTS = envInt('NIGHTS', 365);
const HOTELS = envInt('HOTELS', 100);
const API_ENTRY = envStr('API_ENTRY', 'api/server.ts');
/** Extra node flags for the API child, e.g. API_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof". */
const API_NODE_ARGS = envStr('API_NODE_ARGS', '').split(' ').filter(Boolean);
const REDIS_BASE = envStr('BENCH_REDIS_URL', 'redis://127.0.0.1:6379/7');
const P99_TARGET_MS = 30;
// Tomorrow in UTC is at least today in every hotel zone (checkIn may not be before the hotel's today).
const FIRST_NIGHT = addDays(new Date().toISOString().slice(0, 10), 2);

async function seed(db: pg.Client): Promise<void> {
  await db.query('BEGIN');
  // Bulk load: row triggers (ledgers) off for this session only.
  await db.query(`SET LOCAL session_replication_role = replica`);
  await db.query(`INSERT INTO hotel (name, city, timezone, check_in_time)
    SELECT 'Hotel ' || i, 'City ' || (i % 10), 'Asia/Ho_Chi_Minh', '14:00' FROM generate_series(1, $1::int) i`, [HOTELS]);
  await db.query(`INSERT INTO room_type (hotel_id, name, deposit_amount, currency, max_guests)
    SELECT (SELECT min(id) FROM hotel) + i % $2::int, 'Room ' || i, 500000, 'VND', 3 FROM generate_series(1, $1::int) i`, [ROOM_TYPES, HOTELS]);
  await db.query(`INSERT INTO room_night (room_type_id, night, sellable)
    SELECT rt.id, $1::date + n, 20 FROM room_type rt, generate_series(0, $2::int - 1) n`, [FIRST_NIGHT, NIGHTS]);
  await db.query(`INSERT INTO rate_plan (room_type_id, name) SELECT id, 'Best available' FROM room_type`);
  await db.query(`INSERT INTO rate_night (rate_plan_id, night, price, min_stay, max_stay, closed_to_arrival, closed_to_departure, stop_sell)
    SELECT rp.id, $1::date + n, 800000 + (rp.id * 7 + n) % 9 * 50000, CASE WHEN n % 7 = 5 THEN 2 ELSE 1 END, 30, false, false, false
    FROM rate_plan rp, generate_series(0, $2::int) n`, [FIRST_NIGHT, NIGHTS]);
  await db.query('COMMIT');
}

/** EXPLAIN (no ANALYZE) of exactly the SQL the product functions send, with their parameters. */
async function explainQuoteQueries(url: string, db: pg.Client, roomTypeId: number, ratePlanId: number): Promise<void> {
  const plans: { name: string; plan: string[] }[] = [];
  let current = '';
  const explain: Interceptor = {
    name: 'explain',
    beforeQueryExecution: async (_context, query) => {
      const text = query.sql.replace(/\$slonik_(\d+)/g, '$$$1');
      const { rows } = await db.query(`EXPLAIN (COSTS OFF) ${text}`, query.values as unknown[]);
      plans.push({ name: current, plan: rows.map((r: Record<string, string>) => r['QUERY PLAN']!) });
      return { command: 'SELECT', fields: [], notices: [], rowCount: 0, rows: [], type: 'QueryResult' } as never;
    },
  };
  const pool = await createPool(url, { interceptors: [explain], maximumPoolSize: 1 });
  // The prepared statements (readStay, insertQuote) are explained as they are sent: their text and values.
  const prepared: PreparedQueries = {
    query: async <R>(_name: string, text: string, values: readonly unknown[]) => {
      const { rows } = await db.query(`EXPLAIN (COSTS OFF) ${text}`, values as unknown[]);
      plans.push({ name: current, plan: rows.map((r: Record<string, string>) => r['QUERY PLAN']!) });
      return [] as R[];
    },
  };
  const run = async (name: string, fn: () => Promise<unknown>) => {
    current = name;
    await fn().catch(() => {}); // the empty answer may not satisfy the function; the plan is what we want
  };
  const checkIn = addDays(FIRST_NIGHT, 10);
  await run('readStay (catalogue + nights, one statement)', () => readStay(prepared, { roomTypeId, ratePlanId, checkIn, nightCount: 7 }));
  await run('insertQuote', () => insertQuote(prepared, {
    customerId: 1, fingerprint: 'x', roomTypeId, ratePlanId, checkIn, checkOut: addDays(checkIn, 1), rooms: 1, guests: 1,
    nightPrices: [1], totalAmount: 1, depositAmount: 1, currency: 'VND', validUntil: new Date().toISOString(),
  }));
  await run('findQuote (holds)', () => findQuote(pool, 1, 1));
  await pool.end();
  for (const p of plans) console.log(`\n-- ${p.name}\n${p.plan.map((l) => `   ${l}`).join('\n')}`);
}

async function main() {
  const tag = runTag();
  console.log(`bench:quotes  ${machineNote()}`);
  console.log(`RATE=${RATE}/s DURATION_S=${DURATION_S} ROOM_TYPES=${ROOM_TYPES} NIGHTS=${NIGHTS} HOTELS=${HOTELS}`);
  const db = await freshDb(`quotes_${tag}`);
  const client = new pg.Client({ connectionString: db.url });
  let api: Awaited<ReturnType<typeof startApiProcess>> | null = null;
  const redisPrefix = `bench-quotes-${tag}:`;
  const cleanup = cleanupOnSignal(async () => {
    await api?.stop().catch(() => {});
    await client.end().catch(() => {});
    const redis = new Redis(REDIS_BASE, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await redis.connect().then(async () => {
      for await (const keys of redis.scanStream({ match: `${redisPrefix}*`, count: 1000 })) if ((keys as string[]).length) await redis.del(...(keys as string[]));
    }).catch(() => {});
    redis.disconnect();
    await db.drop();
  });
  try {
    await client.connect();
    const t = performance.now();
    await seed(client);
    const { rows } = await client.query(`SELECT rp.room_type_id::int AS rt, rp.id::int AS rp FROM rate_plan rp ORDER BY rp.id`);
    const plans = rows as { rt: number; rp: number }[];
    console.log(`seeded ${fmt(ROOM_TYPES)} room types × ${NIGHTS} nights (inventory + calendar) in ${fmt((performance.now() - t) / 1000, 1)} s; no ANALYZE`);
    await explainQuoteQueries(db.url, client, plans[0]!.rt, plans[0]!.rp);

    // Production-grade secrets (a production config refuses short ones), as bench:holds and bench:stays pass.
    const secrets = benchSecrets(tag);
    const secret = secrets.JWT_SECRET!;
    api = await startApiProcess(API_ENTRY, {
      DATABASE_URL: db.url, REDIS_URL: REDIS_BASE, REDIS_KEY_PREFIX: redisPrefix, QUEUE_PREFIX: `bq${tag}`,
      ...secrets,
      LOG_LEVEL: 'warn', NODE_ENV: 'production', NOTIFY_WEBHOOK_URL: 'none',
    }, `/tmp/bench-quotes-api-${tag}.log`, API_NODE_ARGS);
    console.log(`\ndb ${db.name}; api pid ${api.child.pid} on ${api.url} (${API_ENTRY}; log ${api.logFile})`);
    console.log(generatorFirst());

    const tokens = Array.from({ length: 2000 }, (_, i) => signJwt(secret, { sub: String(7_000_000 + i), role: 'customer' }, 3600));
    const rand = (min: number, max: number) => min + Math.floor(Math.random() * (max - min + 1));
    const next = () => {
      const p = plans[rand(0, plans.length - 1)]!;
      const start = rand(0, Math.max(0, NIGHTS - 31));
      const rooms = rand(1, 2);
      const body = { roomTypeId: p.rt, ratePlanId: p.rp, checkIn: addDays(FIRST_NIGHT, start), checkOut: addDays(FIRST_NIGHT, start + rand(1, 7)), rooms, guests: rand(1, 3 * rooms) };
      return { method: 'POST', path: '/quotes', token: tokens[rand(0, tokens.length - 1)]!, body: JSON.stringify(body) };
    };
    if (WARMUP_S > 0) {
      const w = await openLoop(api.url, Math.max(1, RATE / 2), WARMUP_S, next);
      console.log(`warm-up @${RATE / 2}/s: ${[...w.outcomes].map(([k, n]) => `${k}×${n}`).join(' ')}, p99 ${fmt(w.latency.p99, 1)} ms`);
    }
    const cpu0 = api.cpuSeconds();
    console.log(`running: POST /quotes open loop @${RATE}/s for ${DURATION_S}s ...`);
    const r: OpenLoopResult = await openLoop(api.url, RATE, DURATION_S, next);
    const cpu1 = api.cpuSeconds();
    const apiCores = (cpu1.user + cpu1.sys - cpu0.user - cpu0.sys) / r.seconds;
    const { rows: [counts] } = await client.query(`SELECT count(*)::int AS quotes FROM quote`);
    printTable('POST /quotes (open loop, latency from each request\'s due time)', [
      ['rate/s', 'secs', 'sent', 'answers', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms', 'API cores'],
      [fmt(r.sent / r.seconds, 0), fmt(r.seconds, 1), fmt(r.sent), [...r.outcomes].map(([k, n]) => `${k}×${n}`).join(' '),
        fmt(r.latency.p50, 1), fmt(r.latency.p90, 1), fmt(r.latency.p99, 1), fmt(r.latency.max, 0), fmt(apiCores, 2)],
    ]);
    console.log(`quotes stored: ${fmt(counts.quotes)} (warm-up included)`);
    console.log(verdict('p99', r.latency.p99, '<=', P99_TARGET_MS, ' ms'));
    console.log(verdict('rate', r.sent / r.seconds, '>=', RATE * 0.98, '/s'));
    const bad = [...r.outcomes.keys()].filter((k) => k.startsWith('5') || k === 'conn-error');
    if (bad.length) {
      console.log(`5xx / errors: ${bad.join(', ')} — see ${api.logFile}`);
      process.exitCode = 1;
    }
    finalVerdict();
  } finally {
    await cleanup();
  }
}

await main();
