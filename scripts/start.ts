import path from 'node:path';
import { setPriority } from 'node:os';
import type { Readable } from 'node:stream';
import { spawn, type ChildProcess } from 'node:child_process';
import { parseConfig, ConfigError, type Config } from '../shared/config.js';
import { defaultSecretsFile, loadLocalSecrets, repoRoot, SECRET_NAMES } from '../shared/local-secrets.js';
import { migrate, probeDatabase, type MigrationRun } from '../shared/db/migrate.js';
import { probeRedis } from '../shared/redis-probe.js';
import { commandLine, readProcfile, supervisedProcesses, type ProcessSpec } from './procfile.js';
import { answers, ensureLocalKafka, LOCAL_BROKER } from './local-kafka.js';
import { hostPortOf, portClaims, portProblems, redactUrl } from './preflight.js';
import { summaryLines } from './start-summary.js';
import { backoffMs } from '../shared/domain/backoff.js';
import { prefixLines } from './prefix-lines.js';

// `npm start`: migrations first, then one child per Procfile line (not `release`; `psp` only without
// PSP_URL), restarting one that dies and forwarding SIGTERM so each finishes its work before exiting.
// Children watch an IPC channel to this process and stop when it goes, even if it was killed with -9
// (shared/runtime.ts, keyed on SUPERVISOR_PID).
const root = repoRoot();
const fromSource = import.meta.url.endsWith('.ts');

// A closed terminal or pipe (EPIPE) must not take the supervisor down: it keeps supervising, silently.
const open = { stdout: true, stderr: true };
process.stdout.on('error', () => (open.stdout = false));
process.stderr.on('error', () => (open.stderr = false));
function write(to: 'stdout' | 'stderr', text: string) {
  if (!open[to]) return;
  try {
    process[to].write(text);
  } catch {
    open[to] = false;
  }
}
const say = (line: string) => write('stdout', `${'start'.padEnd(13)}| ${line}\n`);
const warn = (line: string) => write('stderr', `${'start'.padEnd(13)}| ${line}\n`);

/** Stops before anything started: the reason, in words that name what to change, and no stack trace. */
function refuse(lines: string[]): never {
  for (const l of lines) warn(l);
  warn('nothing was started');
  process.exit(2);
}

let secretsFile: string | null = null;
function loadConfig(): Config {
  try {
    if ((process.env.NODE_ENV || 'development') === 'development' && SECRET_NAMES.some((n) => !process.env[n])) {
      const file = process.env.LOCAL_SECRETS_FILE || defaultSecretsFile();
      if (loadLocalSecrets(file).created) say(`generated development secrets in ${file} (git-ignored; delete it to rotate)`);
      secretsFile = file;
    }
    return parseConfig();
  } catch (e) {
    refuse([e instanceof ConfigError ? e.message : String(e)]);
  }
}

const config = loadConfig();
const specs = supervisedProcesses(readProcfile(path.join(root, 'Procfile')), { externalPsp: Boolean(config.PSP_URL) });

// Refused at once, before any process starts: a busy port (a second `npm start`), PostgreSQL or Redis unreachable.
const busy = await portProblems(portClaims(config, specs));
if (busy.length) refuse(busy);
const unreachable = async (what: string, variable: string, url: string, port: number, reason: Promise<string | null>) => {
  const why = await reason;
  return why && `cannot reach ${what} at ${hostPortOf(url, port)}: ${why}. Start ${what} there, or set ${variable} (now ${redactUrl(url)})`;
};
// With REDIS_CLUSTER_NODES the first node named must answer (any node answers PING; the client finds the rest).
const redisProbe = (c: Config) => {
  const node = c.redisClusterNodes[0];
  if (!node) return unreachable('Redis', 'REDIS_URL', c.REDIS_URL, 6379, probeRedis(c.REDIS_URL));
  const url = `redis://${node.host}:${node.port}`;
  return unreachable('Redis', 'REDIS_CLUSTER_NODES', url, 6379, probeRedis(url));
};
const down = (await Promise.all([
  unreachable('PostgreSQL', 'DATABASE_URL', config.DATABASE_URL, 5432, probeDatabase(config.DATABASE_URL)),
  redisProbe(config),
])).filter((l): l is string => Boolean(l));
if (down.length) refuse(down);

let migrations: MigrationRun;
try {
  migrations = await migrate(config.DATABASE_URL, () => {});
} catch (e) {
  refuse([`migrations failed on ${redactUrl(config.DATABASE_URL)} (DATABASE_URL): ${(e as Error).message}`]);
}

// KAFKA_BROKERS unset or empty: the local broker (started if need be); `none`: the pump publishes nothing (events wait).
const childEnv: NodeJS.ProcessEnv = { ...process.env };
let kafkaStarter: ChildProcess | null = null;
let kafkaState = '';
let summarised = false;
const brokersGiven = process.env.KAFKA_BROKERS?.trim();
if (!brokersGiven) {
  childEnv.KAFKA_BROKERS = LOCAL_BROKER;
  // Its first word goes into the summary; a later one (kafka.sh gave up) is printed when it comes.
  kafkaStarter = await ensureLocalKafka(root, (line) => (summarised ? say(`kafka: ${line}`) : (kafkaState = line)));
  if (kafkaStarter) relayOutput('kafka', kafkaStarter);
} else if (brokersGiven === 'none') {
  kafkaState = 'none (KAFKA_BROKERS=none): events wait in the outbox, nothing is lost';
} else {
  const [host, port] = config.kafkaBrokers[0]!.split(':');
  const up = await answers(host!, Number(port ?? 9092));
  kafkaState = `${config.kafkaBrokers.join(',')} (KAFKA_BROKERS)${up ? '' : ': does not answer yet; events wait in the outbox until it does'}`;
}
const children = new Map<string, ChildProcess>();
let stopping = false;

function relayOutput(name: string, child: ChildProcess) {
  const prefix = `${name.padEnd(13)}| `;
  // Read both pipes to the end whatever happens to ours, so a child never blocks on a full pipe.
  const forward = (from: Readable | null, to: 'stdout' | 'stderr') => {
    if (!from) return;
    const lines = prefixLines(prefix, (text) => write(to, text));
    from.on('data', (chunk: Buffer) => lines.push(chunk));
    from.on('end', () => lines.end());
  };
  forward(child.stdout, 'stdout');
  forward(child.stderr, 'stderr');
}

/**
 * What requests wait for: the API, and the sandbox provider, which stands in for an outside service that the API's
 * `/pay` calls (niced, it was still starting when the API was ready).
 */
const FOREGROUND = new Set(['api', 'psp']);

function run(spec: ProcessSpec, restarts = 0) {
  const { file, args } = commandLine(spec, fromSource);
  const startedAt = Date.now();
  const child = spawn(file, args, { cwd: root, env: { ...childEnv, PROC_NAME: spec.name, SUPERVISOR_PID: String(process.pid) }, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
  relayOutput(spec.name, child);
  if (!FOREGROUND.has(spec.name)) runInBackground(spec.name, child);
  child.on('error', (err) => warn(`${spec.name} could not be started: ${err.message}`));
  child.on('exit', (code, signal) => {
    if (children.get(spec.name) === child) children.delete(spec.name);
    if (stopping) return;
    // A crash loop backs off (1 s doubling to 30 s); a process that ran a minute starts over at 1 s.
    const next = Date.now() - startedAt > 60_000 ? 0 : restarts + 1;
    const delay = backoffMs(next, { baseMs: 1000, capMs: 30_000 });
    warn(`${spec.name} exited (${signal ?? code}); restarting in ${delay / 1000} s`);
    setTimeout(() => !stopping && run(spec, next), delay).unref();
  });
  children.set(spec.name, child);
}

/**
 * Every other process runs at BACKGROUND_NICE: on cores they share, a request waiting for the API is served
 * before a worker's job or the pump's pass, whose work has seconds of slack and catches up when the peak passes (an
 * overdue job is run as soon as the worker gets the core; nothing is dropped).
 */
function runInBackground(name: string, child: ChildProcess) {
  if (config.BACKGROUND_NICE === 0 || child.pid === undefined) return;
  try {
    setPriority(child.pid, config.BACKGROUND_NICE);
  } catch (e) {
    warn(`${name}: could not lower its priority (${(e as Error).message}); it runs at the API's`);
  }
}

for (const spec of specs) run(spec);
say(`started: ${specs.map((s) => s.name).join(', ')}`);
for (const line of summaryLines({ config, migrations: migrations!, kafka: kafkaState, secretsFile, sandbox: specs.some((s) => s.name === 'psp') })) say(line);
summarised = true;
void announceReady();

/** One line once the api answers /ready (or a warning after a minute), so a newcomer knows when to go on. */
async function announceReady() {
  const url = `http://127.0.0.1:${config.PORT}/ready`;
  for (const t0 = Date.now(); !stopping && Date.now() - t0 < 60_000; await new Promise((r) => setTimeout(r, 250).unref())) {
    const status = await fetch(url, { signal: AbortSignal.timeout(2000) }).then((r) => r.status, () => 0);
    if (status === 200) return say(`ready: http://127.0.0.1:${config.PORT} answers /ready (Ctrl-C stops everything)`);
  }
  if (!stopping) warn(`the api does not answer ${url} after 60 s: see its lines above`);
}

async function stop() {
  if (stopping) return;
  stopping = true;
  kafkaStarter?.kill('SIGTERM');
  const exits = [...children.values()].map((c) => new Promise((r) => c.once('exit', r)));
  for (const c of children.values()) c.kill('SIGTERM');
  // Children force their own exit after 25 s; this is the backstop.
  const force = setTimeout(() => {
    for (const c of children.values()) c.kill('SIGKILL');
  }, 30_000);
  await Promise.all(exits);
  clearTimeout(force);
  process.exit(0);
}
process.on('SIGTERM', () => void stop());
process.on('SIGINT', () => void stop());
