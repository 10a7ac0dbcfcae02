import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_DB } from '../helpers/harness.js';
import { waitFor } from '../helpers/http.js';
import { alive, childrenOf, freePort, spawnTs } from '../helpers/processes.js';

// `npm start` (scripts/start.ts) as a newcomer meets it: the summary it prints, and how it refuses what cannot
// work — a second instance on busy ports, PostgreSQL or Redis unreachable — at once, naming what to fix.

const databases: string[] = [];
const leftovers: number[] = [];
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'start-up-'));
afterAll(async () => {
  for (const pid of leftovers) if (alive(pid)) process.kill(pid, 'SIGKILL');
  const admin = new pg.Client({ connectionString: ADMIN_DB });
  await admin.connect();
  for (const db of databases) await admin.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`).catch(() => {});
  await admin.end();
  fs.rmSync(scratch, { recursive: true, force: true });
});

/** A development environment on free ports: secrets from a fresh local file, its own database and Redis prefixes. */
async function environment() {
  const id = randomUUID().replace(/-/g, '').slice(0, 12);
  databases.push(`test_start_${id}`);
  return {
    NODE_ENV: 'development', LOG_LEVEL: 'info', LOCAL_SECRETS_FILE: path.join(scratch, `secrets-${id}.json`),
    DATABASE_URL: `postgres://postgres@127.0.0.1:5432/test_start_${id}`, REDIS_URL: 'redis://127.0.0.1:6379/5',
    QUEUE_PREFIX: `s${id}`, REDIS_KEY_PREFIX: `s${id}:`, KAFKA_BROKERS: 'none', METRICS_PORT: '0',
    PORT: String(await freePort()), DASHBOARD_PORT: String(await freePort()), PSP_PORT: String(await freePort()),
  };
}

const ready = (port: string) => fetch(`http://127.0.0.1:${port}/ready`).then((r) => r.status, () => 0);
const exitOf = (child: ReturnType<typeof spawnTs>) =>
  new Promise<number | null>((resolve) => (child.exitCode !== null ? resolve(child.exitCode) : child.once('exit', (code) => resolve(code))));
/** A stack trace line ("    at fn (file:1:2)"): a newcomer should never need one to learn what to fix. */
const STACK = /^\s+at .+:\d+:\d+\)?$/m;

describe('npm start', () => {
  let env: Awaited<ReturnType<typeof environment>>;
  let first: ReturnType<typeof spawnTs>;
  beforeAll(async () => {
    env = await environment();
    first = spawnTs('scripts/start.ts', env);
    leftovers.push(first.pid!);
    await waitFor(async () => (await ready(env.PORT)) === 200, 90_000, 200)
      .catch((e) => { throw new Error(`${e.message}\n${first.output().slice(-3000)}`); });
    leftovers.push(...childrenOf(first.pid!));
  }, 120_000);

  it('prints a summary: the database and its migrations, every URL on its real port, where the secrets are (never their values), Kafka', async () => {
    await waitFor(async () => /\| ready/.test(first.output()), 30_000, 100).catch(() => {});
    const out = first.output();
    const summary = out.split('\n').filter((l) => l.startsWith('start '));
    const text = summary.join('\n');
    expect(text).toMatch(new RegExp(`database test_start_\\w+ on 127\\.0\\.0\\.1:5432: \\d+ migrations, \\d+ applied now`));
    expect(text).toContain(`http://127.0.0.1:${env.PORT}/docs`);
    expect(text).toContain(`http://127.0.0.1:${env.DASHBOARD_PORT}/admin/queues`);
    expect(text).toContain(`http://127.0.0.1:${env.DASHBOARD_PORT}/admin/bookings`);
    expect(text).toContain(env.LOCAL_SECRETS_FILE);
    expect(text).toMatch(/kafka.*KAFKA_BROKERS=none/i);
    const secrets = JSON.parse(fs.readFileSync(env.LOCAL_SECRETS_FILE, 'utf8')) as Record<string, string>;
    for (const [name, value] of Object.entries(secrets)) expect(out, `${name} printed`).not.toContain(value);
  });

  it('refuses a second instance on the same ports at once, naming the busy port, and starts none of its processes', async () => {
    // Regression: a second `npm start` said "started", its api, dashboard and sandbox crashed on the busy ports and
    // restarted for ever, and its workers joined the first instance's database. It must refuse at once.
    const t0 = Date.now();
    const second = spawnTs('scripts/start.ts', env);
    leftovers.push(second.pid!);
    const code = await exitOf(second);
    expect(code, second.output()).not.toBe(0);
    expect(Date.now() - t0).toBeLessThan(20_000);
    expect(second.output()).toContain(`port ${env.PORT} (PORT) is in use`);
    expect(second.output()).not.toMatch(/started:/);
    expect(second.output()).not.toMatch(STACK);
    expect(await ready(env.PORT)).toBe(200); // the first instance is untouched
  }, 60_000);
});

describe('npm start without its services', () => {
  it('names DATABASE_URL when PostgreSQL does not answer, without a stack trace, and starts nothing', async () => {
    const env = { ...(await environment()), DATABASE_URL: `postgres://postgres:hunter2@127.0.0.1:${await freePort()}/nothing` };
    const sup = spawnTs('scripts/start.ts', env);
    leftovers.push(sup.pid!);
    expect(await exitOf(sup)).not.toBe(0);
    const out = sup.output();
    expect(out).toMatch(/PostgreSQL.*DATABASE_URL/);
    expect(out).not.toContain('hunter2');
    expect(out).not.toMatch(STACK);
    expect(out).not.toMatch(/started:/);
  }, 60_000);

  it('names REDIS_URL when Redis does not answer, without a stack trace, and starts nothing', async () => {
    const env = { ...(await environment()), REDIS_URL: `redis://127.0.0.1:${await freePort()}` };
    const sup = spawnTs('scripts/start.ts', env);
    leftovers.push(sup.pid!);
    expect(await exitOf(sup)).not.toBe(0);
    const out = sup.output();
    expect(out).toMatch(/Redis.*REDIS_URL/);
    expect(out).not.toMatch(STACK);
    expect(out).not.toMatch(/started:/);
  }, 60_000);
});
