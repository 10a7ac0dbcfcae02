/**
 * The scale run (issue 19): open-loop holds + searches with a mix of payments (half the granted holds), cancellations
 * (a fifth) and expiries (the rest, HOLD_TTL_S) on the whole topology (scripts/topology: PostgreSQL primary + replica,
 * Redis Cluster 3+3, 3 Kafka brokers, N APIs behind HAProxy), with the four faults at scheduled times — a Redis
 * master killed (its replica takes over), a broker killed and restarted, an API killed then a rolling restart of
 * all, the replica stopped and started. Printed: p50/p99 per minute and per fault's window, check:invariants, Kafka
 * order per booking and events lost. Then the same load on the single-node topology (one PostgreSQL, one Redis, one
 * broker, one API, no faults), printed side by side as a ratio.
 *
 *   npm run bench:topology                                         # the issue's: 600 s at 1,200 holds/s + 3,000 searches/s
 *   npm run bench:topology -- --seconds 120 --hold-rate 100 --search-rate 300      # a short proof
 * Options: --seconds, --hold-rate, --search-rate, --cars (2000), --apis (3), --hold-ttl (60), --single no (skip the
 * single-node run), --faults no. TOPOLOGY_DIR (default /tmp/booking-bench-topology),
 * TOPOLOGY_KAFKA_PORT (29092; the single node's broker +250), PG_PRIMARY_PORT (55432: the replica +1, the single node's +10).
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { freePort } from '../scripts/free-port.js';
import { startTopology } from '../scripts/topology/topology.js';
import { runScenario, type FaultPlan, type ScenarioResult } from '../scripts/topology/scenario.js';
import { KINDS, statsOf, statusCounts, type Kind, type Samples } from '../scripts/topology/load.js';
import { fmt, printTable } from './lib.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '600' }, 'hold-rate': { type: 'string', default: '1200' }, 'search-rate': { type: 'string', default: '3000' },
    cars: { type: 'string', default: '2000' }, apis: { type: 'string', default: '3' }, 'hold-ttl': { type: 'string', default: '60' },
    single: { type: 'string', default: 'yes' }, faults: { type: 'string', default: 'yes' },
  },
});
const seconds = Number(values.seconds);
const holdRate = Number(values['hold-rate']);
const searchRate = Number(values['search-rate']);
const cars = Number(values.cars);
const holdTtl = Number(values['hold-ttl']);
const DIR = process.env.TOPOLOGY_DIR ?? '/tmp/booking-bench-topology';
const KAFKA_PORT = Number(process.env.TOPOLOGY_KAFKA_PORT ?? 29092);
const PG_PORT = Number(process.env.PG_PRIMARY_PORT ?? 55432);
const log = (m: string) => console.error(`[bench:topology ${new Date().toISOString().slice(11, 19)}] ${m}`);
const env = { HOLD_TTL_S: String(holdTtl), PAYMENT_GRACE_S: '30', HOLD_RATE_LIMIT: '100000000' };

/** The four faults at 15 %, 35 %, 55 % and 75 % of the run, each down for ~8 % of it (at least 10 s). */
function plan(): FaultPlan[] {
  if (values.faults === 'no') return [];
  const down = Math.max(10, Math.round(seconds * 0.08));
  return [
    { kind: 'redis-master', at: Math.round(seconds * 0.15) },
    { kind: 'kafka-broker', at: Math.round(seconds * 0.35), down },
    { kind: 'api', at: Math.round(seconds * 0.55), down: 3, rolling: true },
    { kind: 'replica', at: Math.round(seconds * 0.75), down },
  ];
}

async function run(single: boolean): Promise<ScenarioResult> {
  const dir = `${DIR}-${single ? 'single' : 'full'}`;
  const t = await startTopology({
    dir, apis: Number(values.apis), port: await freePort(), kafkaPort: KAFKA_PORT + (single ? 200 : 0), log, env, single,
    pgPrimaryPort: PG_PORT + (single ? 10 : 0), pgReplicaPort: PG_PORT + 1 + (single ? 10 : 0),
  });
  const stop = () => t.stop().then(() => process.exit(130));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  try {
    return await runScenario(t, {
      cars, holdRate, searchRate, seconds, faults: single ? [] : plan(), log,
      quietTimeoutS: holdTtl + 30 + 180,
    });
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
    log(`bringing the ${single ? 'single-node' : 'full'} topology down`);
    await t.stop();
  }
}

const ms = (v: number) => (Number.isFinite(v) ? fmt(v, v < 10 ? 1 : 0) : '–');
const cell = (s: Samples, k: Kind, from: number, to: number) => {
  const st = statsOf(s, k, from, to);
  return st.n ? `${ms(st.p50)}/${ms(st.p99)}${st.failed ? ` (${st.failed}✗)` : ''}` : '–';
};

function perMinute(title: string, r: ScenarioResult): void {
  const rows = [['minute', ...KINDS.map((k) => `${k} n`), ...KINDS.map((k) => `${k} p50/p99 ms`), 'faults in it']];
  for (let m = 0; m * 60 < seconds; m++) {
    const [from, to] = [m * 60, (m + 1) * 60];
    const faults = r.windows.filter((w) => w.from < to && w.to >= from).map((w) => w.kind).join(', ');
    rows.push([String(m + 1), ...KINDS.map((k) => fmt(statsOf(r.samples, k, from, to).n)), ...KINDS.map((k) => cell(r.samples, k, from, to)), faults || '']);
  }
  printTable(title, rows);
}

function report(title: string, r: ScenarioResult): void {
  perMinute(`${title}: per minute (latency from the scheduled send; ✗ = 5xx or no answer)`, r);
  if (r.windows.length) {
    printTable(`${title}: each fault's window`, [
      ['fault', 'window s', ...KINDS.map((k) => `${k} p50/p99 ms`), 'what happened'],
      ...r.windows.map((w) => [w.kind, `${w.from.toFixed(0)}–${w.to.toFixed(0)}`, ...KINDS.map((k) => cell(r.samples, k, w.from, w.to)), w.what]),
    ]);
  }
  for (const k of KINDS) console.log(`  ${k}: answers ${JSON.stringify(statusCounts(r.samples, k))}${r.samples.shed[k] ? `, not sent (client at its in-flight limit) ${r.samples.shed[k]}` : ''}`);
  const lag = [...r.samples.sendLagMs].sort((a, b) => a - b);
  console.log(`  load generator: sent ${fmt(lag.length)} requests, late by p50 ${ms(lag[Math.floor(lag.length / 2)] ?? NaN)} ms, p99 ${ms(lag[Math.floor(lag.length * 0.99)] ?? NaN)} ms (its own saturation: counted in the latencies)`);
  const late = [...r.expiryLateness].sort((a, b) => a - b);
  console.log(`  expiries: ${late.length}, seconds past holdExpiresAt p50 ${fmt(late[Math.floor(late.length / 2)] ?? NaN, 2)}, max ${fmt(late.at(-1) ?? NaN, 2)}`);
  if (r.armedAfterFailover) console.log(`  jobs-armed 15 s after the Redis failover: ${r.armedAfterFailover.checked} checked, ${r.armedAfterFailover.violations.length} violations`);
  console.log(`  quiet: ${r.quiet.quiet ? 'yes' : `NO ${JSON.stringify(r.quiet.state)}`} after ${r.quiet.waitedS.toFixed(0)} s`);
  console.log(`  check:invariants: ${r.violations} violations (${r.invariants.map((i) => `${i.name} ${i.violations.length}`).join(', ')})`);
  console.log(`  Kafka: ${r.kafka.events} events of ${r.kafka.bookings} bookings, ${r.kafka.lost.length} lost, ${r.kafka.outOfOrder.length} out of order per booking`);
  for (const v of [...r.invariants.flatMap((i) => i.violations.map((x) => `${i.name}: ${x}`)), ...r.kafka.lost, ...r.kafka.outOfOrder].slice(0, 10)) console.log(`    - ${v}`);
}

const full = await run(false);
console.log(`\n#### topology: ${values.apis} APIs behind HAProxy, Redis Cluster 3+3, 3 brokers, a replica; ${seconds} s at ${holdRate} holds/s + ${searchRate} searches/s`);
report('topology', full);
let single: ScenarioResult | null = null;
if (values.single !== 'no') {
  single = await run(true);
  console.log(`\n#### single node: one API, one Redis, one broker, one PostgreSQL; the same load, no faults`);
  report('single node', single);
  const rate = (s: Samples, k: Kind) => s.status[k].filter((x) => x > 0 && x < 500).length / seconds;
  const ratio = (a: number, b: number) => (Number.isFinite(a / b) && b > 0 ? `${fmt(a / b, 2)}×` : '–');
  printTable('topology vs single node (topology ÷ single)', [
    ['op', 'answered/s topology', 'answered/s single', 'ratio', 'p50 topology', 'p50 single', 'ratio', 'p99 topology', 'p99 single', 'ratio'],
    ...KINDS.map((k) => {
      const [a, b] = [statsOf(full.samples, k), statsOf(single!.samples, k)];
      return [k, fmt(rate(full.samples, k), 1), fmt(rate(single!.samples, k), 1), ratio(rate(full.samples, k), rate(single!.samples, k)),
        ms(a.p50), ms(b.p50), ratio(a.p50, b.p50), ms(a.p99), ms(b.p99), ratio(a.p99, b.p99)];
    }),
  ]);
}
const ok = full.violations === 0 && full.kafka.lost.length === 0 && full.kafka.outOfOrder.length === 0 && full.quiet.quiet
  && (!single || (single.violations === 0 && single.kafka.lost.length === 0 && single.kafka.outOfOrder.length === 0));
const out = path.resolve(import.meta.dirname, 'reports', `topology-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
fs.mkdirSync(path.dirname(out), { recursive: true });
const summary = (r: ScenarioResult | null) => r && {
  windows: r.windows, violations: r.violations, kafka: { events: r.kafka.events, lost: r.kafka.lost.length, outOfOrder: r.kafka.outOfOrder.length }, quiet: r.quiet,
  perMinute: Array.from({ length: Math.ceil(seconds / 60) }, (_, m) => Object.fromEntries(KINDS.map((k) => [k, statsOf(r.samples, k, m * 60, (m + 1) * 60)]))),
};
fs.writeFileSync(out, JSON.stringify({ seconds, holdRate, searchRate, cars, apis: Number(values.apis), full: summary(full), single: summary(single) }, null, 2));
console.log(`\n${ok ? 'PASS' : 'FAIL'}: 0 violations, 0 events lost, Kafka in order per booking${ok ? '' : ' — NOT all held'}; report ${out}`);
process.exit(ok ? 0 : 1);
