import type { Rng } from './rng.js';
import type { Topology } from './topology.js';
import { obliterateQueue, stallTwice } from './job-faults.js';

// The fault schedule: every kind fires at least once, spread over the first three quarters of the run in a seeded
// order, plus a few more at seeded times. Infrastructure faults (kill -9, Redis, Kafka, PostgreSQL) act on the
// run's own topology; provider faults steer the sandbox through its control routes (sandbox/control.ts).

export interface Window {
  kind: string;
  from: number;
  to: number;
}

type Fire = (t: Topology, rng: Rng, windows: Window[]) => Promise<string>;

const control = async (t: Topology, method: string, path: string, body?: unknown) => {
  const res = await fetch(`${t.pspUrl}/sandbox${path}`, {
    method, headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`sandbox ${method} ${path}: ${res.status} ${await res.text()}`);
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A window of sandbox faults, set now and reset after `ms` (only the fields set). */
async function sandboxWindow(t: Topology, set: Record<string, unknown>, reset: Record<string, unknown>, ms: number) {
  await control(t, 'POST', '/faults', set);
  await sleep(ms);
  await control(t, 'POST', '/faults', reset);
}

/**
 * The provider counts as down (a 503 from the service's routes that call it is then allowed) from the moment an
 * answer rule is set until the sandbox has used it up (it leaves GET /sandbox/faults), or the faults are reset.
 */
function trackRule(t: Topology, rule: { endpoint: string; answer: number | string }, windows: Window[]): void {
  const w: Window = { kind: 'psp', from: Date.now(), to: Infinity };
  windows.push(w);
  void (async () => {
    while (w.to === Infinity) {
      await sleep(1_000);
      const faults = await fetch(`${t.pspUrl}/sandbox/faults`).then((r) => r.json() as Promise<{ answers: typeof rule[] }>).catch(() => null);
      if (faults && !faults.answers.some((a) => a.endpoint === rule.endpoint && a.answer === rule.answer)) w.to = Date.now() + 5_000;
    }
  })();
}

function killOne(kind: string): Fire {
  return async (t, rng) => {
    const alive = t.procs.filter((p) => p.kind === kind && p.pid() !== undefined);
    const victim = rng.pick(alive);
    if (!victim) return `no ${kind} process alive`;
    victim.kill9();
    return `kill -9 ${victim.name}`;
  };
}

const ENDPOINTS = ['intents.create', 'intents.get', 'intents.list', 'intents.cancel', 'refunds.create', '*'] as const;

export function faultKinds(workerKinds: string[]): Record<string, Fire> {
  const kills = Object.fromEntries(workerKinds.map((k) => [`kill:${k}`, killOne(k)]));
  return {
    ...kills,
    'redis:flushall': async (t, _rng, windows) => {
      windows.push({ kind: 'redis', from: Date.now(), to: Date.now() + 5_000 });
      await t.redisFlushAll();
      return 'FLUSHALL';
    },
    'redis:restart': async (t, rng, windows) => {
      const down = rng.int(1_000, 4_000);
      const w = { kind: 'redis', from: Date.now(), to: Infinity };
      windows.push(w);
      await t.redisRestart(down);
      w.to = Date.now() + 5_000;
      return `down ${down} ms`;
    },
    'kafka:restart': async (t, rng, windows) => {
      const down = rng.int(3_000, 8_000);
      const w = { kind: 'kafka', from: Date.now(), to: Infinity };
      windows.push(w);
      await t.kafkaRestart(down);
      w.to = Date.now() + 5_000;
      return `stopped, started again after ${down} ms`;
    },
    'jobs:stall-twice': async (t, rng, windows) => {
      const w: Window = { kind: 'psp', from: Date.now(), to: Infinity };
      windows.push(w);
      const kill = (pid: number) => t.procs.find((p) => p.pid() === pid)?.kill9() ?? false;
      const slow = async (on: boolean) => {
        await control(t, 'POST', '/faults', { apiDelayMs: on ? 5_000 : 0 });
        if (!on) w.to = Date.now() + 5_000;
      };
      return stallTwice(t.env.REDIS_URL!, t.queuePrefix, rng, kill, slow);
    },
    'jobs:obliterate': async (t, rng, windows) => {
      windows.push({ kind: 'redis', from: Date.now(), to: Date.now() + 5_000 });
      return obliterateQueue(t.env.REDIS_URL!, t.queuePrefix, rng);
    },
    'pg:terminate': async (t, _rng, windows) => {
      windows.push({ kind: 'postgres', from: Date.now(), to: Date.now() + 5_000 });
      return `${await t.pgTerminate()} connections terminated`;
    },
    'psp:error-answers': async (t, rng, windows) => {
      const rule = { endpoint: rng.pick(ENDPOINTS), answer: rng.pick([401, 409, 429, 500, 502, 503]), times: rng.int(2, 8) };
      await control(t, 'POST', '/faults/answers', rule);
      trackRule(t, rule, windows);
      return `${rule.endpoint}: ${rule.answer} x${rule.times}`;
    },
    'psp:timeouts': async (t, rng, windows) => {
      const rule = { endpoint: rng.pick(ENDPOINTS), answer: 'timeout', times: rng.int(1, 4), hangMs: 3_000 };
      await control(t, 'POST', '/faults/answers', rule);
      trackRule(t, rule, windows);
      return `${rule.endpoint}: hangs 3 s x${rule.times}`;
    },
    'psp:webhook-loss': async (t, rng) => {
      const ms = rng.int(3_000, 8_000);
      await sandboxWindow(t, { webhookLossRate: 0.5 }, { webhookLossRate: 0 }, ms);
      return `half the webhooks lost for ${ms} ms`;
    },
    'psp:webhook-duplicates': async (t, rng) => {
      const ms = rng.int(3_000, 8_000);
      await sandboxWindow(t, { duplicateDeliveries: 2 }, { duplicateDeliveries: 0 }, ms);
      return `every webhook 3 times for ${ms} ms`;
    },
    'psp:webhook-reorder': async (t, rng) => {
      const ms = rng.int(3_000, 8_000);
      await sandboxWindow(t, { webhookJitterMs: 3_000, outOfOrder: true, processingFirstMs: 300 }, { webhookJitterMs: 0, outOfOrder: false, processingFirstMs: 0 }, ms);
      return `webhooks delayed 0-3 s, processing after success, for ${ms} ms`;
    },
    'psp:processing': async (t, rng) => {
      const ms = rng.int(3_000, 8_000);
      await sandboxWindow(t, { processingFirstMs: 2_500 }, { processingFirstMs: 0 }, ms);
      return `payments processing 2.5 s first, for ${ms} ms`;
    },
    'psp:forget-keys': async (t) => {
      await control(t, 'POST', '/idempotency-keys/forget');
      return 'idempotency keys forgotten';
    },
  };
}

export interface ScheduledFault {
  atMs: number;
  kind: string;
}

/** Each kind once between 10 % and 75 % of the run (seeded order), then one more every ~20 s at seeded times. */
export function schedule(rng: Rng, kinds: string[], seconds: number): ScheduledFault[] {
  const total = seconds * 1000;
  const order = rng.shuffle(kinds);
  const span = total * 0.65;
  const planned = order.map((kind, i) => ({ kind, atMs: Math.round(total * 0.1 + (span * i) / order.length) }));
  const extra = Math.floor(seconds / 20);
  for (let i = 0; i < extra; i++) planned.push({ kind: rng.pick(kinds), atMs: rng.int(Math.round(total * 0.05), Math.round(total * 0.8)) });
  return planned.sort((a, b) => a.atMs - b.atMs);
}

/** Fires the schedule from `startedAt`; every fault runs in the background (a Kafka restart takes a while). */
export function runSchedule(t: Topology, rng: Rng, planned: ScheduledFault[], startedAt: number, log: (line: string) => void) {
  const fires = faultKinds(t.workerKinds);
  const counts: Record<string, number> = {};
  const windows: Window[] = [];
  const running = new Set<Promise<void>>();
  const timers = planned.map((f) => setTimeout(() => {
    counts[f.kind] = (counts[f.kind] ?? 0) + 1;
    const p = fires[f.kind]!(t, rng, windows)
      .then((what) => log(`fault ${f.kind}: ${what}`), (e: unknown) => log(`fault ${f.kind} FAILED: ${(e as Error).message}`))
      .finally(() => running.delete(p));
    running.add(p);
  }, Math.max(0, startedAt + f.atMs - Date.now())));
  return {
    counts,
    windows,
    kinds: Object.keys(fires),
    /** Cancels what has not fired and waits for what is running. */
    async settle() {
      timers.forEach(clearTimeout);
      while (running.size) await Promise.allSettled([...running]);
      // The runner resets the sandbox's faults next: provider windows still open close 5 s from now.
      for (const w of windows) if (w.to === Infinity) w.to = Date.now() + 5_000;
    },
  };
}
