/** bench:peak's console tables, target verdicts and the self-contained HTML report. */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT, fmt, printTable } from '../lib.js';
import { lineChart, type Series } from './svg.js';
import { summarizeStalls, type PeakResult, type PhaseResult } from './run.js';

// Issue 21: ≤ 0.8 ms of CPU per hold over all processes (the seed design ran at 0.6–1.1 ms without Kafka or jobs),
// and holds sustained at 0.3 × the raw pgbench floor (≈ 2,400/s on the machine the issue measured).
export const TARGETS = {
  holdRate: 600, mixedHoldRate: 300, searchRate: 3000, searchAloneRate: 6000, hotRate: 600, staysRate: 3000, sustainedHoldRate: 2400,
  floorShare: 0.3, p99Ms: 50, cpuPerHoldMs: 0.8,
};

/** The rate a stream of a phase is judged at (below it the phase is a smaller run: not judged). */
function targetRate(p: PhaseResult, stream: string): number {
  if (stream === 'hot hold') return TARGETS.hotRate;
  if (stream === 'hold' && p.spec.name === 'sustained') return TARGETS.sustainedHoldRate;
  if (stream === 'hold') return p.spec.rates.search > 0 ? TARGETS.mixedHoldRate : TARGETS.holdRate;
  if (stream === 'search') return p.spec.rates.hold > 0 ? TARGETS.searchRate : TARGETS.searchAloneRate;
  return TARGETS.staysRate;
}
/** Groups that are not the system under test. */
const NOT_SYSTEM = new Set(['load generator', 'bench checks (postgres)', 'pgbench']);

export function systemCpu(p: PhaseResult): { cores: number; byGroup: [string, number][] } {
  const secs = p.cpu.seconds || 1;
  const byGroup = Object.entries(p.cpu.used).sort((a, b) => b[1] - a[1]);
  const cores = byGroup.filter(([g]) => !NOT_SYSTEM.has(g)).reduce((s, [, v]) => s + v, 0) / secs;
  return { cores, byGroup };
}

export interface Verdict { label: string; pass: boolean | null; text: string }

export function verdicts(r: PeakResult): Verdict[] {
  const out: Verdict[] = [];
  const v = (label: string, value: number, op: '<=' | '>=', target: number, unit: string, applicable = true, notJudged = 'offered rate below the target') => {
    const pass = !applicable ? null : Number.isFinite(value) && (op === '<=' ? value <= target : value >= target);
    out.push({ label, pass, text: `${fmt(value, 2)}${unit} ${op === '<=' ? '≤' : '≥'} ${fmt(target, 2)}${unit}${applicable ? '' : ` (${notJudged}: not judged)`}` });
  };
  for (const p of r.phases) {
    for (const s of p.streams) {
      const target = targetRate(p, s.name);
      const full = s.rate >= target;
      v(`${p.spec.name}: ${s.name} answered/s`, s.answeredPerS, '>=', Math.min(s.rate, target) * 0.98, '/s', full);
      v(`${p.spec.name}: ${s.name} p99`, s.p99, '<=', TARGETS.p99Ms, ' ms', full);
    }
    // Judged on the API, the process whose event loop requests wait for. The background processes run at
    // BACKGROUND_NICE and wait for a core behind it by design; their delays are printed, not judged.
    const worst = Math.max(0, ...(p.stalls ?? []).filter((x) => x.proc === 'api').map((x) => x.maxMs));
    v(`${p.spec.name}: longest API event-loop stall over 50 ms`, worst, '<=', TARGETS.p99Ms, ' ms');
    const hold = p.streams.find((s) => s.name === 'hold');
    if (hold && p.spec.rates.search === 0 && p.spec.rates.stays === 0) {
      const perHold = (systemCpu(p).cores * 1000) / hold.answeredPerS;
      // The issue sets the CPU target for holds at 0.3 × the floor: judged in the sustained phase. At lower rates it is
      // printed only: the processes' fixed costs (polls, timers) and smaller batches weigh more per hold there.
      const sustained = p.spec.name === 'sustained';
      v(`${p.spec.name}: system CPU per hold`, perHold, '<=', TARGETS.cpuPerHoldMs, ' ms', sustained && hold.rate >= TARGETS.sustainedHoldRate,
        sustained ? 'offered rate below the target' : 'the target is set at the sustained rate');
      if (sustained && r.floor) {
        v(`${p.spec.name}: hold rate answered ÷ this run's pgbench floor`, hold.answeredPerS / r.floor.tps, '>=', TARGETS.floorShare, '',
          hold.rate >= TARGETS.sustainedHoldRate);
      }
    }
  }
  v('overlapping active car bookings', r.checks.overlaps, '<=', 0, '');
  v('oversold nights', r.checks.oversold, '<=', 0, '');
  v('searches listing a car taken > TTL ago', r.checks.staleness.listedViolations, '<=', 0, '');
  v('searches omitting a car free > TTL', r.checks.staleness.omittedViolations, '<=', 0, '');
  v('staleness checker self-test (flags both kinds)', Number(r.checks.selfTest.detectsTaken && r.checks.selfTest.detectsOmitted), '>=', 1, '');
  return out;
}

export function printPeak(r: PeakResult): void {
  for (const p of r.phases) {
    printTable(`phase ${p.spec.name} (${p.spec.steadyS} s measured after ${p.spec.warmupS} s warm-up)`, [
      ['stream', 'offered/s', 'answered/s', '2xx/s', 'p50 ms', 'p95 ms', 'p99 ms', 'max ms', 'outcomes'],
      ...p.streams.map((s) => [s.name, fmt(s.rate), fmt(s.answeredPerS, 0), fmt(s.okPerS, 0), fmt(s.p50, 1), fmt(s.p95, 1), fmt(s.p99, 1), fmt(s.max, 0),
        s.outcomes.map(([k, n]) => `${k}×${n}`).join(' ')]),
    ]);
    const hold = p.streams.find((s) => s.name === 'hold' || s.name === 'hot hold');
    const secs = p.cpu.seconds || 1;
    const sys = systemCpu(p);
    printTable(`CPU by process, phase ${p.spec.name} (our sampler: this database's backends only)`, [
      ['process', 'cores', 'ms/request', 'ms/hold request'],
      ...sys.byGroup.map(([g, used]) => [g, fmt(used / secs, 2), fmt((1000 * used) / Math.max(1, p.requests), 3), hold ? fmt((1000 * used) / Math.max(1, hold.answered), 3) : '-']),
      ['= system (without generator and checks)', fmt(sys.cores, 2), fmt((1000 * sys.cores * secs) / Math.max(1, p.requests), 3), hold ? fmt((1000 * sys.cores * secs) / Math.max(1, hold.answered), 3) : '-'],
    ]);
    console.log(`  generator: ${fmt(p.generatorCores, 2)} cores over the phase`);
    console.log(`  event loop held > 50 ms (seconds, by process): ${summarizeStalls(p.stalls ?? [])}`);
    console.log(`  database per request: ${Object.entries(p.dbCounters).map(([k, v]) => `${k} ${fmt(v / Math.max(1, p.requests), 2)}`).join(', ')}`);
    if (p.tool) {
      const per = (cores: number) => fmt((1000 * cores * p.tool!.seconds) / Math.max(1, p.requests * (p.tool!.seconds / p.spec.steadyS)), 3);
      console.log(`  cpu-by-process ${p.spec.steadyS} (whole machine), ms per request: ${Object.entries(p.tool.cores).map(([g, c]) => `${g} ${per(c)}`).join(', ')}; in all ${fmt(p.tool.totalCores, 2)} cores = ${per(p.tool.totalCores)} ms/request`);
    } else console.log('  cpu-by-process: tool not found (set CPU_BY_PROCESS)');
  }
  const s = r.checks.staleness;
  console.log(`\n== checks\noverlapping active car bookings: ${r.checks.overlaps}; oversold nights: ${r.checks.oversold}`);
  console.log(`staleness: ${s.samples} sampled searches (${s.skippedBusy} skipped while a check ran); listed cars checked ${s.listedChecked}: taken within TTL ${s.takenWithinTtl} (oldest ${fmt(s.maxTakenAgeS, 1)} s), taken before TTL ${s.listedViolations}; free cars checked ${s.omittedChecked}: freed within TTL ${s.freedWithinTtl}, omitted ${s.omittedViolations}`);
  for (const e of s.examples) console.log(`  ${e}`);
  console.log(`staleness checker self-test: flags a listed taken car: ${r.checks.selfTest.detectsTaken ? 'yes' : 'NO'}; flags an omitted free car: ${r.checks.selfTest.detectsOmitted ? 'yes' : 'NO'}`);
  if (r.floor) {
    const f = r.floor;
    const cores = Object.entries(f.cpu).filter(([g]) => g !== 'load generator').reduce((a, [, c]) => a + c, 0) / (f.cpuSeconds || 1);
    const hp = r.phases.find((p) => p.streams.some((x) => x.name === 'hold') && p.spec.rates.search === 0);
    const hold = hp?.streams.find((x) => x.name === 'hold');
    const sysPerHold = hp && hold ? (systemCpu(hp).cores * 1000) / hold.answeredPerS : NaN;
    console.log(`\n== raw floor (pgbench, hold INSERT only, ${f.clients} clients, ${f.seconds} s): ${fmt(f.tps, 0)} inserts/s, ${fmt(f.latencyMs, 2)} ms avg; CPU ${fmt(cores, 2)} cores = ${fmt((cores * 1000) / f.tps, 3)} ms/insert (postgres + pgbench)`);
    for (const p of r.phases) {
      for (const x of p.streams.filter((q) => q.name.endsWith('hold'))) {
        console.log(`   ${p.spec.name}: ${x.name} ${fmt(x.answeredPerS, 0)}/s answered = ${fmt(x.answeredPerS / f.tps, 3)} × the floor (${fmt(x.okPerS / f.tps, 3)} × in 2xx)`);
      }
    }
    if (Number.isFinite(sysPerHold)) console.log(`   system CPU per hold / raw CPU per insert = ${fmt(sysPerHold, 3)} / ${fmt((cores * 1000) / f.tps, 3)} = ${fmt(sysPerHold / ((cores * 1000) / f.tps), 1)}×; hold rate / raw rate = ${fmt(hold!.answeredPerS / f.tps, 3)}`);
  }
  for (const p of r.plans) console.log(`\n== plan: ${p.name} — cold ${fmt(p.coldMs, 1)} ms, warm ${fmt(p.warmMs, 1)} ms\n${p.plan}`);
  console.log('\n== targets');
  for (const x of verdicts(r)) console.log(`${x.pass === null ? 'n/a ' : x.pass ? 'PASS' : 'MISS'}  ${x.label}: ${x.text}`);
}

const esc = (s: string) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
const table = (rows: (string | number)[][]) => `<table>${rows.map((r, i) => `<tr>${r.map((c) => (i === 0 ? `<th>${esc(String(c))}</th>` : `<td>${esc(String(c))}</td>`)).join('')}</tr>`).join('')}</table>`;

export function htmlPeak(r: PeakResult, title = 'bench:peak'): string {
  const t0 = r.phases[0]?.startEpoch ?? Date.now();
  const rel = (at: number) => (at - t0) / 1000;
  const marks = r.phases.flatMap((p) => [{ x: rel(p.startEpoch), text: p.spec.name }, { x: rel(p.steadyFromEpoch), text: '' }]);
  const body: string[] = [`<h1>${esc(title)}</h1><p>${esc(r.startedAt)} · git ${esc(r.gitRev)} · ${esc(r.machine)} · database ${esc(r.database)}</p>`];
  body.push(`<h2>Targets</h2>${table([['check', 'result', 'value'], ...verdicts(r).map((v) => [v.label, v.pass === null ? 'n/a' : v.pass ? 'PASS' : 'MISS', v.text])])}`);
  for (const p of r.phases) {
    body.push(`<h2>Phase ${esc(p.spec.name)}</h2>`);
    body.push(table([['stream', 'offered/s', 'answered/s', '2xx/s', 'p50 ms', 'p95 ms', 'p99 ms', 'max ms', 'outcomes'],
      ...p.streams.map((s) => [s.name, s.rate, fmt(s.answeredPerS, 0), fmt(s.okPerS, 0), fmt(s.p50, 1), fmt(s.p95, 1), fmt(s.p99, 1), fmt(s.max, 0), s.outcomes.map(([k, n]) => `${k}×${n}`).join(' ')])]));
    const lat: Series[] = Object.entries(p.series).flatMap(([name, pts], i) => [
      { name: `${name} p99`, points: pts.map((q) => [q.t, q.p99] as [number, number]), color: ['#d62728', '#1f77b4', '#2ca02c'][i] },
      { name: `${name} p50`, points: pts.map((q) => [q.t, q.p50] as [number, number]), color: ['#d62728', '#1f77b4', '#2ca02c'][i], dashed: true },
    ]);
    body.push(lineChart(`latency from the scheduled send, per second (${p.spec.name})`, lat, { xLabel: 's since phase start (warm-up first)', yLabel: 'ms (log)', logY: true, marks: [{ x: p.spec.warmupS, text: 'measured →' }] }));
    body.push(lineChart(`answers per second (${p.spec.name})`, Object.entries(p.series).map(([name, pts]) => ({ name, points: pts.map((q) => [q.t, q.n] as [number, number]) })), { xLabel: 's', yLabel: 'answers/s' }));
    const secs = p.cpu.seconds || 1;
    const hold = p.streams.find((s) => s.name === 'hold');
    body.push(table([['process', 'cores', 'ms/request', 'ms/hold request'], ...systemCpu(p).byGroup.map(([g, used]) => [g, fmt(used / secs, 2), fmt((1000 * used) / Math.max(1, p.requests), 3), hold ? fmt((1000 * used) / Math.max(1, hold.answered), 3) : '-'])]));
    body.push(`<p>event loop held &gt; 50 ms (seconds, by process): ${esc(summarizeStalls(p.stalls ?? []))}</p>`);
    body.push(`<p>database per request (pg_stat_database over the window): ${esc(Object.entries(p.dbCounters).map(([k, v]) => `${k} ${fmt(v / Math.max(1, p.requests), 2)}`).join(', '))}; generator ${fmt(p.generatorCores, 2)} cores</p>`);
    if (p.tool) body.push(`<details><summary>cpu-by-process ${p.spec.steadyS} (whole machine)</summary><pre>${esc(p.tool.raw)}</pre></details>`);
  }
  // Groups by total CPU, largest first; the small ones (< 1 % of all) drawn as one "other".
  const totals = new Map<string, number>();
  for (const s of r.cpuSeries) for (const [g, v] of Object.entries(s.used)) totals.set(g, (totals.get(g) ?? 0) + v);
  const grand = [...totals.values()].reduce((a, b) => a + b, 0);
  const big = [...totals].sort((a, b) => b[1] - a[1]).filter(([, v]) => v >= grand * 0.01).map(([g]) => g);
  const value = (s: PeakResult['cpuSeries'][number], g: string) =>
    (g === 'other' ? Object.entries(s.used).filter(([k]) => !big.includes(k)).reduce((a, [, v]) => a + v, 0) : (s.used[g] ?? 0)) / (s.seconds || 1);
  const groups = [...big, 'other'];
  body.push('<h2>CPU over the run</h2>');
  body.push(lineChart('cores by process (stacked)', groups.map((g) => ({ name: g, points: r.cpuSeries.map((s) => [rel(s.at), value(s, g)] as [number, number]) })), { xLabel: 's since the first phase', yLabel: 'cores', stacked: true, marks }));
  body.push(lineChart('outbox backlog', [
    { name: 'unpublished (Kafka)', points: r.outboxSeries.map((o) => [rel(o.at), o.unpublished] as [number, number]) },
  ], { xLabel: 's since the first phase', yLabel: 'rows', marks }));
  const s = r.checks.staleness;
  body.push(`<h2>Checks</h2>${table([['check', 'value'], ['overlapping active car bookings', r.checks.overlaps], ['oversold nights', r.checks.oversold],
    ['sampled searches (skipped while busy)', `${s.samples} (${s.skippedBusy})`], ['listed cars checked / taken within TTL / taken before TTL', `${s.listedChecked} / ${s.takenWithinTtl} / ${s.listedViolations}`],
    ['free cars checked / freed within TTL / omitted', `${s.omittedChecked} / ${s.freedWithinTtl} / ${s.omittedViolations}`]])}${s.examples.map((e) => `<p><code>${esc(e)}</code></p>`).join('')}`);
  if (r.floor) body.push(`<h2>Raw floor (pgbench)</h2><pre>${esc(r.floor.raw)}</pre>${table([['process', 'cores'], ...Object.entries(r.floor.cpu).map(([g, c]) => [g, fmt(c / (r.floor!.cpuSeconds || 1), 2)])])}`);
  if (r.dashboard) {
    body.push(`<h2>Grafana panel queries on live data (Prometheus scraping the system every 1 s)</h2>${table([['panel', 'series', 'sample'],
      ...r.dashboard.map((v) => [v.panel, v.error ? `error: ${v.error}` : v.series, v.sample.join('; ')])])}<pre>${esc(r.dashboard.map((v) => v.expr).join('\n'))}</pre>`);
  }
  body.push('<h2>Plans</h2>', ...r.plans.map((p) => `<h3>${esc(p.name)}</h3><p>cold ${fmt(p.coldMs, 1)} ms, warm ${fmt(p.warmMs, 1)} ms</p><pre>${esc(p.plan)}</pre>`));
  body.push(`<h2>Configuration</h2><pre>${esc(JSON.stringify(r.config, null, 2))}</pre>`);
  return `<!doctype html><html><head><meta charset="utf-8"><title>${esc(title)}</title><style>
body{font-family:sans-serif;max-width:1000px;margin:1em auto;padding:0 1em}table{border-collapse:collapse;margin:.5em 0}
td,th{border:1px solid #ccc;padding:2px 6px;font-size:12px;text-align:right}td:first-child,th:first-child{text-align:left}
pre{background:#f6f6f6;padding:6px;font-size:11px;overflow-x:auto}svg{display:block;margin:.5em 0}</style></head><body>${body.join('\n')}</body></html>`;
}

/** Writes bench/reports/<name>-<time>.html and .json; returns the HTML path. */
export function writeReport(name: string, html: string, data: unknown): string {
  const dir = path.join(ROOT, 'bench', 'reports');
  mkdirSync(dir, { recursive: true });
  const stamp = new Date().toISOString().replace(/[:.]/g, '-').slice(0, 19);
  const file = path.join(dir, `${name}-${stamp}.html`);
  writeFileSync(file, html);
  writeFileSync(file.replace(/\.html$/, '.json'), JSON.stringify(data));
  return file;
}
