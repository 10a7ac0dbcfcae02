/**
 * Hold expiry lag: how long after holdExpiresAt a HOLD actually becomes EXPIRED.
 *
 *   npm run bench:expiry
 *   HOLDS=200 HOLD_TTL_S=3 npm run bench:expiry        # quick smoke run
 *
 * Runs in this process, as test/helpers/harness.ts does: the expiry process's BullMQ workers and reconciler
 * (workers/expiry.ts: each hold's job, delayed to holdExpiresAt, expires it). HOLDS holds are made
 * through the holdBooking use case (DB + outbox, no HTTP), evenly over SPREAD_S seconds, so their
 * holdExpiresAt (= creation + HOLD_TTL_S) are spread the same way.
 *
 * Env (defaults): HOLDS (1000), HOLD_TTL_S (5), SPREAD_S (3), CREATE_CONCURRENCY (16), WAIT_S (20) after the
 * last holdExpiresAt, KEEP_DB (0), BENCH_STRICT (0). Target: p99 lag ≤ 1 s, every hold expired.
 */
import pg from 'pg';
import { parseConfig } from '../shared/config.js';
import { closeDeps, createDeps } from '../shared/runtime.js';
import { holdBooking } from '../shared/usecases/holds.js';
import { kindsOf } from '../shared/queues/registry.js';
import { startWork, type RunningWork } from '../workers/lib/worker-process.js';
import {
  cleanupOnSignal, envInt, envStr, finalVerdict, fmt, freshDb, machineNote, printTable, runTag, sleep, summarize, verdict,
} from './lib.js';

const HOLDS = envInt('HOLDS', 1000);
const HOLD_TTL_S = envInt('HOLD_TTL_S', 5);
const SPREAD_S = envInt('SPREAD_S', 3);
const CREATE_CONCURRENCY = envInt('CREATE_CONCURRENCY', 16);
const WAIT_S = envInt('WAIT_S', 20);
const REDIS_URL = envStr('BENCH_REDIS_URL', 'redis://127.0.0.1:6379/7');
const P99_TARGET_MS = 1000;
const HOUR = 3_600_000;

async function main() {
  const tag = runTag();
  console.log(`bench:expiry  ${machineNote()}`);
  console.log(`HOLDS=${HOLDS} HOLD_TTL_S=${HOLD_TTL_S} SPREAD_S=${SPREAD_S} CREATE_CONCURRENCY=${CREATE_CONCURRENCY} WAIT_S=${WAIT_S}`);
  const db = await freshDb(tag);
  const config = parseConfig({
    DATABASE_URL: db.url, REDIS_URL, QUEUE_PREFIX: `be${tag}`, REDIS_KEY_PREFIX: `be${tag}:`,
    HOLD_TTL_S: String(HOLD_TTL_S), PSP_URL: 'http://127.0.0.1:9', LOG_LEVEL: 'warn',
  });
  const deps = await createDeps(config, { poolSize: 8 });
  const queues = deps.producers!.queues;
  let work: RunningWork | null = null;
  const sqlPool = new pg.Pool({ connectionString: db.url, max: 2 });

  const cleanup = cleanupOnSignal(async () => {
    await work?.stop().catch(() => {});
    for (const q of Object.values(queues)) await q.obliterate({ force: true }).catch(() => {});
    await sqlPool.end().catch(() => {});
    await closeDeps(deps).catch(() => {});
    await db.drop();
  });

  try {
    await sqlPool.query(`
      INSERT INTO car (host_id, plate, model, city, daily_price, deposit_amount, currency, turnaround_minutes)
      SELECT 1, 'EXP-' || g, 'Model', 'Hanoi', 500000, 2000000, 'VND', 120 FROM generate_series(1, $1::int) g`, [HOLDS]);

    work = startWork(deps, kindsOf('expiry'));
    await sleep(500); // let the workers come up

    // One hold per car, evenly over SPREAD_S seconds; a hold's due time is when it is created, not when a slot frees.
    const from = new Date(Math.floor(Date.now() / HOUR) * HOUR + 48 * HOUR);
    const to = new Date(from.getTime() + 24 * HOUR);
    const expiresAt = new Map<number, number>();
    const failures = new Map<string, number>();
    const createLatency: number[] = [];
    const t0 = performance.now();
    let next = 0;
    console.log(`creating ${HOLDS} holds over ${SPREAD_S}s (TTL ${HOLD_TTL_S}s) ...`);
    await Promise.all(Array.from({ length: CREATE_CONCURRENCY }, async () => {
      for (;;) {
        const i = next++;
        if (i >= HOLDS) return;
        const due = t0 + (i * SPREAD_S * 1000) / HOLDS;
        const wait = due - performance.now();
        if (wait > 0) await sleep(wait);
        const s = performance.now();
        try {
          const r = await holdBooking(deps, { id: 1_000_000 + i, role: 'customer' }, { kind: 'car', carId: i + 1, from, to });
          expiresAt.set(r.bookingId, Date.parse(r.holdExpiresAt));
        } catch (e) {
          const k = (e as { code?: string }).code ?? (e as Error).name;
          failures.set(k, (failures.get(k) ?? 0) + 1);
        }
        createLatency.push(performance.now() - s);
      }
    }));
    const createdIn = (performance.now() - t0) / 1000;
    const created = summarize(createLatency);
    console.log(`created ${expiresAt.size} holds in ${fmt(createdIn, 2)}s (${fmt(expiresAt.size / createdIn, 0)}/s; create p50 ${fmt(created.p50)} ms p99 ${fmt(created.p99)} ms)` +
      (failures.size ? `; failures ${[...failures].map(([k, n]) => `${k}×${n}`).join(' ')}` : ''));

    const lastDue = Math.max(...expiresAt.values());
    const firstDue = Math.min(...expiresAt.values());
    await sleep(Math.max(0, firstDue - Date.now()));
    const cpu0 = process.cpuUsage();
    const w0 = performance.now();
    const deadline = lastDue + WAIT_S * 1000;
    let remaining = expiresAt.size;
    while (Date.now() < deadline) {
      const { rows } = await sqlPool.query<{ n: number }>(`SELECT count(*)::int AS n FROM booking WHERE status = 'HOLD'`);
      remaining = rows[0]!.n;
      if (remaining === 0 && Date.now() > lastDue) break;
      await sleep(250);
    }

    const cpu = process.cpuUsage(cpu0);
    const windowS = (performance.now() - w0) / 1000;

    // Per booking: the expired event's created_at (clock_timestamp() inside the expiring transaction, i.e. just
    // before its commit) and booking.updated_at (now() = that transaction's start).
    const { rows } = await sqlPool.query<{ id: string; status: string; updatedAt: Date; expiredAt: Date | null; }>(`
      SELECT b.id, b.status, b.updated_at AS "updatedAt", e.created_at AS "expiredAt"
      FROM booking b
      LEFT JOIN outbox e ON e.topic = 'booking.expired' AND e.message_key = b.id::text`);
    const byDue: { due: number; lag: number; at: number }[] = [];
    const lagEvent: number[] = [];
    const lagUpdated: number[] = [];
    const notExpired: Record<string, number> = {};
    for (const r of rows) {
      const due = expiresAt.get(Number(r.id));
      if (due === undefined) continue;
      if (r.status !== 'EXPIRED' || !r.expiredAt) {
        notExpired[r.status] = (notExpired[r.status] ?? 0) + 1;
        continue;
      }
      lagEvent.push(r.expiredAt.getTime() - due);
      byDue.push({ due, lag: r.expiredAt.getTime() - due, at: r.expiredAt.getTime() });
      lagUpdated.push(r.updatedAt.getTime() - due);
    }
    const ev = summarize(lagEvent);
    const up = summarize(lagUpdated);
    printTable('expiry lag = time the booking became EXPIRED − holdExpiresAt', [
      ['measure', 'n', 'min ms', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms'],
      ['lag via booking.expired outbox created_at', ev.n, fmt(ev.min, 0), fmt(ev.p50, 0), fmt(ev.p90, 0), fmt(ev.p99, 0), fmt(ev.max, 0)],
      ['lag via booking.updated_at', up.n, fmt(up.min, 0), fmt(up.p50, 0), fmt(up.p90, 0), fmt(up.p99, 0), fmt(up.max, 0)],
    ]);
    // Does the lag grow along the run (the pipeline falls behind) or is it flat (a fixed delay)?
    byDue.sort((a, b) => a.due - b.due);
    const tenth = Math.max(1, Math.floor(byDue.length / 10));
    const first = summarize(byDue.slice(0, tenth).map((x) => x.lag));
    const last = summarize(byDue.slice(-tenth).map((x) => x.lag));
    const ats = byDue.map((x) => x.at);
    const expiredSpan = (Math.max(...ats) - Math.min(...ats)) / 1000;
    const dueSpan = (byDue[byDue.length - 1]!.due - byDue[0]!.due) / 1000;
    console.log(`  (diag) first 10% due: lag p50 ${fmt(first.p50, 0)} ms, last 10% due: lag p50 ${fmt(last.p50, 0)} ms` +
      ` — holds fell due over ${fmt(dueSpan, 2)}s (${fmt(byDue.length / dueSpan, 0)}/s) and expired over ${fmt(expiredSpan, 2)}s (${fmt(byDue.length / expiredSpan, 0)}/s)`);
    console.log(`  (diag) this process (expiry workers) used ${fmt((cpu.user + cpu.system) / 1e6 / windowS, 2)} cores during the ${fmt(windowS, 1)}s expiry window,` +
      ` ${fmt((cpu.user + cpu.system) / 1000 / Math.max(1, byDue.length), 2)} ms CPU per expired hold`);
    const missing = expiresAt.size - ev.n;
    console.log(`\nholds: ${expiresAt.size} created, ${ev.n} expired, ${missing} not expired within ${WAIT_S}s of the last holdExpiresAt` +
      (missing ? ` (${Object.entries(notExpired).map(([k, n]) => `${k}×${n}`).join(' ')})` : ''));
    console.log('\n== targets');
    console.log(`expiry lag p99 ${fmt(ev.p99, 0)} ms   ${verdict('expiry p99', ev.p99, '<=', P99_TARGET_MS, ' ms')}`);
    console.log(`not expired ${missing}   ${verdict('not expired', missing, '<=', 0)}`);
    finalVerdict();
  } finally {
    await cleanup();
  }
}

await main();
