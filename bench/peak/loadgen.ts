/**
 * Open-loop load generator: request i of a stream is due at t0 + i / rate (or at Poisson arrivals), sent then
 * whatever happened before, and its latency is counted from that due time, so a slow server cannot slow the
 * generator down and hide its own queueing (no coordinated omission). One process; its own CPU is measured and
 * reported, since it shares the machine with the system under test. It sends through http-client.ts, a minimal
 * keep-alive HTTP/1.1 client over node:net (a fixed pool of `connections` sockets, one request in flight on each,
 * requests encoded to bytes before t0), not undici's Pool: the leaner client costs the generator about half the CPU
 * per request (loadgen-cost.ts measures it), so it takes fewer of the cores it shares with the system it measures.
 */
import { HttpPool, type EncodedRequests } from './http-client.js';
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
  const pool = new HttpPool(origin, { connections: o.connections, timeoutMs: o.timeoutMs, keepAliveMs: 60_000 });
  const recs: StreamRecording[] = specs.map((s) => ({ name: s.name, rate: s.rate, sent: 0, due: [], latency: [], status: [], outcome: [], labels: [], dropped: 0, unanswered: 0 }));
  const label = (r: StreamRecording, k: string) => {
    let i = r.labels.indexOf(k);
    if (i < 0) i = r.labels.push(k) - 1;
    r.outcome.push(i);
  };
  // Requests are drawn (tokens signed, bodies serialised) and encoded to bytes before t0, so the measured window
  // only pays for a socket write. Request objects are kept only where onSample will be handed one.
  const encoded: EncodedRequests[] = [];
  const sampled: Map<number, Req>[] = [];
  for (const s of specs) {
    const reqs = Array.from({ length: Math.ceil(s.rate * durationS * 1.02) + 10 }, () => s.next());
    encoded.push(pool.encodeAll(reqs));
    const keep = new Map<number, Req>();
    if (s.onSample && s.sampleEvery) for (let k = s.sampleEvery - 1; k < reqs.length; k += s.sampleEvery) keep.set(k, reqs[k]!);
    sampled.push(keep);
  }
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
    const k = rec.sent - 1;
    const sample = spec.onSample && spec.sampleEvery ? rec.sent % spec.sampleEvery === 0 : false;
    let req: Req | undefined;
    let bytes: Buffer;
    if (k < encoded[i]!.length) {
      bytes = encoded[i]!.at(k);
      if (sample) req = sampled[i]!.get(k);
    } else {
      req = spec.next(); // beyond what was drawn before t0
      bytes = pool.encode(req);
    }
    const sentAt = performance.now();
    inFlight++;
    // The body is decoded only when needed: for a sample, or for an error's code (status >= 300).
    pool.request(bytes, sample ? 0 : 300, (err, status, text) => {
      const now = performance.now();
      inFlight--;
      if (!sending && inFlight === 0) settle();
      rec.due.push(due);
      rec.latency.push(now - t0 - due);
      if (err) {
        rec.status.push(0);
        label(rec, /TIMEOUT/i.test(err.code ?? '') ? 'timeout' : `conn-error ${err.code ?? ''}`.trimEnd());
      } else {
        rec.status.push(status);
        let key = String(status);
        if (status >= 300) {
          try {
            key += ` ${(JSON.parse(text) as { error?: { code?: string } }).error?.code ?? ''}`.trimEnd();
          } catch { /* not the error shape */ }
        }
        label(rec, key);
        if (sample) spec.onSample!(req!, status, text, sentAt, now);
      }
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
  pool.close(); // requests still unanswered after the grace period are abandoned (counted above)
  return { streams: recs, t0Epoch, durationMs, generatorCores: (cpu.user + cpu.system) / 1000 / durationMs };
}
