import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { migrate } from '../../shared/db/migrate.js';
import { readProcfile, supervisedProcesses } from '../../scripts/procfile.js';
import { ADMIN_DB } from '../helpers/harness.js';
import { sleep, token, waitFor } from '../helpers/http.js';
import { send } from '../fuzz/raw-http.js';
import { alive, childrenOf, freePort, ROOT, spawnTs, testSecrets } from '../helpers/processes.js';

const databases: string[] = [];
const leftovers: number[] = [];
afterAll(async () => {
  for (const pid of leftovers) if (alive(pid)) process.kill(pid, 'SIGKILL');
  const admin = new pg.Client({ connectionString: ADMIN_DB });
  await admin.connect();
  for (const db of databases) await admin.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`).catch(() => {});
  await admin.end();
});

async function environment() {
  const id = randomUUID().replace(/-/g, '').slice(0, 12);
  databases.push(`test_proc_${id}`);
  return {
    NODE_ENV: 'test', LOG_LEVEL: 'info', ...testSecrets() as { JWT_SECRET: string },
    DATABASE_URL: `postgres://postgres@127.0.0.1:5432/test_proc_${id}`, REDIS_URL: 'redis://127.0.0.1:6379/5',
    QUEUE_PREFIX: `p${id}`, REDIS_KEY_PREFIX: `p${id}:`, KAFKA_BROKERS: 'none',
    PORT: String(await freePort()), DASHBOARD_PORT: String(await freePort()), PSP_PORT: String(await freePort()),
  };
}

/** One request on a connection of its own (Connection: close): the cluster hands each to the next worker. */
const onNewConnection = (port: string, method: string, path: string, bearer?: string, body?: unknown) => send(`http://127.0.0.1:${port}`, {
  method, path, body: body === undefined ? undefined : JSON.stringify(body),
  headers: { connection: 'close', ...(bearer ? { authorization: `Bearer ${bearer}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
});

/** A process's nice value (/proc/<pid>/stat, field 19). */
const niceOf = (pid: number) => Number(fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[16]);
/** The Procfile name the supervisor gave a child (PROC_NAME in its environment). */
const procName = (pid: number) => fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').find((v) => v.startsWith('PROC_NAME='))?.slice(10);

const ready = (port: string) => fetch(`http://127.0.0.1:${port}/ready`).then((r) => r.status, () => 0);

describe('npm start (scripts/start.ts)', () => {
  it('supervises every Procfile process, survives a closed stdout/stderr, and its children exit when it is killed with -9', async () => {
    const env = await environment();
    const expected = supervisedProcesses(readProcfile(`${ROOT}/Procfile`), { externalPsp: false }).length;
    const sup = spawnTs('scripts/start.ts', env);
    leftovers.push(sup.pid!);
    await waitFor(async () => childrenOf(sup.pid!).length === expected && (await ready(env.PORT)) === 200, 60_000, 200)
      .catch((e) => { throw new Error(`${e.message}\n${sup.output().slice(-3000)}`); });
    const first = childrenOf(sup.pid!);
    leftovers.push(...first);

    // Nobody reads the supervisor's output any more: every line it writes from now on meets EPIPE.
    sup.stdout!.destroy();
    sup.stderr!.destroy();
    const [victim, ...others] = first;
    process.kill(victim!, 'SIGKILL');
    await waitFor(async () => {
      const now = childrenOf(sup.pid!);
      return now.length === expected && !now.includes(victim!);
    }, 20_000, 100);
    await sleep(2000); // the restarted child logs its start-up into the closed pipe
    expect(alive(sup.pid!)).toBe(true);
    const current = childrenOf(sup.pid!);
    leftovers.push(...current);
    // Nothing else was restarted: the pump without Kafka (KAFKA_BROKERS=none) works on instead of exiting.
    for (const pid of others) expect(current).toContain(pid);
    // The API and the sandbox provider run at the supervisor's priority, the rest at BACKGROUND_NICE (10), a restarted
    // child too.
    const supervisorNice = niceOf(sup.pid!);
    const foreground = ['api', 'psp'];
    for (const pid of current) expect(niceOf(pid), procName(pid)).toBe(foreground.includes(procName(pid)!) ? supervisorNice : Math.max(10, supervisorNice));
    expect(current.map(procName)).toEqual(expect.arrayContaining([...foreground, 'expiry', 'pump']));

    // Once more, and kill -9 the supervisor while the replacement is still starting up.
    const [second] = others;
    process.kill(second!, 'SIGKILL');
    await waitFor(async () => childrenOf(sup.pid!).length === expected && !childrenOf(sup.pid!).includes(second!), 20_000, 20);
    const last = childrenOf(sup.pid!);
    leftovers.push(...last);
    process.kill(sup.pid!, 'SIGKILL');
    const t0 = Date.now();
    // Each drains first (graceful stop); a few seconds, more on a loaded 2-core machine.
    await waitFor(async () => last.every((pid) => !alive(pid)), 15_000, 100)
      .catch(() => { throw new Error(`still running ${Date.now() - t0} ms after kill -9: ${last.filter(alive).join(', ')}`); });
  }, 120_000);
});

describe('npm start with API_WORKERS=2', () => {
  // Regression: the cluster's workers inherited SUPERVISOR_PID, saw a parent that was not it, and exited at once
  // (exit 1, no log line) — the API never answered under `npm start` with more than one worker.
  it('serves from both API workers, a listed car in either\'s next search, /metrics of both; they go when the supervisor is killed with -9', async () => {
    const env = { ...(await environment()), API_WORKERS: '2' };
    const sup = spawnTs('scripts/start.ts', env);
    leftovers.push(sup.pid!);
    await waitFor(async () => (await ready(env.PORT)) === 200, 60_000, 200)
      .catch((e) => { throw new Error(`${e.message}\n${sup.output().slice(-3000)}`); });
    const api = childrenOf(sup.pid!).find((pid) => childrenOf(pid).length === 2);
    expect(api, 'the api process with its two workers').toBeDefined();
    const workers = childrenOf(api!);
    leftovers.push(api!, ...workers);
    await sleep(1500); // a worker that took itself for orphaned would have gone by now
    expect(workers.every(alive)).toBe(true);
    expect(sup.output()).not.toContain('api worker exited');

    // Each request below opens its own connection, which the cluster hands to the workers in turn.
    // A car just listed is in the next search, whichever worker answers it (the write waited for both indexes).
    const host = token(env.JWT_SECRET!, { sub: '900', role: 'host' });
    const from = new Date(Math.ceil(Date.now() / 3_600_000) * 3_600_000 + 48 * 3_600_000);
    const period = `from=${from.toISOString()}&to=${new Date(from.getTime() + 7_200_000).toISOString()}`;
    const carIds: number[] = [];
    for (let i = 0; i < 5; i++) {
      const city = `C${randomUUID().slice(0, 8)}`;
      const car = await onNewConnection(env.PORT, 'POST', '/cars', host,
        { plate: `W${randomUUID().slice(0, 8)}`, model: 'Morning', city, dailyPrice: 500_000, depositAmount: 1_000_000 });
      expect(car.status, car.text).toBe(201);
      carIds.push(JSON.parse(car.text).id);
      for (let j = 0; j < 4; j++) {
        const found = await onNewConnection(env.PORT, 'GET', `/cars?city=${city}&${period}`);
        expect(JSON.parse(found.text).cars.map((c: { id: number }) => c.id), `car ${i}, search ${j}`).toEqual([JSON.parse(car.text).id]);
      }
    }
    // /metrics counts the requests of both workers, whichever one is scraped; the queue gauges are read once (one
    // hold: one delayed expiry job, not one per worker).
    const customer = token(env.JWT_SECRET!, { sub: '77', role: 'customer' });
    const held = await onNewConnection(env.PORT, 'POST', '/bookings', customer,
      { carId: carIds[0], from: from.toISOString(), to: new Date(from.getTime() + 7_200_000).toISOString() });
    expect(held.status, held.text).toBe(201);
    for (let i = 0; i < 10; i++) expect((await onNewConnection(env.PORT, 'GET', '/health')).status).toBe(200);
    const healthCount = async () => {
      const text = (await onNewConnection(env.PORT, 'GET', '/metrics')).text;
      const line = text.split('\n').find((l) => l.startsWith('http_request_duration_seconds_count{') && l.includes('route="/health"') && l.includes('status="200"'));
      return { text, count: Number(line?.split(' ').at(-1) ?? 0) };
    };
    let seen = 0;
    for (let scrape = 0; scrape < 2; scrape++) {
      const { text, count } = await healthCount();
      expect(count, `scrape ${scrape}`).toBeGreaterThanOrEqual(10);
      expect(text.match(/^queue_depth\{queue="expiry",state="delayed"\} (\d+)$/m)?.[1], 'the ops gauges, read once').toBe('1');
      seen = Math.max(seen, count);
    }
    // A worker dies and another takes its place: the sums keep what the dead one had counted (api/carried-counters.ts),
    // so Prometheus never reads a reset.
    process.kill(workers[0]!, 'SIGKILL');
    await waitFor(async () => childrenOf(api!).length === 2 && !childrenOf(api!).includes(workers[0]!), 20_000, 100);
    leftovers.push(...childrenOf(api!));
    for (let scrape = 0; scrape < 4; scrape++) expect((await healthCount()).count, `after the restart, scrape ${scrape}`).toBeGreaterThanOrEqual(seen);
    const now = childrenOf(api!);
    // The new worker took connections only once both its search indexes were built (api/server.ts): its log says
    // "search index built" for cars and stays before "api listening".
    const fresh = now.find((pid) => !workers.includes(pid))!;
    const logOf = () => sup.output().split('\n').filter((l) => l.includes(`"pid":${fresh},`));
    await waitFor(async () => logOf().some((l) => l.includes('"msg":"api listening"')), 10_000, 100);
    const log = logOf();
    const at = (msg: string, extra = '') => log.findIndex((l) => l.includes(`"msg":"${msg}"`) && l.includes(extra));
    const cars = at('search index built', '"index":"cars"');
    const stays = at('search index built', '"index":"stays"');
    expect(Math.min(cars, stays), log.join('\n')).toBeGreaterThanOrEqual(0);
    expect(at('api listening'), log.join('\n')).toBeGreaterThan(Math.max(cars, stays));
    process.kill(sup.pid!, 'SIGKILL');
    await waitFor(async () => [api!, ...now].every((pid) => !alive(pid)), 15_000, 100);
  }, 120_000);
});

describe('api shutdown', () => {
  it('answers /ready with 503 as soon as it is asked to stop, while it drains', async () => {
    const env = { ...(await environment()), SHUTDOWN_DELAY_S: '3' };
    await migrate(env.DATABASE_URL);
    const api = spawnTs('api/server.ts', env);
    leftovers.push(api.pid!);
    await waitFor(async () => (await ready(env.PORT)) === 200, 30_000, 100);
    const exited = new Promise((r) => api.once('exit', r));
    api.kill('SIGTERM');
    await waitFor(async () => (await ready(env.PORT)) === 503, 2000, 20);
    const res = await fetch(`http://127.0.0.1:${env.PORT}/ready`);
    expect(res.status).toBe(503);
    expect((await res.json()).error.code).toBe('UNAVAILABLE');
    expect((await fetch(`http://127.0.0.1:${env.PORT}/health`)).status).toBe(200);
    await exited;
  });
});
