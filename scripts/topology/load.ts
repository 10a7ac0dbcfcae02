// Open-loop load on a topology's API: holds and searches at fixed rates (each request sent at its scheduled time,
// its latency counted from then, so a stall shows up as latency and not as fewer requests), and after each hold
// that was granted a mix of what customers do next: pay (GET /pay, then the sandbox checkout's "Pay"), cancel, or
// leave it to expire. Latencies are kept per request, so any window (a minute, a fault) can be summarised.
import { randomUUID } from 'node:crypto';
import { signToken } from '../token.js';

export type Kind = 'hold' | 'search' | 'pay' | 'cancel';
export const KINDS: Kind[] = ['hold', 'search', 'pay', 'cancel'];

export interface Samples {
  /** seconds since the start, latency ms, HTTP status (0: no answer) — one entry per request, per kind */
  at: Record<Kind, number[]>;
  ms: Record<Kind, number[]>;
  status: Record<Kind, number[]>;
  /** requests not sent: more than maxInFlight were waiting (the client's own limit, counted per kind) */
  shed: Record<Kind, number>;
  /** the first 100 failures (5xx or no answer): when, what, and the answer's body */
  failures: { kind: Kind; at: number; status: number; body: string }[];
  /** how late the load generator itself sent requests (ms after their scheduled time): its own saturation */
  sendLagMs: number[];
}

export interface LoadOptions {
  url: string;
  jwtSecret: string;
  carIds: number[];
  city: string;
  holdRate: number;
  searchRate: number;
  seconds: number;
  /** shares of granted holds that are paid and cancelled; the rest expire (HOLD_TTL_S) */
  payShare?: number;
  cancelShare?: number;
  maxInFlight?: number;
  /** called about once a second with the seconds elapsed (and the previous call's) */
  onSecond?: (s: number, previous: number) => void;
}

const DAY = 864e5;
const rnd = (n: number) => Math.floor(Math.random() * n);

/** `n` cars of one host in `city`, created through the API. */
export async function createCars(url: string, jwtSecret: string, city: string, n: number): Promise<number[]> {
  const token = await signToken(jwtSecret, 'host', '900');
  const ids: number[] = [];
  for (let i = 0; i < n; i++) {
    const r = await fetch(`${url}/cars`, {
      method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ plate: `T${randomUUID().slice(0, 8)}-${i}`, model: 'Morning', city, dailyPrice: 500_000, depositAmount: 2_000_000 }),
    });
    if (r.status !== 201) throw new Error(`POST /cars: ${r.status} ${await r.text()}`);
    ids.push(((await r.json()) as { id: number }).id);
  }
  return ids;
}

export function emptySamples(): Samples {
  const rec = <T>(f: () => T) => Object.fromEntries(KINDS.map((k) => [k, f()])) as Record<Kind, T>;
  return { at: rec(() => []), ms: rec(() => []), status: rec(() => []), shed: rec(() => 0), failures: [], sendLagMs: [] };
}

export async function runLoad(o: LoadOptions): Promise<Samples> {
  const s = emptySamples();
  const payShare = o.payShare ?? 0.5;
  const cancelShare = o.cancelShare ?? 0.2;
  const maxInFlight = o.maxInFlight ?? 4000;
  const tokens = await Promise.all(Array.from({ length: 200 }, (_, i) => signToken(o.jwtSecret, 'customer', String(50_000 + i))));
  const t0 = performance.now();
  let inFlight = 0;
  const pending = new Set<Promise<unknown>>();
  const record = (kind: Kind, scheduled: number, status: number) => {
    s.at[kind].push((scheduled - t0) / 1000);
    s.ms[kind].push(performance.now() - scheduled);
    s.status[kind].push(status);
  };
  const send = async (kind: Kind, scheduled: number, f: () => Promise<Response>): Promise<{ status: number; text: string } | null> => {
    if (inFlight >= maxInFlight) {
      s.shed[kind]++;
      return null;
    }
    inFlight++;
    if (s.sendLagMs.length < 2_000_000) s.sendLagMs.push(performance.now() - scheduled);
    try {
      const r = await f();
      const text = await r.text().catch(() => '');
      record(kind, scheduled, r.status);
      if (r.status >= 500 && s.failures.length < 100) s.failures.push({ kind, at: (scheduled - t0) / 1000, status: r.status, body: text.slice(0, 200) });
      return { status: r.status, text };
    } catch (e) {
      record(kind, scheduled, 0);
      if (s.failures.length < 100) s.failures.push({ kind, at: (scheduled - t0) / 1000, status: 0, body: String((e as Error).cause ?? (e as Error).message).slice(0, 200) });
      return null;
    } finally {
      inFlight--;
    }
  };
  const track = (p: Promise<unknown>) => {
    pending.add(p);
    void p.finally(() => pending.delete(p));
  };
  const window = () => {
    const day = Date.now() + (3 + rnd(60)) * DAY;
    const from = Math.floor(day / 3_600_000) * 3_600_000 + rnd(24) * 3_600_000;
    return { from: new Date(from).toISOString(), to: new Date(from + (2 + rnd(5)) * 3_600_000).toISOString() };
  };
  const hold = async (scheduled: number) => {
    const token = tokens[rnd(tokens.length)]!;
    const auth = { authorization: `Bearer ${token}` };
    const w = window();
    const r = await send('hold', scheduled, () => fetch(`${o.url}/bookings`, {
      method: 'POST', headers: { ...auth, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      body: JSON.stringify({ carId: o.carIds[rnd(o.carIds.length)], ...w }),
    }));
    if (!r || r.status !== 201) return;
    let bookingId: number | undefined;
    try { bookingId = (JSON.parse(r.text) as { bookingId?: number }).bookingId; } catch { /* not JSON */ }
    if (!bookingId) return;
    const dice = Math.random();
    await new Promise((res) => setTimeout(res, 200 + rnd(2000)));
    if (dice < payShare) {
      await send('pay', performance.now(), async () => {
        const pay = await fetch(`${o.url}/bookings/${bookingId}/pay`, { headers: auth, redirect: 'manual' });
        const location = pay.headers.get('location');
        if (pay.status !== 303 || !location) return pay;
        await pay.text();
        return fetch(`${location}/pay`, { method: 'POST', redirect: 'manual' });
      });
    } else if (dice < payShare + cancelShare) {
      await send('cancel', performance.now(), () => fetch(`${o.url}/bookings/${bookingId}/cancel`, {
        method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ reason: 'load' }),
      }));
    }
  };
  const search = (scheduled: number) => {
    const w = window();
    return send('search', scheduled, () => fetch(`${o.url}/cars?city=${encodeURIComponent(o.city)}&from=${w.from}&to=${w.to}`));
  };
  let holds = 0;
  let searches = 0;
  let lastSecond = -1;
  for (;;) {
    const now = performance.now();
    const elapsed = (now - t0) / 1000;
    if (elapsed >= o.seconds) break;
    // Every request due by now goes out, stamped with the time it was due.
    for (; holds < Math.floor(elapsed * o.holdRate); holds++) track(hold(t0 + (holds / o.holdRate) * 1000));
    for (; searches < Math.floor(elapsed * o.searchRate); searches++) track(search(t0 + (searches / o.searchRate) * 1000));
    if (Math.floor(elapsed) !== lastSecond) {
      const prev = lastSecond;
      lastSecond = Math.floor(elapsed);
      o.onSecond?.(lastSecond, prev);
    }
    await new Promise((r) => setTimeout(r, 5));
  }
  await Promise.allSettled([...pending]);
  return s;
}

export interface Stats {
  n: number;
  p50: number;
  p99: number;
  /** answers ≥ 500 or none at all */
  failed: number;
}

function pct(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** p50/p99 and failures of `kind`'s requests scheduled in [from, to) seconds. */
export function statsOf(s: Samples, kind: Kind, from = 0, to = Infinity): Stats {
  const ms: number[] = [];
  let failed = 0;
  const at = s.at[kind];
  for (let i = 0; i < at.length; i++) {
    if (at[i]! < from || at[i]! >= to) continue;
    ms.push(s.ms[kind][i]!);
    const st = s.status[kind][i]!;
    if (st === 0 || st >= 500) failed++;
  }
  ms.sort((a, b) => a - b);
  return { n: ms.length, p50: pct(ms, 50), p99: pct(ms, 99), failed };
}

/** HTTP statuses of `kind`, counted. */
export function statusCounts(s: Samples, kind: Kind): Record<string, number> {
  const c: Record<string, number> = {};
  for (const st of s.status[kind]) c[st] = (c[st] ?? 0) + 1;
  return c;
}
