/**
 * Open-loop load generator: request i of a stream is due at t0 + i / rate (or at Poisson arrivals), sent then
 * whatever happened before, and its latency is counted from that due time, so a slow server cannot slow the
 * generator down and hide its own queueing (no coordinated omission). undici keep-alive pool, one process; its
 * own CPU is measured and reported, since it shares the machine with the system under test.
 */
import { Pool } from 'undici';
import { float, type Rng } from '../dataset/generate.js';

export interface Req {
  method: 'GET' | 'POST';
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

export interface StreamSpec {
  name: string;
  rate: number;
  next(): Req;
  /** Every `sampleEvery`-th request's body is handed to onSample (e.g. the staleness check). */
  sampleEvery?: number;
  onSample?(req: Req, status: number, body: string, sentAt: number, answeredAt: number): void;
}

export interface StreamRecording {
  name: string;
  rate: number;
  sent: number;
  /** Per answered request: due time (ms since t0), latency from due (ms), HTTP status (0 = no answer). */
  due: number[];
  latency: number[];
  status: number[];
  /** Per answered request, an index into `labels`: "201", "409 CAR_UNAVAILABLE", "timeout", "conn-error", … */
  outcome: number[];
  labels: string[];
  /** Requests not sent because too many were waiting (the generator's own overload). */
  dropped: number;
  unanswered: number;
}

export interface LoadResult {
  streams: StreamRecording[];
  /** Wall clock (Date.now()) at t0, to line recordings up with other samplers. */
  t0Epoch: number;
  durationMs: number;
  /** The generator's own CPU over the run, in cores. */
  generatorCores: number;
}

export interface LoadOptions {
  connections: number;
  timeoutMs: number;
  arrivals: 'uniform' | 'poisson';
  rng: Rng;
  /** Beyond this many requests waiting or in flight, new ones are counted as "dropped" (generator overload). */
  maxInFlight: number;
}

export async function openLoop(origin: string, specs: StreamSpec[], durationS: number, o: LoadOptions): Promise<LoadResult> {
  const pool = new Pool(origin, { connections: o.connections, pipelining: 1, keepAliveTimeout: 60_000, headersTimeout: o.timeoutMs, bodyTimeout: o.timeoutMs });
  const recs: StreamRecording[] = specs.map((s) => ({ name: s.name, rate: s.rate, sent: 0, due: [], latency: [], status: [], outcome: [], labels: [], dropped: 0, unanswered: 0 }));
  const label = (r: StreamRecording, k: string) => {
    let i = r.labels.indexOf(k);
    if (i < 0) i = r.labels.push(k) - 1;
    r.outcome.push(i);
  };
  // Requests are drawn (tokens signed, bodies serialised) before t0, so the measured window only pays for sending.
  const prepared = specs.map((s) => Array.from({ length: Math.ceil(s.rate * durationS * 1.02) + 10 }, () => s.next()));
  let inFlight = 0;
  let settle!: () => void;
  const drained = new Promise<void>((r) => { settle = r; });
  let sending = true;
  const endMs = durationS * 1000;
  const t0 = performance.now();
  const t0Epoch = Date.now();
  const cpu0 = process.cpuUsage();

  const fire = (i: number, due: number) => {
    const spec = specs[i]!;
    const rec = recs[i]!;
    rec.sent++;
    if (inFlight >= o.maxInFlight) {
      rec.dropped++;
      return;
    }
    const req = prepared[i]![rec.sent - 1] ?? spec.next();
    const sample = spec.onSample && spec.sampleEvery ? rec.sent % spec.sampleEvery === 0 : false;
    const sentAt = performance.now();
    inFlight++;
    pool.request({ method: req.method, path: req.path, headers: req.headers, body: req.body }).then(async (res) => {
      const needBody = sample || res.statusCode >= 300;
      const text = needBody ? await res.body.text() : (await res.body.dump(), '');
      const now = performance.now();
      rec.due.push(due);
      rec.latency.push(now - t0 - due);
      rec.status.push(res.statusCode);
      let key = String(res.statusCode);
      if (res.statusCode >= 300) {
        try {
          key += ` ${(JSON.parse(text) as { error?: { code?: string } }).error?.code ?? ''}`.trimEnd();
        } catch { /* not the error shape */ }
      }
      label(rec, key);
      if (sample) spec.onSample!(req, res.statusCode, text, sentAt, now);
    }, (err: { code?: string }) => {
      rec.due.push(due);
      rec.latency.push(performance.now() - t0 - due);
      rec.status.push(0);
      label(rec, /TIMEOUT/i.test(err.code ?? '') ? 'timeout' : `conn-error ${err.code ?? ''}`.trimEnd());
    }).finally(() => {
      inFlight--;
      if (!sending && inFlight === 0) settle();
    });
  };

  const gap = (rate: number) => (o.arrivals === 'poisson' ? -Math.log(1 - float(o.rng)) : 1) * (1000 / rate);
  const nextDue = specs.map((s) => (s.rate > 0 ? gap(s.rate) * (o.arrivals === 'uniform' ? float(o.rng) : 1) : Infinity));
  await new Promise<void>((done) => {
    const tick = () => {
      const now = performance.now() - t0;
      for (let i = 0; i < specs.length; i++) {
        while (nextDue[i]! <= now && nextDue[i]! < endMs) {
          fire(i, nextDue[i]!);
          nextDue[i]! += gap(specs[i]!.rate);
        }
      }
      if (now >= endMs) done();
      // Sleep until the next request is due (at least 1 ms: timers are not finer), not a fixed 1 ms poll.
      else setTimeout(tick, Math.max(1, Math.min(endMs, ...nextDue) - (performance.now() - t0) - 1));
    };
    tick();
  });
  sending = false;
  if (inFlight > 0) await Promise.race([drained, new Promise((r) => setTimeout(r, o.timeoutMs + 1000))]);
  const cpu = process.cpuUsage(cpu0);
  const durationMs = performance.now() - t0;
  for (const r of recs) r.unanswered = r.sent - r.due.length - r.dropped;
  await pool.close().catch(() => {});
  return { streams: recs, t0Epoch, durationMs, generatorCores: (cpu.user + cpu.system) / 1000 / durationMs };
}
