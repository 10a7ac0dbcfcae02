/** Summaries of a phase's recordings: per stream over the steady window, and per second for the charts. */
import { percentile } from '../lib.js';
import type { StreamRecording } from './loadgen.js';

export interface StreamStats {
  name: string;
  rate: number;
  /** Requests due in the steady window, and those answered (any HTTP status). */
  due: number;
  answered: number;
  answeredPerS: number;
  okPerS: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
  outcomes: [string, number][];
  unanswered: number;
}

export interface SeriesPoint {
  /** Seconds since the phase started (by due time). */
  t: number;
  n: number;
  errors: number;
  p50: number;
  p99: number;
}

const ok = (status: number) => status >= 200 && status < 300;

/** Stats over requests due in [fromMs, toMs) (ms since the run's t0). */
export function streamStats(r: StreamRecording, fromMs: number, toMs: number): StreamStats {
  const lat: number[] = [];
  const outcomes = new Map<string, number>();
  let okCount = 0;
  for (let i = 0; i < r.due.length; i++) {
    const d = r.due[i]!;
    if (d < fromMs || d >= toMs) continue;
    lat.push(r.latency[i]!);
    if (ok(r.status[i]!)) okCount++;
  }
  for (let i = 0; i < r.due.length; i++) {
    const d = r.due[i]!;
    if (d < fromMs || d >= toMs) continue;
    const k = r.labels[r.outcome[i]!]!;
    outcomes.set(k, (outcomes.get(k) ?? 0) + 1);
  }
  if (r.dropped) outcomes.set('dropped by the generator', r.dropped);
  const a = Float64Array.from(lat).sort();
  const secs = (toMs - fromMs) / 1000;
  const due = Math.round(r.rate * secs);
  return {
    name: r.name, rate: r.rate, due, answered: a.length, answeredPerS: a.length / secs, okPerS: okCount / secs,
    p50: percentile(a, 50), p95: percentile(a, 95), p99: percentile(a, 99), max: a.length ? a[a.length - 1]! : NaN,
    outcomes: [...outcomes].sort((x, y) => y[1] - x[1]),
    unanswered: r.unanswered,
  };
}

export function perSecond(r: StreamRecording): SeriesPoint[] {
  const buckets = new Map<number, { lat: number[]; errors: number }>();
  for (let i = 0; i < r.due.length; i++) {
    const s = Math.floor(r.due[i]! / 1000);
    const b = buckets.get(s) ?? { lat: [], errors: 0 };
    b.lat.push(r.latency[i]!);
    if (r.status[i] === 0 || r.status[i]! >= 500) b.errors++;
    buckets.set(s, b);
  }
  return [...buckets].sort((x, y) => x[0] - y[0]).map(([t, b]) => {
    const a = Float64Array.from(b.lat).sort();
    return { t, n: a.length, errors: b.errors, p50: percentile(a, 50), p99: percentile(a, 99) };
  });
}
