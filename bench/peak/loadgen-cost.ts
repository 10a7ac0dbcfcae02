/**
 * What the load generator itself costs: openLoop at a fixed open-loop rate against a trivial node:http server (in a
 * child process, so its CPU is not counted as the generator's) answering ~6 KB of JSON, as the searches do. Reports
 * the generator's CPU per request (process.cpuUsage over the run, as openLoop reports it), the cores that is at the
 * rate, the server's CPU per request, and the latency distribution the generator recorded (on an idle server it is
 * the client's own overhead and the loopback).
 *
 *   npx tsx bench/peak/loadgen-cost.ts [--rate 3000] [--seconds 10] [--warmup 2] [--connections 64] [--bytes 6000]
 *     [--sample-every 0] [--runs 1] [--impl ./loadgen.js]
 *
 * --impl loads openLoop from another module with the same interface (a path relative to this file), to compare two
 * generators on the same machine; runs alternate when several are given (comma-separated). E.g. against the
 * undici-based generator this one replaced:
 *   git show cd5738e:bench/peak/loadgen.ts > bench/peak/loadgen-undici.tmp.ts
 *   npx tsx bench/peak/loadgen-cost.ts --impl ./loadgen-undici.tmp.js,./loadgen.js --runs 3; rm bench/peak/loadgen-undici.tmp.ts
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { rngFor } from '../dataset/generate.js';
import { procCpuSeconds } from '../lib.js';
import type { LoadOptions, LoadResult, StreamSpec } from './loadgen.js';

type OpenLoop = (origin: string, specs: StreamSpec[], durationS: number, o: LoadOptions) => Promise<LoadResult>;

const { values } = parseArgs({
  options: {
    rate: { type: 'string' }, seconds: { type: 'string' }, warmup: { type: 'string' }, connections: { type: 'string' },
    bytes: { type: 'string' }, 'sample-every': { type: 'string' }, runs: { type: 'string' }, impl: { type: 'string' },
  },
});
const num = (k: keyof typeof values, d: number) => (values[k] === undefined ? d : Number(values[k]));
const rate = num('rate', 3000);
const seconds = num('seconds', 10);
const warmup = num('warmup', 2);
const connections = num('connections', 64);
const bytes = num('bytes', 6000);
const sampleEvery = num('sample-every', 0);
const runs = num('runs', 1);
const impls = String(values.impl ?? './loadgen.js').split(',');

const SERVER = `
const http = require('node:http');
const rows = [];
for (let i = 0; JSON.stringify({ cars: rows }).length < ${bytes}; i++) rows.push({ id: i, model: 'Toyota Vios', city: 'Ho Chi Minh City', from: '2026-06-01T10:00:00Z', price: 1000 + i });
const body = Buffer.from(JSON.stringify({ cars: rows }));
const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => { res.setHeader('content-type', 'application/json'); res.end(body); });
});
server.keepAliveTimeout = 65000;
server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + ' ' + body.length + '\\n'));
`;

/** utime + stime of a process, in ms (from /proc; 100 ticks a second). */
const procCpuMs = (pid: number) => {
  const used = procCpuSeconds(pid);
  return used ? (used.user + used.sys) * 1000 : NaN;
};
const pct = (sorted: Float64Array, p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;

async function main() {
  const child = spawn(process.execPath, ['-e', SERVER], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [port, size] = await new Promise<number[]>((resolve, reject) => {
    child.stdout!.once('data', (d: Buffer) => resolve(d.toString().trim().split(' ').map(Number)));
    child.once('exit', (c) => reject(new Error(`server exited ${c}`)));
  });
  const origin = `http://127.0.0.1:${port}`;
  console.log(`server pid ${child.pid}, ${origin}, answers ${size} bytes; ${rate}/s open loop, ${connections} connections, ${warmup} s warm-up + ${seconds} s, ${runs} run(s) per generator`);
  const loads = await Promise.all(impls.map(async (m) => ({ name: m, openLoop: (await import(m) as { openLoop: OpenLoop }).openLoop })));
  try {
    let n = 0;
    const spec = (): StreamSpec => ({
      name: 'search', rate,
      next: () => ({ method: 'GET', path: `/cars?city=Ho%20Chi%20Minh%20City&from=2026-06-${String(1 + (n % 28)).padStart(2, '0')}T10:00:00Z&to=2026-06-30T10:00:00Z&limit=50&n=${n++}` }),
      ...(sampleEvery > 0 ? { sampleEvery, onSample: () => {} } : {}),
    });
    const opts = (seed: number): LoadOptions => ({ connections, timeoutMs: 10_000, arrivals: 'uniform', rng: rngFor(7, seed), maxInFlight: 50_000 });
    for (let run = 0; run < runs; run++) {
      for (const { name, openLoop } of loads) {
        if (warmup > 0) await openLoop(origin, [spec()], warmup, opts(1));
        const s0 = procCpuMs(child.pid!);
        const c0 = process.cpuUsage();
        const r = await openLoop(origin, [spec()], seconds, opts(2));
        const c = process.cpuUsage(c0); // the whole call (drawing requests included): for the user / system split
        const serverMs = procCpuMs(child.pid!) - s0;
        const st = r.streams[0]!;
        const answered = st.due.length;
        const cpuMs = r.generatorCores * r.durationMs;
        const lat = Float64Array.from(st.latency).sort();
        const outcomes = new Map<string, number>();
        for (const o of st.outcome) outcomes.set(st.labels[o]!, (outcomes.get(st.labels[o]!) ?? 0) + 1);
        console.log(`${name} run ${run + 1}: ${answered} answered (${(answered / (r.durationMs / 1000)).toFixed(0)}/s), dropped ${st.dropped}, unanswered ${st.unanswered}; `
          + `generator ${(cpuMs / st.sent * 1000).toFixed(1)} µs CPU/request = ${r.generatorCores.toFixed(3)} cores (whole call: user ${(c.user / st.sent).toFixed(1)} + system ${(c.system / st.sent).toFixed(1)} µs); server ${(serverMs / st.sent * 1000).toFixed(0)} µs/request; `
          + `latency ms p50 ${pct(lat, 50).toFixed(2)} p90 ${pct(lat, 90).toFixed(2)} p99 ${pct(lat, 99).toFixed(2)} p99.9 ${pct(lat, 99.9).toFixed(2)} max ${lat[lat.length - 1]?.toFixed(2)} mean ${(lat.reduce((a, b) => a + b, 0) / lat.length).toFixed(2)}; `
          + `${[...outcomes].map(([k, v]) => `${k}×${v}`).join(' ')}; load average ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
      }
    }
  } finally {
    child.kill();
  }
}

await main();
