/**
 * The cost curve: the same moderate load at growing catalogue sizes, so growth is visible. For each size in
 * --sizes (bookings; default 10000,100000,1000000 — add 10000000 when there is time: its template takes a few
 * minutes to build once), a full bench:peak run with two phases — holds (--hold-rate, default 200/s) and search
 * (--search-rate, default 100/s, searches alone) — then the hold and search p50/p99, the warm
 * EXPLAIN ANALYZE time of each query and the table sizes, as a table and bench/reports/scale-<time>.html.
 *
 *   npm run bench:scale
 *   npm run bench:scale -- --sizes 10000,100000 --duration 8 --warmup 2      # quick
 * Every bench:peak option applies (--cars, --duration, --connections, …); --floor-seconds defaults to 0 here.
 */
import { parseArgs } from 'node:util';
import { fmt, printTable } from './lib.js';
import { peakArgs } from './peak.js';
import { runPeak, type PeakResult } from './peak/run.js';
import { htmlPeak, writeReport } from './peak/report.js';
import { lineChart } from './peak/svg.js';

async function main() {
  const argv = process.argv.slice(2);
  const { values } = parseArgs({ args: argv, strict: false, options: { sizes: { type: 'string' } } });
  const sizes = String(values.sizes ?? '10000,100000,1000000').split(',').map(Number);
  if (sizes.some((n) => !Number.isInteger(n) || n < 0)) throw new Error('--sizes is a comma list of booking counts');
  const rest = [...argv];
  const at = rest.indexOf('--sizes');
  if (at >= 0) rest.splice(at, 2);
  const given = (k: string) => rest.includes(`--${k}`);
  const defaults = [
    ...(given('phases') ? [] : ['--phases', 'holds,search']), ...(given('hold-rate') ? [] : ['--hold-rate', '200']),
    ...(given('search-rate') ? [] : ['--search-rate', '100']),
    ...(given('floor-seconds') ? [] : ['--floor-seconds', '0']),
  ];
  const rows: { bookings: number; r: PeakResult }[] = [];
  for (const bookings of sizes) {
    const cfg = peakArgs([...rest, ...defaults, '--bookings', String(bookings)]);
    console.log(`\n#### ${fmt(bookings)} bookings`);
    rows.push({ bookings, r: await runPeak(cfg) });
  }
  const stream = (r: PeakResult, phase: string, name: string) => r.phases.find((p) => p.spec.name === phase)?.streams.find((s) => s.name === name);
  const plan = (r: PeakResult, prefix: string) => r.plans.find((p) => p.name.startsWith(prefix));
  const table = [
    ['bookings', 'active car', 'heap MB', 'GiST MB', 'hold /s', 'hold p50', 'hold p99', 'search /s', 'search p50', 'search p99', 'search query warm ms', 'hold INSERT warm ms'],
    ...rows.map(({ bookings, r }) => {
      const h = stream(r, 'holds', 'hold');
      const s = stream(r, 'search', 'search');
      return [fmt(bookings), fmt(r.sizes['active car bookings'] ?? NaN), fmt((r.sizes['booking heap bytes'] ?? NaN) / 2 ** 20, 0), fmt((r.sizes['GiST (exclusion) bytes'] ?? NaN) / 2 ** 20, 0),
        fmt(h?.answeredPerS ?? NaN, 0), fmt(h?.p50 ?? NaN, 1), fmt(h?.p99 ?? NaN, 1), fmt(s?.answeredPerS ?? NaN, 0), fmt(s?.p50 ?? NaN, 1), fmt(s?.p99 ?? NaN, 1),
        fmt(plan(r, 'car search')?.warmMs ?? NaN, 1), fmt(plan(r, 'car hold')?.warmMs ?? NaN, 2)];
    }),
  ];
  printTable('cost curve (latencies in ms, from the scheduled send)', table);
  const point = (f: (r: PeakResult) => number | undefined) => rows.map(({ bookings, r }) => [Math.log10(Math.max(1, bookings)), f(r) ?? NaN] as [number, number]);
  const chart = lineChart('p99 and single-query time vs bookings', [
    { name: 'hold p99', points: point((r) => stream(r, 'holds', 'hold')?.p99) },
    { name: 'search p99', points: point((r) => stream(r, 'search', 'search')?.p99) },
    { name: 'search query (warm)', points: point((r) => plan(r, 'car search')?.warmMs), dashed: true },
    { name: 'hold INSERT (warm)', points: point((r) => plan(r, 'car hold')?.warmMs), dashed: true },
  ], { xLabel: 'log10(bookings)', yLabel: 'ms (log)', logY: true });
  const html = `<!doctype html><html><head><meta charset="utf-8"><title>bench:scale</title></head><body style="font-family:sans-serif;max-width:1000px;margin:auto">
<h1>bench:scale</h1>${chart}<table border="1" cellpadding="3" style="border-collapse:collapse;font-size:12px">${table.map((r) => `<tr>${r.map((c) => `<td>${c}</td>`).join('')}</tr>`).join('')}</table>
${rows.map(({ bookings, r }) => `<hr><h2>${fmt(bookings)} bookings</h2>${htmlPeak(r, `${fmt(bookings)} bookings`).replace(/^[\s\S]*<body>|<\/body>[\s\S]*$/g, '')}`).join('\n')}</body></html>`;
  console.log(`\nreport: ${writeReport('scale', html, rows)}`);
}

await main();
