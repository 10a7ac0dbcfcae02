/**
 * The system under test: `npm start` as a child in its own process group, on this bench's ports, database,
 * Redis db / prefixes and Kafka topic prefix. Processes are named from the Procfile (and the PROC_NAME the
 * supervisor gives each child), never from hard-coded entry paths.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { ROOT, sleep } from '../lib.js';

export interface SystemEnv {
  databaseUrl: string;
  port: number;
  dashboardPort: number;
  pspPort: number;
  redisUrl: string;
  prefix: string;
  kafkaPrefix: string;
  kafkaBrokers: string;
  jwtSecret: string;
  searchCacheTtlS: number;
  extra?: Record<string, string>;
}

export interface RunningSystem {
  url: string;
  pid: number;
  logFile: string;
  /** pid → process name (Procfile name, or npm / supervisor) for every live process of the tree. */
  processes(): Map<number, string>;
  stop(): Promise<void>;
}

/** Procfile entries: name → command. */
export function procfile(): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of readFileSync(path.join(ROOT, 'Procfile'), 'utf8').split('\n')) {
    const m = /^([\w-]+):\s*(.+)$/.exec(line.trim());
    if (m) out.set(m[1]!, m[2]!);
  }
  return out;
}

function readProc(pid: number): { ppid: number; cmd: string; procName?: string } | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
    let procName: string | undefined;
    try {
      procName = /(?:^|\0)PROC_NAME=([^\0]*)/.exec(readFileSync(`/proc/${pid}/environ`, 'utf8'))?.[1];
    } catch { /* not ours to read */ }
    return { ppid, cmd, procName };
  } catch {
    return null;
  }
}

/** Every descendant of `root` (and root itself), named. */
export function processTree(root: number, names: Map<string, string>): Map<number, string> {
  const all = new Map<number, { ppid: number; cmd: string; procName?: string }>();
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    const p = readProc(Number(e));
    if (p) all.set(Number(e), p);
  }
  const tree = new Map<number, string>();
  const scripts = [...names].map(([name, cmd]) => [name, cmd.split(/\s+/).find((t) => /\.(js|ts|mjs)$/.test(t))] as const);
  const nameOf = (p: { cmd: string; procName?: string }) => {
    if (p.procName) return p.procName;
    const hit = scripts.find(([, script]) => script && p.cmd.includes(script));
    if (hit) return hit[0];
    if (/\bnpm\b/.test(p.cmd)) return 'npm';
    if (/^(\/bin\/)?sh\b/.test(p.cmd)) return 'sh';
    return 'supervisor';
  };
  const visit = (pid: number) => {
    const p = all.get(pid);
    if (!p) return;
    tree.set(pid, nameOf(p));
    for (const [child, c] of all) if (c.ppid === pid) visit(child);
  };
  visit(root);
  return tree;
}

const portOpen = (port: number) => new Promise<boolean>((resolve) => {
  const s = net.connect(port, '127.0.0.1');
  s.once('connect', () => { s.destroy(); resolve(true); });
  s.once('error', () => resolve(false));
});

export async function startSystem(e: SystemEnv, logFile: string): Promise<RunningSystem> {
  for (const port of [e.port, e.dashboardPort, e.pspPort]) {
    if (await portOpen(port)) throw new Error(`port ${port} is already in use (a previous run left running?)`);
  }
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    NODE_ENV: 'production', NOTIFY_WEBHOOK_URL: 'none', LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
    DATABASE_URL: e.databaseUrl, REDIS_URL: e.redisUrl, QUEUE_PREFIX: e.prefix.replace(/\W/g, ''), REDIS_KEY_PREFIX: `${e.prefix}`,
    KAFKA_BROKERS: e.kafkaBrokers, KAFKA_TOPIC_PREFIX: e.kafkaPrefix,
    PORT: String(e.port), DASHBOARD_PORT: String(e.dashboardPort), PSP_PORT: String(e.pspPort), PSP_SANDBOX: 'true',
    PUBLIC_BASE_URL: `http://127.0.0.1:${e.port}`,
    JWT_SECRET: e.jwtSecret, PAYMENT_WEBHOOK_SECRET: `${e.jwtSecret}-webhook`, PSP_API_KEY: `${e.jwtSecret}-psp`,
    DASHBOARD_PASSWORD: `${e.jwtSecret}-dashboard`, SEARCH_CACHE_TTL_S: String(e.searchCacheTtlS),
    ...e.extra,
  };
  const log = createWriteStream(logFile);
  // --ignore-scripts: skip prestart's build (done once by the bench); `npm start` itself still runs.
  const child: ChildProcess = spawn('npm', ['start', '--ignore-scripts'], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout!.pipe(log);
  child.stderr!.pipe(log);
  let exited = false;
  child.once('exit', () => { exited = true; });
  const url = `http://127.0.0.1:${e.port}`;
  const names = procfile();
  const expected = [...names.keys()].filter((n) => n !== 'release' && !(n === 'psp' && e.extra?.PSP_URL));
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (exited) throw new Error(`npm start exited; see ${logFile}:\n${readFileSync(logFile, 'utf8').slice(-3000)}`);
    const ready = await fetch(`${url}/ready`).then((r) => r.status === 200, () => false);
    const running = new Set(processTree(child.pid!, names).values());
    if (ready && expected.every((n) => running.has(n))) break;
    if (Date.now() > deadline) {
      // Not left running for the next run to trip over (its ports would be taken).
      try { process.kill(-child.pid!, 'SIGKILL'); } catch { /* gone */ }
      throw new Error(`system not ready after 60 s (running: ${[...running].join(', ')}); see ${logFile}`);
    }
    await sleep(250);
  }
  return {
    url, pid: child.pid!, logFile,
    processes: () => processTree(child.pid!, names),
    async stop() {
      if (exited) return;
      const gone = new Promise<void>((r) => child.once('exit', () => r()));
      try { process.kill(-child.pid!, 'SIGTERM'); } catch { /* already gone */ }
      const t = setTimeout(() => { try { process.kill(-child.pid!, 'SIGKILL'); } catch { /* gone */ } }, 30_000);
      await gone;
      clearTimeout(t);
      // npm may exit before its grandchildren: make sure the whole group is gone.
      for (let i = 0; i < 100; i++) {
        try { process.kill(-child.pid!, 0); } catch { break; }
        await sleep(100);
      }
    },
  };
}
