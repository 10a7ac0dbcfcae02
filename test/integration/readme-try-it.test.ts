import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_DB } from '../helpers/harness.js';
import { waitFor } from '../helpers/http.js';
import { alive, childrenOf, freePort, ROOT, spawnTs } from '../helpers/processes.js';

// The README's "Try it" block, as it is written there (so this fails when the README drifts), run five times in
// a row against one `npm start` on free ports, as a newcomer re-running it would. Each run must go all the way:
// held, paid, CONFIRMED, cancelled, refund SUCCEEDED, its story and its events. (Regression: a 4th run within
// 15 minutes hit the seeded customer's hold limit, then cascaded through BOOKING=undefined into 404s.)

const RUNS = 5;
const id = randomUUID().replace(/-/g, '').slice(0, 12);
const database = `test_tryit_${id}`;
const leftovers: number[] = [];
let env: Record<string, string>;
let start: ReturnType<typeof spawnTs>;

/** The README's second ```sh block under "## Try it" (the first is `npm ci && npm start`). */
export function tryItBlock(readme: string): string {
  const section = readme.slice(readme.indexOf('## Try it'), readme.indexOf('\n## ', readme.indexOf('## Try it') + 1));
  const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
  expect(blocks.length, 'two sh blocks in "Try it"').toBe(2);
  return blocks[1]!;
}

beforeAll(async () => {
  env = {
    PATH: process.env.PATH!, HOME: process.env.HOME ?? '/root', NODE_ENV: 'development', LOG_LEVEL: 'warn',
    DATABASE_URL: `postgres://postgres@127.0.0.1:5432/${database}`, REDIS_URL: 'redis://127.0.0.1:6379/5',
    QUEUE_PREFIX: `r${id}`, REDIS_KEY_PREFIX: `r${id}:`, METRICS_PORT: '0',
    PORT: String(await freePort()), DASHBOARD_PORT: String(await freePort()), PSP_PORT: String(await freePort()),
  };
  // As `npm start` runs it, from source (no build), with the repository's own development secrets file.
  start = spawnTs('scripts/start.ts', env);
  leftovers.push(start.pid!);
  await waitFor(async () => /\| ready/.test(start.output()), 90_000, 200)
    .catch((e) => { throw new Error(`${e.message}\n${start.output().slice(-3000)}`); });
  leftovers.push(...childrenOf(start.pid!));
}, 120_000);
afterAll(async () => {
  for (const pid of leftovers) if (alive(pid)) process.kill(pid, 'SIGKILL');
  const admin = new pg.Client({ connectionString: ADMIN_DB });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).catch(() => {});
  await admin.end();
});

function runBlock(block: string): Promise<{ code: number | null; out: string }> {
  const child = spawn('bash', ['-c', block], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out += c.toString()));
  const kill = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((resolve) => child.once('exit', (code) => {
    clearTimeout(kill);
    resolve({ code, out });
  }));
}

describe("the README's Try-it block", () => {
  it(`works ${RUNS} times in a row on one machine`, async () => {
    const block = tryItBlock(fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8'));
    const bookings = new Set<string>();
    for (let run = 1; run <= RUNS; run++) {
      const { code, out } = await runBlock(block);
      expect(code, `run ${run}:\n${out.slice(-4000)}`).toBe(0);
      const booking = out.match(/^BOOKING=(\d+)$/m)?.[1];
      expect(booking, `run ${run}`).toBeDefined();
      bookings.add(booking!);
      expect(out, `run ${run}`).toMatch(/"status":"CONFIRMED"/);
      expect(out, `run ${run}`).toMatch(/"refund":\{"amount":\d+,"status":"SUCCEEDED"\}/);
      expect(out, `run ${run}: the story`).toMatch(/ event +booking\.cancelled/);
      expect(out, `run ${run}: its events on Kafka`).toMatch(/all \d+ events of booking \d+|not on Kafka yet|Kafka not reachable/);
      expect(out, `run ${run}: the operator page`).toContain(`/admin/bookings/${booking}`);
    }
    expect(bookings.size).toBe(RUNS);
  }, 240_000); // 70–110 s on the shared machine; the margin is for its load

  it('stops at the first step that fails and says why, instead of cascading', async () => {
    // The API is not where the block looks: the first call fails, and nothing after it runs.
    const block = tryItBlock(fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8'));
    const child = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const c = spawn('bash', ['-c', block], { cwd: ROOT, env: { ...env, PORT: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      c.stdout.on('data', (d: Buffer) => (out += d.toString()));
      c.stderr.on('data', (d: Buffer) => (out += d.toString()));
      c.once('exit', (code) => resolve({ code, out }));
    });
    expect(child.code).not.toBe(0);
    expect(child.out).toMatch(/curl: \(7\)/); // could not connect
    expect(child.out).not.toMatch(/BOOKING=/);
  }, 60_000);
});
