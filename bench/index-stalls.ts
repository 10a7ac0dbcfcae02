/**
 * The search indexes alone on a copy of a bench:data catalogue, with this process's event-loop delay and GC pauses
 * watched: the first build, then polls for DURATION_S with a rebuild every REBUILD_MS. Prints every poll that took
 * over 50 ms or whose second held the loop over 15 ms, with the longest GC pause in it (kind 1: scavenge, 2/4:
 * mark-compact). How the reload stalls of docs/benchmarks.md ("What held the event loop") were measured.
 *
 *   npm run bench:data -- --cars 20000 --bookings 1000000      # the template, once
 *   TEMPLATE=bench_tpl_<hash>_<day> npx tsx bench/index-stalls.ts
 *
 * Env (defaults): TEMPLATE (required), REBUILD_MS (8000), DURATION_S (20).
 */
import { PerformanceObserver } from 'node:perf_hooks';
import { cloneDatabase, dropDatabase } from './dataset/load.js';
import { createPreparedDb } from '../shared/db/prepared.js';
import { SearchIndexes } from '../shared/search/indexes.js';
import { envInt, envStr } from './lib.js';

async function main() {
  const name = `bench_stalls_${process.pid}`;
  const db = createPreparedDb(await cloneDatabase(envStr('TEMPLATE', ''), name), 4);
  let gcMax = 0;
  new PerformanceObserver((l) => {
    for (const e of l.getEntries()) {
      gcMax = Math.max(gcMax, e.duration);
      if (e.duration > 20) console.log(`  gc kind ${(e as { detail?: { kind?: number } }).detail?.kind} ${e.duration.toFixed(0)} ms, heap ${(process.memoryUsage().heapUsed / 1e6).toFixed(0)} MB`);
    }
  }).observe({ entryTypes: ['gc'] });
  let maxLag = 0;
  let last = performance.now();
  const tick = setInterval(() => {
    const n = performance.now();
    maxLag = Math.max(maxLag, n - last - 5);
    last = n;
  }, 5);
  const idx = new SearchIndexes(db, { pollMs: 200, maxAgeMs: 15_000, catalogueEveryMs: 15_000, rebuildEveryMs: envInt('REBUILD_MS', 8000) });
  try {
    const t0 = performance.now();
    await idx.poll();
    console.log(`first build ${(performance.now() - t0).toFixed(0)} ms; longest loop delay ${maxLag.toFixed(0)} ms, GC pause ${gcMax.toFixed(0)} ms`);
    const end = Date.now() + envInt('DURATION_S', 20) * 1000;
    while (Date.now() < end) {
      maxLag = 0;
      gcMax = 0;
      const t = performance.now();
      await idx.poll();
      const d = performance.now() - t;
      await new Promise((r) => setTimeout(r, 200));
      if (maxLag > 15 || d > 50) console.log(`${new Date().toISOString().slice(11, 23)} poll ${d.toFixed(0)} ms; longest loop delay ${maxLag.toFixed(0)} ms, GC pause ${gcMax.toFixed(0)} ms`);
    }
  } finally {
    clearInterval(tick);
    await db.end();
    await dropDatabase(name);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
