import net from 'node:net';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { ADMIN_DB } from '../helpers/harness.js';
import { token, waitFor } from '../helpers/http.js';
import { alive, childrenOf, freePort, spawnTs, testSecrets } from '../helpers/processes.js';
import { METRICS_PORT_OFFSETS } from '../../shared/metrics/server.js';

// Every process of `npm start` serves Prometheus metrics (workers on METRICS_PORT_BASE + their offset,
// the api and the dashboard on their HTTP ports), labelled with its name; every log line names its process,
// and a request's access-log line carries its request id.

const id = randomUUID().replace(/-/g, '').slice(0, 12);
const database = `test_obs_${id}`;
let pid: number | undefined;
afterAll(async () => {
  if (pid && alive(pid)) {
    const children = childrenOf(pid);
    process.kill(pid, 'SIGTERM');
    await waitFor(async () => !alive(pid!) && children.every((c) => !alive(c)), 30_000, 200).catch(() => {
      for (const c of [pid!, ...children]) if (alive(c)) process.kill(c, 'SIGKILL');
    });
  }
  const admin = new pg.Client({ connectionString: ADMIN_DB });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).catch(() => {});
  await admin.end();
});

const free = (port: number) => new Promise<boolean>((resolve) => {
  const s = net.createServer().once('error', () => resolve(false)).listen(port, () => s.close(() => resolve(true)));
});

/** A base whose worker ports (base + each offset) are all free now. */
async function freeBase(): Promise<number> {
  for (;;) {
    const base = 20_000 + Math.floor(Math.random() * 30_000);
    if ((await Promise.all(Object.values(METRICS_PORT_OFFSETS).map((o) => free(base + o)))).every(Boolean)) return base;
  }
}

const get = (url: string, headers: Record<string, string> = {}) =>
  fetch(url, { headers }).then(async (r) => ({ status: r.status, text: await r.text() }), () => ({ status: 0, text: '' }));

describe('npm start: metrics and logs of every process', () => {
  it('serves /metrics from every process, names the process on every log line, logs each request with its id', async () => {
    const secrets = testSecrets();
    const base = await freeBase();
    const env = {
      // One API process (process-lifecycle covers API_WORKERS > 1): its /metrics is the one process's.
      API_WORKERS: '1', NODE_ENV: 'test', LOG_LEVEL: 'info', ...secrets, DATABASE_URL: `postgres://postgres@127.0.0.1:5432/${database}`,
      REDIS_URL: 'redis://127.0.0.1:6379/5', QUEUE_PREFIX: `o${id}`, REDIS_KEY_PREFIX: `o${id}:`, KAFKA_BROKERS: 'none',
      PORT: String(await freePort()), DASHBOARD_PORT: String(await freePort()), PSP_PORT: String(await freePort()),
      METRICS_PORT_BASE: String(base),
    };
    const sup = spawnTs('scripts/start.ts', env);
    pid = sup.pid;
    const api = `http://127.0.0.1:${env.PORT}`;
    await waitFor(async () => (await get(`${api}/ready`)).status === 200, 60_000, 200)
      .catch((e) => { throw new Error(`${e.message}\n${sup.output().slice(-3000)}`); });

    const targets: Record<string, string> = { api: `${api}/metrics`, dashboard: `http://127.0.0.1:${env.DASHBOARD_PORT}/metrics` };
    for (const [name, offset] of Object.entries(METRICS_PORT_OFFSETS)) targets[name] = `http://127.0.0.1:${base + offset}/metrics`;
    for (const [name, url] of Object.entries(targets)) {
      const r = await waitFor(async () => {
        const m = await get(url);
        return m.status === 200 ? m : null;
      }, 30_000, 200).catch(() => { throw new Error(`${name}: no metrics at ${url}\n${sup.output().slice(-3000)}`); });
      expect(r.text, name).toContain(`process_cpu_user_seconds_total{proc="${name}"}`);
      expect(r.text, name).toContain('nodejs_eventloop_lag_seconds');
    }
    expect((await get(targets.expiry!)).text).toContain('# TYPE expiry_lag_seconds histogram');
    expect((await get(targets.pump!)).text).toContain('# TYPE pump_published_events_total counter');
    expect((await get(targets.api!)).text).toContain('# TYPE outbox_oldest_unpublished_age_seconds gauge');

    const requestId = `obs-${id}`;
    const car = await fetch(`${api}/cars`, {
      method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': requestId, authorization: `Bearer ${token(secrets.JWT_SECRET!, { sub: '5', role: 'host' })}` },
      body: JSON.stringify({ plate: `O-${id}`, model: 'M', city: 'OBS', dailyPrice: 1, depositAmount: 1 }),
    });
    expect(car.status).toBe(201);
    const access = await waitFor(async () => sup.output().split('\n').find((l) => l.includes(requestId) && l.includes('"msg":"request"')), 10_000)
      .catch(() => { throw new Error(`no access log line\n${sup.output().slice(-3000)}`); });
    expect(JSON.parse(access.slice(access.indexOf('{')))).toMatchObject({
      proc: 'api', requestId, method: 'POST', route: '/cars', path: '/cars', status: 201, actor: 'host:5', ms: expect.any(Number),
    });

    // Every JSON line a child wrote names the process it came from (the supervisor prefixes `name | `).
    const lines = sup.output().split('\n').map((l) => l.match(/^(\S+)\s*\| (\{.*\})$/)).filter((m) => m !== null);
    expect(lines.length).toBeGreaterThan(10);
    for (const [, name, json] of lines) expect(JSON.parse(json!).proc, json).toBe(name);
    expect(new Set(lines.map((m) => m[1]))).toEqual(new Set(['api', 'dashboard', 'psp', ...Object.keys(METRICS_PORT_OFFSETS)]));
  }, 120_000);
});
