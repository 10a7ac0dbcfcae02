import path from 'node:path';
import readline from 'node:readline';
import type { Readable } from 'node:stream';
import { spawn, type ChildProcess } from 'node:child_process';
import { parseConfig, ConfigError, type Config } from '../shared/config.js';
import { defaultSecretsFile, loadLocalSecrets, repoRoot, SECRET_NAMES } from '../shared/local-secrets.js';
import { migrate } from '../shared/db/migrate.js';
import { commandLine, readProcfile, supervisedProcesses, type ProcessSpec } from './procfile.js';
import { ensureLocalKafka, LOCAL_BROKER } from './local-kafka.js';

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

function loadConfig(): Config {
  try {
    if ((process.env.NODE_ENV || 'development') === 'development' && SECRET_NAMES.some((n) => !process.env[n])) {
      const file = process.env.LOCAL_SECRETS_FILE || defaultSecretsFile();
      if (loadLocalSecrets(file).created) say(`generated development secrets in ${file} (git-ignored; delete it to rotate)`);
    }
    return parseConfig();
  } catch (e) {
    warn(e instanceof ConfigError ? e.message : String(e));
    process.exit(2);
  }
}

const config = loadConfig();
await migrate(config.DATABASE_URL, () => {});

// KAFKA_BROKERS unset or empty: the local broker (started if need be); `none`: the pump publishes nothing (events wait).
const childEnv: NodeJS.ProcessEnv = { ...process.env };
let kafkaStarter: ChildProcess | null = null;
if (!process.env.KAFKA_BROKERS?.trim()) {
  childEnv.KAFKA_BROKERS = LOCAL_BROKER;
  kafkaStarter = await ensureLocalKafka(root, say);
  if (kafkaStarter) relayOutput('kafka', kafkaStarter);
}

const specs = supervisedProcesses(readProcfile(path.join(root, 'Procfile')), { externalPsp: Boolean(config.PSP_URL) });
const children = new Map<string, ChildProcess>();
let stopping = false;

function relayOutput(name: string, child: ChildProcess) {
  const prefix = `${name.padEnd(13)}| `;
  // Read both pipes to the end whatever happens to ours, so a child never blocks on a full pipe.
  const forward = (from: Readable | null, to: 'stdout' | 'stderr') => {
    if (from) readline.createInterface({ input: from, crlfDelay: Infinity }).on('line', (l) => write(to, `${prefix}${l}\n`));
  };
  forward(child.stdout, 'stdout');
  forward(child.stderr, 'stderr');
}

function run(spec: ProcessSpec, restarts = 0) {
  const { file, args } = commandLine(spec, fromSource);
  const startedAt = Date.now();
  const child = spawn(file, args, { cwd: root, env: { ...childEnv, PROC_NAME: spec.name, SUPERVISOR_PID: String(process.pid) }, stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
  relayOutput(spec.name, child);
  child.on('error', (err) => warn(`${spec.name} could not be started: ${err.message}`));
  child.on('exit', (code, signal) => {
    if (children.get(spec.name) === child) children.delete(spec.name);
    if (stopping) return;
    // A crash loop backs off (1 s doubling to 30 s); a process that ran a minute starts over at 1 s.
    const next = Date.now() - startedAt > 60_000 ? 0 : restarts + 1;
    const delay = Math.min(1000 * 2 ** Math.max(next - 1, 0), 30_000);
    warn(`${spec.name} exited (${signal ?? code}); restarting in ${delay / 1000} s`);
    setTimeout(() => !stopping && run(spec, next), delay).unref();
  });
  children.set(spec.name, child);
}

for (const spec of specs) run(spec);
say(`started: ${specs.map((s) => s.name).join(', ')}`);

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
