/**
 * Shared bits of the bench scripts: fresh databases, JWTs, env knobs, percentiles and printing.
 * Benches are not tests: they print figures and PASS/MISS against the targets, and always exit 0
 * unless something broke (set BENCH_STRICT=1 to exit 1 on a MISS).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { createWriteStream, existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import os from 'node:os';
import pg from 'pg';
import { migrate } from '../shared/db/migrate.js';
import type { CommonQueryMethods } from '../shared/db/pool.js';
import { freePort } from '../scripts/free-port.js';
export { freePort };

export const PG_BASE = process.env.BENCH_PG_BASE ?? 'postgres://postgres@127.0.0.1:5432';
export const ADMIN_DB = `${PG_BASE}/postgres`;

// ---------------------------------------------------------------- env

export function envInt(name: string, def: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return def;
  const n = Number(raw);
  if (!Number.isFinite(n)) throw new Error(`${name} must be a number (got ${JSON.stringify(raw)})`);
  return n;
}

export function envStr(name: string, def: string): string {
  const raw = process.env[name];
  return raw === undefined || raw === '' ? def : raw;
}

export function envBool(name: string, def: boolean): boolean {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return def;
  return !['0', 'false', 'no', 'off'].includes(raw.toLowerCase());
}

/** A short unique tag for database names, queue/key/topic prefixes. */
export function runTag(): string {
  return `${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
}

/** What a production-mode child requires: every secret (signing ones ≥ 32 characters), the sandbox PSP. */
export function benchSecrets(tag: string): Record<string, string> {
  const pad = randomBytes(16).toString('hex');
  return {
    JWT_SECRET: `bench-jwt-${tag}-${pad}`, PAYMENT_WEBHOOK_SECRET: `bench-wh-${tag}-${pad}`,
    PSP_API_KEY: `bench-psp-${tag}`, DASHBOARD_PASSWORD: `bench-dash-${tag}`, PSP_SANDBOX: 'true',
  };
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

// ---------------------------------------------------------------- databases

export interface FreshDb {
  name: string;
  url: string;
  drop(): Promise<void>;
}

/** Creates `bench_<tag>` and applies every migration (the same `migrate(url)` the harness uses). */
export async function freshDb(tag = runTag()): Promise<FreshDb> {
  const name = `bench_${tag}`.toLowerCase();
  const url = `${PG_BASE}/${name}`;
  await migrate(url);
  let dropped = false;
  return {
    name,
    url,
    async drop() {
      if (dropped || envBool('KEEP_DB', false)) return;
      dropped = true;
      const admin = new pg.Client({ connectionString: ADMIN_DB });
      await admin.connect();
      try {
        await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
      } finally {
        await admin.end();
      }
    },
  };
}

/** Runs cleanups once on normal exit paths and on SIGINT/SIGTERM (Ctrl-C mid-run still drops the DB). */
export function cleanupOnSignal(cleanup: () => Promise<void>): () => Promise<void> {
  let done: Promise<void> | null = null;
  const once = () => (done ??= cleanup().catch((e) => console.error('cleanup failed:', e)));
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      console.error(`\n${sig}: cleaning up`);
      void once().then(() => process.exit(130));
    });
  }
  process.once('uncaughtException', (err) => {
    console.error('uncaught exception:', err);
    void once().then(() => process.exit(1));
  });
  return once;
}

// ---------------------------------------------------------------- auth

const b64url = (s: string | Buffer) => Buffer.from(s).toString('base64url');
const JWT_HEADER = b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));

/** HS256 JWT signed with node:crypto, independent of the code under test. */
export function signJwt(secret: string, claims: Record<string, unknown>, expiresInS = 3600): string {
  const now = Math.floor(Date.now() / 1000);
  const payload = b64url(JSON.stringify({ iat: now, exp: now + expiresInS, ...claims }));
  const sig = createHmac('sha256', secret).update(`${JWT_HEADER}.${payload}`).digest('base64url');
  return `${JWT_HEADER}.${payload}.${sig}`;
}

// ---------------------------------------------------------------- misc


// ---------------------------------------------------------------- statistics

/** Nearest-rank percentile (p in 0..100) of an ascending-sorted array; NaN when empty. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

export interface Summary {
  n: number;
  min: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

export function summarize(values: ArrayLike<number>): Summary {
  const a = Float64Array.from(values as ArrayLike<number>).sort();
  let sum = 0;
  for (const v of a) sum += v;
  return {
    n: a.length,
    min: a.length ? a[0]! : NaN,
    p50: percentile(a, 50),
    p90: percentile(a, 90),
    p99: percentile(a, 99),
    max: a.length ? a[a.length - 1]! : NaN,
    mean: a.length ? sum / a.length : NaN,
  };
}

// ---------------------------------------------------------------- printing

export function fmt(v: number | string | null | undefined, digits = 1): string {
  if (v === null || v === undefined) return '-';
  if (typeof v === 'string') return v;
  if (!Number.isFinite(v)) return '-';
  if (Number.isInteger(v) || digits === 0) return Math.round(v).toLocaleString('en-US');
  return Math.abs(v) >= 1000 ? v.toLocaleString('en-US', { maximumFractionDigits: digits }) : v.toFixed(digits);
}

/** Prints rows as an aligned text table; the first row is the header. */
export function printTable(title: string, rows: (string | number | null | undefined)[][]): void {
  const cells = rows.map((r) => r.map((c) => (typeof c === 'number' ? fmt(c) : (c ?? '-'))));
  const widths = cells[0]!.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  console.log(`\n== ${title}`);
  console.log(line(cells[0]!));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of cells.slice(1)) console.log(line(r));
}

const verdicts: { label: string; pass: boolean }[] = [];

/** "PASS (x ≤ target)" / "MISS (...)"; remembered for the final verdict line. */
export function verdict(label: string, value: number, op: '<=' | '>=', target: number, unit = ''): string {
  const pass = Number.isFinite(value) && (op === '<=' ? value <= target : value >= target);
  verdicts.push({ label, pass });
  return `${pass ? 'PASS' : 'MISS'} (${label} ${fmt(value, Math.abs(value) >= 100 ? 0 : 2)}${unit} ${op === '<=' ? '≤' : '≥'} ${fmt(target, 2)}${unit})`;
}

export function finalVerdict(): void {
  const missed = verdicts.filter((v) => !v.pass);
  console.log(`\nverdict: ${missed.length === 0 ? 'all targets PASS' : `MISS on ${missed.map((m) => m.label).join(', ')}`}`);
  if (missed.length && envBool('BENCH_STRICT', false)) process.exitCode = 1;
}

/** One line about the machine, so figures from a busy box are recognisable as such. */
export function machineNote(): string {
  const load = os.loadavg().map((l) => l.toFixed(2)).join(' ');
  return `node ${process.version}, ${os.cpus().length} cpus, loadavg ${load}`;
}

// ---------------------------------------------------------------- API child process

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export interface ApiProcess {
  url: string;
  child: ChildProcess;
  logFile: string;
  /** CPU seconds the API process and its live children (API_WORKERS > 1: the cluster's workers) have used so far, from /proc. */
  cpuSeconds(): { user: number; sys: number };
  stop(): Promise<void>;
}

/** CPU seconds a process has used so far (utime, stime from /proc; USER_HZ 100), or null when it is gone. */
export function procCpuSeconds(pid: number): { user: number; sys: number } | null {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return { user: Number(f[11]) / 100, sys: Number(f[12]) / 100 };
  } catch {
    return null;
  }
}

/** Starts the API (a built .js, or a .ts through tsx) on a free port and waits for /ready. */
export async function startApiProcess(
  entry: string,
  env: Record<string, string>,
  logFile: string,
  nodeArgs: string[] = [],
): Promise<ApiProcess> {
  const port = await freePort();
  const log = createWriteStream(logFile);
  const file = path.resolve(ROOT, entry);
  const args = [...nodeArgs, ...(entry.endsWith('.ts') ? ['--import', 'tsx'] : []), file];
  const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env, PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout!.pipe(log);
  child.stderr!.pipe(log);
  let exited = false;
  child.on('exit', () => { exited = true; });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (exited) throw new Error(`API exited during start; see ${logFile}:\n${readFileSync(logFile, 'utf8').slice(-2000)}`);
    if (await fetch(`${url}/ready`).then((r) => r.status === 200, () => false)) break;
    if (Date.now() > deadline) throw new Error(`API not ready after 30 s; see ${logFile}`);
    await sleep(200);
  }
  return {
    url, child, logFile,
    cpuSeconds() {
      try {
        const children = readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
        let user = 0;
        let sys = 0;
        for (const pid of [child.pid!, ...children.map(Number)]) {
          const used = procCpuSeconds(pid); // null: a worker that exited since the list was read
          user += used?.user ?? 0;
          sys += used?.sys ?? 0;
        }
        return { user, sys };
      } catch {
        return { user: NaN, sys: NaN };
      }
    },
    async stop() {
      if (exited) return;
      const gone = new Promise<void>((r) => child.once('exit', () => r()));
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await gone;
      clearTimeout(t);
    },
  };
}

// ---------------------------------------------------------------- product SQL

/**
 * The SQL text ($1, $2, …) and values a product query function sends through slonik, captured without a database:
 * benches replay it with plain pg (raw runs, EXPLAIN) so they measure exactly what the product runs. The fake
 * connection answers every method; `row` is what single-row methods return (for functions that read a result).
 */
export async function captureSql(fn: (db: CommonQueryMethods) => Promise<unknown>, row: Record<string, unknown> = { id: 1 }): Promise<{ text: string; values: unknown[] }> {
  let q: { sql: string; values: readonly unknown[] } | undefined;
  const grab = (result: unknown) => async (query: { sql: string; values: readonly unknown[] }) => {
    q = query;
    return result;
  };
  const fake = {
    any: grab([]), many: grab([row]), one: grab(row), maybeOne: grab(row), oneFirst: grab(Object.values(row)[0]),
    maybeOneFirst: grab(Object.values(row)[0]), anyFirst: grab([]), exists: grab(false),
    query: grab({ rows: [row], rowCount: 1 }),
  } as unknown as CommonQueryMethods;
  await fn(fake);
  if (!q) throw new Error('captureSql: the function sent no query');
  return { text: q.sql.replace(/\$slonik_(\d+)/g, '$$$1'), values: [...q.values] };
}

// ---------------------------------------------------------------- build

function newestMtime(dir: string, ext: string): number {
  if (!existsSync(dir)) return 0;
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) newest = Math.max(newest, newestMtime(p, ext));
    else if (e.name.endsWith(ext)) newest = Math.max(newest, statSync(p).mtimeMs);
  }
  return newest;
}

/**
 * `npm run build` when dist is missing or older than the sources the build compiles (tsconfig.build.json's
 * include list, so new top-level folders count). mode: auto (default), 1 (always), 0 (never).
 */
export function ensureBuild(mode = 'auto'): void {
  const include = (JSON.parse(readFileSync(path.join(ROOT, 'tsconfig.build.json'), 'utf8')) as { include: string[] }).include;
  const built = Math.min(...include.map((d) => newestMtime(path.join(ROOT, 'dist', d), '.js')));
  const src = Math.max(...include.map((d) => newestMtime(path.join(ROOT, d), '.ts')));
  const stale = built < src;
  if (mode === '0' || (mode === 'auto' && !stale)) {
    if (!built) throw new Error('dist is missing and BUILD=0');
    console.log(`build: ${stale ? 'dist is OLDER than the sources (BUILD=0, using it anyway)' : 'dist is up to date'}`);
    return;
  }
  console.log(`build: ${built ? 'dist is stale' : 'dist is missing'}; running npm run build ...`);
  const r = spawnSync('npm', ['run', '-s', 'build'], { cwd: ROOT, stdio: 'inherit' });
  if (r.status !== 0) {
    // tsc still emits on type errors (someone may be mid-edit): carry on when something was emitted.
    if (!existsSync(path.join(ROOT, 'dist'))) throw new Error('npm run build failed and dist is missing');
    console.warn('build: npm run build reported errors; using the emitted dist anyway');
  }
}

/**
 * The generator runs before the system under test on the cores they share (nice -10, once the system has started,
 * so its processes keep their own priority): latency is counted from each request's due time, and a generator
 * waiting for a core sends late and books its own wait as the server's. In one mixed phase, the generator at the
 * system's priority put searches at p50 4.8 s; at -10, 23 ms (docs/benchmarks.md). Its CPU is the same either way.
 */
export function generatorFirst(): string {
  try {
    os.setPriority(-10);
    return 'generator: nice -10 (scheduled before the system under test)';
  } catch (e) {
    return `generator: at the system's priority (${String(e)}); its own scheduling delays count in the latencies`;
  }
}
