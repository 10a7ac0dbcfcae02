import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks';
import { cloneDatabase, dropDatabase } from '/work/wt/peak/bench/dataset/load.js';
import { createPreparedDb } from '/work/wt/peak/shared/db/prepared.js';
import { SearchIndexes } from '/work/wt/peak/shared/search/indexes.js';
const name = 'bench_peak_probe_' + process.pid;
const url = await cloneDatabase(process.argv[2]!, name);
const db = createPreparedDb(url, 4);
let gcMax = 0; let gcTotal = 0;
new PerformanceObserver((l) => { for (const e of l.getEntries()) { gcMax = Math.max(gcMax, e.duration); gcTotal += e.duration; if (e.duration > 20) console.log('  gc', (e as any).detail?.kind, e.duration.toFixed(0), 'heap MB', (process.memoryUsage().heapUsed/1e6).toFixed(0)); } }).observe({ entryTypes: ['gc'] });
let maxLag = 0; let last = performance.now();
setInterval(() => { const n = performance.now(); maxLag = Math.max(maxLag, n - last - 5); last = n; }, 5);
const idx = new SearchIndexes(db, { pollMs: 200, maxAgeMs: 15000, catalogueEveryMs: Number(process.argv[3] ?? 3000), rebuildEveryMs: Number(process.argv[4] ?? 10000) });
const t0 = performance.now();
await idx.poll();
console.log('first build', (performance.now() - t0).toFixed(0), 'ms; maxLag', maxLag.toFixed(0), 'gcMax', gcMax.toFixed(0));
maxLag = 0; gcMax = 0;
const end = Date.now() + Number(process.argv[5] ?? 25000);
while (Date.now() < end) {
  const t = performance.now();
  maxLag = 0; gcMax = 0;
  await idx.poll();
  const d = performance.now() - t;
  await new Promise((r) => setTimeout(r, 200));
  if (maxLag > 15 || d > 50) console.log(new Date().toISOString().slice(11, 23), 'poll', d.toFixed(0), 'ms; maxLag', maxLag.toFixed(0), 'gcMax', gcMax.toFixed(0));
}
await db.end();
await dropDatabase(name);
