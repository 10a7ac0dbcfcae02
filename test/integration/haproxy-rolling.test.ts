import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { inHours, sleep } from '../helpers/http.js';
import { newCar } from '../helpers/cars.js';
import { freePort } from '../../scripts/free-port.js';
import { rollingRestart, spawnApi, stopApi, waitReady, type ApiProcess } from '../../scripts/topology/apis.js';
import { startHaproxy, type Haproxy } from '../../scripts/topology/haproxy.js';

// API processes behind HAProxy, checked on /ready: a rolling restart of all of them under a steady load of
// searches and holds fails no request. Each stopping API answers /ready 503 at once and serves SHUTDOWN_DELAY_S
// more, longer than HAProxy takes to mark it down (2 checks 500 ms apart); HAProxy sends a request that never reached
// an API (connection refused or closed unanswered) to another one.

// Two keep the file under 2 minutes on a busy 2-core machine (each restart is a tsx start); the topology runs any number.
const N = 2;
let h: Harness;
let dir: string;
let haproxy: Haproxy;
let apis: ApiProcess[] = [];
let env: Record<string, string>;
let front: string;
const cars: number[] = [];

beforeAll(async () => {
  h = await startHarness({ env: { HOLD_RATE_LIMIT: '100000' } });
  for (let i = 0; i < 10; i++) cars.push(await newCar(h));
  const c = h.config;
  env = {
    DATABASE_URL: c.DATABASE_URL, REDIS_URL: c.REDIS_URL, REDIS_KEY_PREFIX: c.REDIS_KEY_PREFIX, QUEUE_PREFIX: c.QUEUE_PREFIX,
    JWT_SECRET: c.JWT_SECRET, PAYMENT_WEBHOOK_SECRET: c.PAYMENT_WEBHOOK_SECRET, PSP_URL: c.pspUrl, PSP_API_KEY: c.PSP_API_KEY,
    DASHBOARD_PASSWORD: 'unused-here', HOLD_RATE_LIMIT: '100000', SHUTDOWN_DELAY_S: '2', LOG_LEVEL: 'warn', METRICS_PORT: '0',
    KAFKA_BROKERS: 'none', SEARCH_INDEX: 'off',
  };
  const ports = await Promise.all(Array.from({ length: N + 2 }, () => freePort()));
  apis = ports.slice(0, N).map((p, i) => spawnApi(`api${i + 1}`, p, env));
  await Promise.all(apis.map((a) => waitReady(a.port)));
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'haproxy-'));
  haproxy = await startHaproxy(dir, { port: ports[N]!, statsPort: ports[N + 1]!, backends: apis.map((a) => ({ name: a.name, port: a.port })) });
  front = `http://127.0.0.1:${ports[N]}`;
  for (let t = 0; Object.values(await haproxy.states()).filter((s) => s === 'UP').length < N; t++) {
    if (t > 100) throw new Error(`not all APIs up: ${JSON.stringify(await haproxy.states())}`);
    await sleep(100);
  }
}, 90_000);
afterAll(async () => {
  try {
    await haproxy?.stop();
    await Promise.all(apis.map((a) => stopApi(a, 'SIGKILL')));
    await h?.close();
  } finally {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  }
}, 60_000);

describe('N API processes behind HAProxy', () => {
  it('restarts every API one after the other under load with 0 failed requests', async () => {
    const failures: string[] = [];
    let answered = 0;
    let stop = false;
    let slot = 0;
    const worker = async (w: number) => {
      const token = h.token(5000 + w, 'customer');
      while (!stop) {
        slot += 1;
        const search = slot % 2 === 0;
        const from = inHours(24 + (slot % 600));
        try {
          const r = search
            ? await fetch(`${front}/cars?city=HN&from=${from}&to=${inHours(26 + (slot % 600))}`)
            : await fetch(`${front}/bookings`, {
              method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
              body: JSON.stringify({ carId: cars[slot % cars.length], from, to: inHours(25 + (slot % 600)) }),
            });
          await r.text();
          // 201 a hold, 409 the car taken: answers. A 5xx or no answer at all is a failed request.
          if (r.status >= 500) failures.push(`${search ? 'search' : 'hold'} ${r.status}`);
          else answered += 1;
        } catch (e) {
          failures.push(`${search ? 'search' : 'hold'} ${(e as Error).message}`);
        }
      }
    };
    const load = Promise.all(Array.from({ length: 6 }, (_, w) => worker(w)));
    await sleep(1000);
    const before = answered;
    await rollingRestart(apis, env, async (name) => (await haproxy.states())[name] === 'UP');
    await sleep(1000);
    stop = true;
    await load;
    expect(failures).toEqual([]);
    // Requests were answered before, during and after the restarts (how many depends on the machine's load).
    expect(before).toBeGreaterThan(0);
    expect(answered).toBeGreaterThan(before + 30);
    // Every API was replaced: the processes serving now are not the ones started first.
    expect(apis.every((a) => a.child.exitCode === null)).toBe(true);
  }, 120_000);
});
