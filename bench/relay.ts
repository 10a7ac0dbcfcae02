/**
 * Outbox → Kafka (the outbox pump): drain rate of a burst, and commit→Kafka lag at a steady rate.
 *
 *   npm run bench:relay
 *   BURST_EVENTS=20000 STEADY_S=5 npm run bench:relay     # quick smoke run
 *
 * The pump (workers/pump.ts startPump, a pool of 2 like the pump process) runs in this
 * process against a fresh database, with a unique KAFKA_TOPIC_PREFIX. Outbox rows are inserted with plain pg
 * (one INSERT … SELECT per chunk, so one NOTIFY per chunk, as a multi-event transaction would) while it runs.
 * A kafkajs consumer reads the topics back for the end-to-end figure (receive time − occurredAt).
 *
 * Phase 1, burst: BURST_EVENTS rows as fast as possible in chunks of BURST_CHUNK. Measures the drain rate
 *   (events / (last published_at − first published_at)). Its lag is mostly queueing behind the backlog.
 * Phase 2, steady: STEADY_RATE rows/s for STEADY_S seconds, one insert every STEADY_TICK_MS. Measures the lag
 *   published_at − created_at (created_at = clock_timestamp() at insert, published_at = after the Kafka ack).
 *
 * Env (defaults): BURST_EVENTS (100000), BURST_CHUNK (2000), KEYS (5000) distinct message keys, STEADY_RATE (5000),
 * STEADY_S (15), STEADY_TICK_MS (20), CONSUMER (1), DRAIN_TIMEOUT_S (180), KAFKA_BROKERS (127.0.0.1:9092),
 * KEEP_DB (0), KEEP_TOPICS (0), BENCH_STRICT (0). Targets: ≥ 5,000 events/s; steady p99 lag ≤ 250 ms.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Consumer } from 'kafkajs';
import pg from 'pg';
import { createPreparedDb } from '../shared/db/prepared.js';
import { topicName, type EventType } from '../shared/events/topics.js';
import { KafkaPublisher, createKafka, ensureTopics } from '../workers/kafka.js';
import { startPump } from '../workers/pump.js';
import {
  cleanupOnSignal, envBool, envInt, envStr, finalVerdict, fmt, freshDb, machineNote, printTable, runTag, sleep, summarize,
  verdict, type Summary,
} from './lib.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BURST_EVENTS = envInt('BURST_EVENTS', 100_000);
const BURST_CHUNK = envInt('BURST_CHUNK', 2000);
const KEYS = envInt('KEYS', 5000);
const STEADY_RATE = envInt('STEADY_RATE', 5000);
const STEADY_S = envInt('STEADY_S', 15);
const STEADY_TICK_MS = envInt('STEADY_TICK_MS', 20);
const CONSUMER = envBool('CONSUMER', true);
const DRAIN_TIMEOUT_S = envInt('DRAIN_TIMEOUT_S', 180);
const BROKERS = envStr('KAFKA_BROKERS', '127.0.0.1:9092').split(',').map((s) => s.trim());
const RATE_TARGET = 5000;
const LAG_TARGET_MS = 250;
const TYPES: EventType[] = ['booking.held', 'booking.confirmed', 'booking.expired'];

async function kafkaAnswers(): Promise<boolean> {
  const r = spawnSync(process.execPath, [path.join(ROOT, 'scripts/kafka-ready.mjs'), '5', BROKERS.join(',')], { cwd: ROOT });
  return r.status === 0;
}

/** Inserts `count` outbox rows of phase `phase` starting at sequence `seq`, in one statement (one NOTIFY). */
async function insertRows(client: pg.ClientBase, phase: string, seq: number, count: number): Promise<void> {
  await client.query(`
    INSERT INTO outbox (event_id, topic, message_key, payload)
    SELECT id, t, k::text, jsonb_build_object(
             'eventId', id, 'type', t, 'bookingId', k, 'bench', $1::text, 'seq', s,
             'occurredAt', to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))
    FROM (SELECT gen_random_uuid() AS id, s,
                 ($4::text[])[1 + s % array_length($4::text[], 1)] AS t,
                 1 + (s::bigint * 7919) % $5::int AS k
          FROM generate_series($2::int, $2::int + $3::int - 1) s) g`, [phase, seq, count, TYPES, KEYS]);
}

interface PhaseStats {
  events: number;
  published: number;
  firstPublish: Date | null;
  lastPublish: Date | null;
  firstCreated: Date | null;
  lastCreated: Date | null;
  lag: Summary;
}

async function phaseStats(client: pg.ClientBase, phase: string): Promise<PhaseStats> {
  const { rows } = await client.query<{ lag: number | null; createdAt: Date; publishedAt: Date | null }>(`
    SELECT extract(epoch FROM published_at - created_at) * 1000 AS lag, created_at AS "createdAt", published_at AS "publishedAt"
    FROM outbox WHERE payload->>'bench' = $1`, [phase]);
  const lags: number[] = [];
  let firstPublish: Date | null = null, lastPublish: Date | null = null, firstCreated: Date | null = null, lastCreated: Date | null = null;
  for (const r of rows) {
    if (!firstCreated || r.createdAt < firstCreated) firstCreated = r.createdAt;
    if (!lastCreated || r.createdAt > lastCreated) lastCreated = r.createdAt;
    if (r.publishedAt === null || r.lag === null) continue;
    lags.push(Number(r.lag));
    if (!firstPublish || r.publishedAt < firstPublish) firstPublish = r.publishedAt;
    if (!lastPublish || r.publishedAt > lastPublish) lastPublish = r.publishedAt;
  }
  return { events: rows.length, published: lags.length, firstPublish, lastPublish, firstCreated, lastCreated, lag: summarize(lags) };
}

async function waitPublished(client: pg.ClientBase, phase: string, timeoutS: number): Promise<number> {
  const deadline = Date.now() + timeoutS * 1000;
  for (;;) {
    const { rows } = await client.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM outbox WHERE published_at IS NULL AND payload->>'bench' = $1`, [phase]);
    if (rows[0]!.n === 0 || Date.now() > deadline) return rows[0]!.n;
    await sleep(200);
  }
}

/** Receive-time − occurredAt per message, by phase; duplicates (at least once) counted apart. */
class Received {
  lags = new Map<string, number[]>();
  seen = new Map<string, Set<number>>();
  duplicates = 0;
  add(phase: string, seq: number, lagMs: number) {
    let seen = this.seen.get(phase);
    if (!seen) this.seen.set(phase, (seen = new Set()));
    if (seen.has(seq)) {
      this.duplicates++;
      return;
    }
    seen.add(seq);
    let l = this.lags.get(phase);
    if (!l) this.lags.set(phase, (l = []));
    l.push(lagMs);
  }
  count(phase: string) {
    return this.seen.get(phase)?.size ?? 0;
  }
}

async function waitReceived(rx: Received, phase: string, n: number, timeoutS: number): Promise<void> {
  const deadline = Date.now() + timeoutS * 1000;
  while (rx.count(phase) < n && Date.now() < deadline) await sleep(200);
}

const seconds = (a: Date | null, b: Date | null) => (a && b ? (b.getTime() - a.getTime()) / 1000 : NaN);

async function main() {
  const tag = runTag();
  const prefix = `bench.${tag}.`;
  console.log(`bench:relay  ${machineNote()}`);
  console.log(`BURST_EVENTS=${BURST_EVENTS} BURST_CHUNK=${BURST_CHUNK} KEYS=${KEYS} STEADY_RATE=${STEADY_RATE} STEADY_S=${STEADY_S} STEADY_TICK_MS=${STEADY_TICK_MS} CONSUMER=${CONSUMER ? 1 : 0} brokers=${BROKERS.join(',')}`);
  if (!(await kafkaAnswers())) {
    console.log('kafka does not answer; running scripts/kafka.sh start ...');
    const r = spawnSync('bash', [path.join(ROOT, 'scripts/kafka.sh'), 'start'], { cwd: ROOT, stdio: 'inherit' });
    if (r.status !== 0 || !(await kafkaAnswers())) throw new Error(`no Kafka broker answers on ${BROKERS.join(',')}`);
  }

  const db = await freshDb(tag);
  const relayDb = createPreparedDb(db.url, 2);
  const kafka = createKafka(BROKERS, `bench-${tag}`);
  const ins = new pg.Client({ connectionString: db.url });
  await ins.connect();
  let relay: { stop(): Promise<void> } | null = null;
  let consumer: Consumer | null = null;

  const cleanup = cleanupOnSignal(async () => {
    await relay?.stop().catch(() => {});
    await consumer?.disconnect().catch(() => {});
    await relayDb.end().catch(() => {});
    await ins.end().catch(() => {});
    if (!envBool('KEEP_TOPICS', false)) {
      const admin = kafka.admin();
      await admin.connect().then(async () => {
        const mine = (await admin.listTopics()).filter((t) => t.startsWith(prefix));
        if (mine.length) await admin.deleteTopics({ topics: mine, timeout: 10_000 });
      }).catch((e) => console.error('could not delete bench topics:', String(e)));
      await admin.disconnect().catch(() => {});
    }
    await db.drop();
  });

  try {
    await ensureTopics(kafka, prefix);
    const rx = new Received();
    if (CONSUMER) {
      consumer = kafka.consumer({ groupId: `bench-${tag}`, maxWaitTimeInMs: 100 });
      await consumer.connect();
      await consumer.subscribe({ topics: TYPES.map((t) => topicName(prefix, t)), fromBeginning: true });
      const joined = new Promise<void>((r) => consumer!.on(consumer!.events.GROUP_JOIN, () => r()));
      await consumer.run({
        eachBatch: async ({ batch }) => {
          const now = Date.now();
          for (const m of batch.messages) {
            const v = JSON.parse(m.value!.toString()) as { bench: string; seq: number; occurredAt: string };
            rx.add(v.bench, v.seq, now - Date.parse(v.occurredAt));
          }
        },
      });
      await joined;
    }
    let pump: ReturnType<typeof startPump> | null = null;
    const publisher = new KafkaPublisher(BROKERS, prefix, () => pump?.kick());
    publisher.start();
    pump = startPump(relayDb, { kafka: publisher });
    relay = { stop: async () => { await pump!.stop(); await publisher.stop(); } };
    await sleep(1000); // the producer connects in the background

    // ---- phase 1: burst
    console.log(`burst: inserting ${fmt(BURST_EVENTS)} outbox rows in chunks of ${BURST_CHUNK} ...`);
    const b0 = performance.now();
    for (let s = 0; s < BURST_EVENTS; s += BURST_CHUNK) await insertRows(ins, 'burst', s, Math.min(BURST_CHUNK, BURST_EVENTS - s));
    const insertS = (performance.now() - b0) / 1000;
    console.log(`burst: inserted in ${fmt(insertS, 2)}s (${fmt(BURST_EVENTS / insertS, 0)} rows/s); waiting for the relay ...`);
    const leftBurst = await waitPublished(ins, 'burst', DRAIN_TIMEOUT_S);
    if (CONSUMER) await waitReceived(rx, 'burst', BURST_EVENTS, 30);
    const burst = await phaseStats(ins, 'burst');

    // ---- phase 2: steady rate
    console.log(`steady: ${fmt(STEADY_RATE)} rows/s for ${STEADY_S}s, one insert every ${STEADY_TICK_MS} ms ...`);
    const s0 = performance.now();
    const sEnd = s0 + STEADY_S * 1000;
    let inserted = 0;
    let behind = 0;
    for (let tick = 1; ; tick++) {
      const due = Math.min(STEADY_RATE * STEADY_S, Math.floor(((performance.now() - s0) / 1000) * STEADY_RATE));
      if (due > inserted) {
        await insertRows(ins, 'steady', inserted, due - inserted);
        inserted = due;
      }
      if (performance.now() >= sEnd) break;
      const wait = s0 + tick * STEADY_TICK_MS - performance.now();
      if (wait > 0) await sleep(wait);
      else behind++;
    }
    const due = STEADY_RATE * STEADY_S;
    if (inserted < due) await insertRows(ins, 'steady', inserted, due - inserted);
    const steadyInsertS = (performance.now() - s0) / 1000;
    const leftSteady = await waitPublished(ins, 'steady', DRAIN_TIMEOUT_S);
    if (CONSUMER) await waitReceived(rx, 'steady', due, 30);
    const steady = await phaseStats(ins, 'steady');

    // ---- report
    const burstRate = burst.published / seconds(burst.firstPublish, burst.lastPublish);
    const rcvB = summarize(rx.lags.get('burst') ?? []);
    const rcvS = summarize(rx.lags.get('steady') ?? []);
    printTable('relay throughput', [
      ['phase', 'events', 'published', 'insert s', 'first→last publish s', 'events/s', 'first insert→last publish s'],
      ['burst (backlog drain)', burst.events, burst.published, fmt(insertS, 2), fmt(seconds(burst.firstPublish, burst.lastPublish), 2), fmt(burstRate, 0),
        fmt(seconds(burst.firstCreated, burst.lastPublish), 2)],
      ['steady', steady.events, steady.published, fmt(steadyInsertS, 2), fmt(seconds(steady.firstPublish, steady.lastPublish), 2),
        fmt(steady.published / seconds(steady.firstPublish, steady.lastPublish), 0), fmt(seconds(steady.firstCreated, steady.lastPublish), 2)],
    ]);
    const row = (label: string, s: Summary) => [label, s.n, fmt(s.p50, 1), fmt(s.p90, 1), fmt(s.p99, 1), fmt(s.max, 0)];
    printTable('commit → Kafka lag (ms)', [
      ['measure', 'n', 'p50', 'p90', 'p99', 'max'],
      row('burst: published_at − created_at (queueing behind the backlog)', burst.lag),
      ...(CONSUMER ? [row('burst: consumer receive − occurredAt', rcvB)] : []),
      row(`steady ${fmt(STEADY_RATE)}/s: published_at − created_at`, steady.lag),
      ...(CONSUMER ? [row(`steady ${fmt(STEADY_RATE)}/s: consumer receive − occurredAt`, rcvS)] : []),
    ]);
    console.log(`  steady insert ticks that ran late: ${behind}; achieved insert rate ${fmt(due / steadyInsertS, 0)}/s`);
    if (CONSUMER) console.log(`  consumer: burst ${fmt(rx.count('burst'))}/${fmt(BURST_EVENTS)}, steady ${fmt(rx.count('steady'))}/${fmt(due)} received, ${rx.duplicates} duplicates`);
    if (leftBurst || leftSteady) console.log(`  NOT published within ${DRAIN_TIMEOUT_S}s: burst ${leftBurst}, steady ${leftSteady}`);

    console.log('\n== targets');
    console.log(`burst drain ${fmt(burstRate, 0)} events/s   ${verdict('events/s (burst)', burstRate, '>=', RATE_TARGET)}`);
    console.log(`steady p99 lag ${fmt(steady.lag.p99, 1)} ms   ${verdict('p99 lag (steady)', steady.lag.p99, '<=', LAG_TARGET_MS, ' ms')}`);
    console.log(`burst p99 lag ${fmt(burst.lag.p99, 0)} ms   (informational: a 100k burst measures the backlog, not the lag)`);
    console.log(`unpublished ${leftBurst + leftSteady}   ${verdict('unpublished', leftBurst + leftSteady, '<=', 0)}`);
    finalVerdict();
  } finally {
    await cleanup();
  }
}

await main();
