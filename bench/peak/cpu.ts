/**
 * CPU by process, two ways:
 *  - our sampler, every second from /proc: the system's own processes (named from the Procfile), the PostgreSQL
 *    backends connected to *this* database (other helpers' backends excluded), PostgreSQL's background processes,
 *    Redis, Kafka, this generator and pgbench; the bench's own checker backends are a separate group.
 *  - the shared tool `cpu-by-process SECONDS` over the steady window (every process on the machine; the
 *    official figure when the machine is quiet).
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type pg from 'pg';
import { ROOT, procCpuSeconds } from '../lib.js';

const TICK = 100; // USER_HZ

function cpuTicks(pid: number): number | null {
  const used = procCpuSeconds(pid);
  return used && (used.user + used.sys) * TICK;
}

function findPids(test: (cmd: string) => boolean): number[] {
  const out: number[] = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      if (test(readFileSync(`/proc/${e}/cmdline`, 'utf8').replaceAll('\0', ' '))) out.push(Number(e));
    } catch { /* gone */ }
  }
  return out;
}

export interface CpuSample {
  /** Date.now() at the end of the interval. */
  at: number;
  seconds: number;
  /** CPU seconds used in the interval, by group. */
  used: Record<string, number>;
}

/** What the samplers ask of their connection. */
export interface Queries {
  query<R extends pg.QueryResultRow>(sql: string, params?: unknown[]): Promise<pg.QueryResult<R>>;
}

/**
 * One connection shared by timers (the CPU sampler, the outbox series, the phase counters), its queries one after
 * another: pg queues a query sent to a busy client only with a deprecation warning, and pg 9 drops that.
 */
export function oneAtATime(c: pg.Client): Queries {
  let last: Promise<unknown> = Promise.resolve();
  return {
    query<R extends pg.QueryResultRow>(sql: string, params?: unknown[]) {
      const next = last.then(() => c.query<R>(sql, params));
      last = next.catch(() => {});
      return next;
    },
  };
}

export interface SamplerSources {
  /** The system's processes, pid → name. */
  system: () => Map<number, string>;
  /** Queries pg_stat_activity; a connection of the bench's own. */
  monitor: Queries;
  database: string;
  /** Backends the bench itself uses (checker, monitor): reported apart. */
  benchBackends: () => Set<number>;
  extra: () => Map<number, string>;
}

export class CpuSampler {
  readonly samples: CpuSample[] = [];
  private last = new Map<number, number>();
  private lastAt = Date.now();
  private timer: NodeJS.Timeout | null = null;
  private readonly redis = findPids((c) => c.startsWith('redis-server'));
  private readonly kafka = findPids((c) => c.includes('kafka.Kafka'));
  private busy = false;

  constructor(private readonly src: SamplerSources, private readonly everyMs = 1000) {}

  private async groups(): Promise<Map<number, string>> {
    const g = new Map<number, string>();
    for (const [pid, name] of this.src.system()) g.set(pid, ['npm', 'sh', 'supervisor'].includes(name) ? 'npm start' : name);
    const { rows } = await this.src.monitor.query<{ pid: number; datname: string | null; backend_type: string }>(
      'SELECT pid, datname, backend_type FROM pg_stat_activity');
    const mine = this.src.benchBackends();
    for (const r of rows) {
      if (mine.has(r.pid)) g.set(r.pid, 'bench checks (postgres)');
      else if (r.datname === this.src.database) g.set(r.pid, 'postgres');
      else if (r.datname === null && r.backend_type !== 'client backend') g.set(r.pid, 'postgres (background)');
    }
    const postmaster = Number(readFileSync(`/proc/${rows[0]?.pid ?? process.pid}/stat`, 'utf8').split(') ')[1]?.split(' ')[1]);
    if (rows.length && postmaster > 1) g.set(postmaster, 'postgres (background)');
    for (const pid of this.redis) g.set(pid, 'redis');
    for (const pid of this.kafka) g.set(pid, 'kafka');
    g.set(process.pid, 'load generator');
    for (const [pid, name] of this.src.extra()) g.set(pid, name);
    return g;
  }

  private async sample(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      const groups = await this.groups();
      const now = Date.now();
      const used: Record<string, number> = {};
      const next = new Map<number, number>();
      for (const [pid, name] of groups) {
        const t = cpuTicks(pid);
        if (t === null) continue;
        next.set(pid, t);
        const before = this.last.get(pid);
        // A process first seen now: count nothing for it this time (we do not know when it started).
        if (before !== undefined) used[name] = (used[name] ?? 0) + (t - before) / TICK;
      }
      this.samples.push({ at: now, seconds: (now - this.lastAt) / 1000, used });
      this.last = next;
      this.lastAt = now;
    } finally {
      this.busy = false;
    }
  }

  async start(): Promise<void> {
    await this.sample();
    this.samples.length = 0;
    this.timer = setInterval(() => void this.sample().catch(() => {}), this.everyMs);
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** CPU seconds by group between two Date.now() instants (samples ending inside the window). */
  window(from: number, to: number): { seconds: number; used: Record<string, number> } {
    const used: Record<string, number> = {};
    let seconds = 0;
    for (const s of this.samples) {
      if (s.at <= from || s.at > to) continue;
      seconds += s.seconds;
      for (const [k, v] of Object.entries(s.used)) used[k] = (used[k] ?? 0) + v;
    }
    return { seconds, used };
  }
}

/** Where the shared tool is: next to the checkout (../shared/tools), or CPU_BY_PROCESS. */
export function cpuToolPath(): string | null {
  const candidates = [process.env.CPU_BY_PROCESS, path.resolve(ROOT, '../shared/tools/cpu-by-process'), '/work/shared/tools/cpu-by-process'];
  return candidates.find((p): p is string => !!p && existsSync(p)) ?? null;
}

export interface ToolResult {
  seconds: number;
  /** cores by group, as the tool prints them. */
  cores: Record<string, number>;
  totalCores: number;
  raw: string;
}

/** Runs `cpu-by-process seconds` and parses its lines ("  0.42 cores  name"). */
export function runCpuTool(seconds: number): Promise<ToolResult | null> {
  const tool = cpuToolPath();
  if (!tool) return Promise.resolve(null);
  return new Promise((resolve) => {
    const child = spawn(tool, [String(seconds)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
    child.on('error', () => resolve(null));
    child.on('exit', () => {
      const cores: Record<string, number> = {};
      let total = NaN;
      let secs = seconds;
      for (const line of out.split('\n')) {
        const all = /^\s*([\d.]+) cores in all over ([\d.]+) s/.exec(line);
        if (all) { total = Number(all[1]); secs = Number(all[2]); continue; }
        const m = /^\s*([\d.]+) cores\s+(.+?)\s*$/.exec(line);
        if (m) cores[m[2]!] = Number(m[1]);
      }
      resolve({ seconds: secs, cores, totalCores: total, raw: out.trim() });
    });
  });
}
