/**
 * Open-loop HTTP load: request i is due at t0 + i / rate whatever happened before, and its latency is measured
 * from that due time, so a slow server cannot hide its queue (no coordinated omission).
 */
import http from 'node:http';
import { sleep, summarize, type Summary } from './lib.js';

export interface OpenLoopRequest {
  method: string;
  path: string;
  token: string;
  body: string;
}

export interface OpenLoopResult {
  sent: number;
  seconds: number;
  /** "200", "409 SOLD_OUT", "conn-error", ... */
  outcomes: Map<string, number>;
  latency: Summary;
}

export async function openLoop(baseUrl: string, rate: number, durationS: number, next: () => OpenLoopRequest): Promise<OpenLoopResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 512 });
  const { hostname, port } = new URL(baseUrl);
  const latencies: number[] = [];
  const outcomes = new Map<string, number>();
  const count = (k: string) => outcomes.set(k, (outcomes.get(k) ?? 0) + 1);
  const inflight = new Set<Promise<void>>();
  const fire = (due: number) => {
    const r = next();
    const p = new Promise<void>((resolve) => {
      const req = http.request({
        agent, hostname, port, method: r.method, path: r.path, timeout: 10_000,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(r.body), authorization: `Bearer ${r.token}` },
      }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          latencies.push(performance.now() - due);
          let code = '';
          if (res.statusCode! >= 300) {
            try {
              code = ` ${(JSON.parse(Buffer.concat(chunks).toString()) as { error?: { code?: string } }).error?.code ?? ''}`;
            } catch { /* not JSON */ }
          }
          count(`${res.statusCode}${code}`);
          resolve();
        });
      });
      req.on('error', () => {
        count('conn-error');
        resolve();
      });
      req.end(r.body);
    });
    inflight.add(p);
    void p.then(() => inflight.delete(p));
  };
  const interval = 1000 / rate;
  const t0 = performance.now();
  const end = t0 + durationS * 1000;
  let sent = 0;
  while (performance.now() < end) {
    const now = performance.now();
    while (t0 + sent * interval <= now && t0 + sent * interval < end) fire(t0 + sent++ * interval);
    await new Promise((r) => setImmediate(r));
    if (performance.now() - now < 0.5) await sleep(1);
  }
  await Promise.all(inflight);
  agent.destroy();
  return { sent, seconds: (performance.now() - t0) / 1000, outcomes, latency: summarize(latencies) };
}
