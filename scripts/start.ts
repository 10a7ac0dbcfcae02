import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseConfig, ConfigError } from '../shared/config.js';
import { migrate } from '../shared/db/migrate.js';

// Runs every process of the Procfile under one supervisor: migrations first, then all processes,
// restarting one that dies, and forwarding SIGTERM so each finishes its work before exiting.
const here = path.dirname(fileURLToPath(import.meta.url));
const dist = path.resolve(here, '..');

let config;
try {
  config = parseConfig();
} catch (e) {
  if (e instanceof ConfigError) {
    console.error(e.message);
    process.exit(2);
  }
  throw e;
}

await migrate(config.DATABASE_URL, () => {});

const processes: Record<string, string> = {
  api: 'api/server.js',
  expiry: 'workers/expiry.js',
  refunds: 'workers/refunds.js',
  notifications: 'workers/notifications.js',
  maintenance: 'workers/maintenance.js',
  dispatcher: 'workers/dispatcher.js',
  relay: 'workers/relay.js',
  dashboard: 'dashboards/server.js',
};
if (!config.PSP_URL) processes.psp = 'sandbox/main.js';

const children = new Map<string, ChildProcess>();
let stopping = false;

function run(name: string, file: string) {
  const child = spawn(process.execPath, ['--enable-source-maps', path.join(dist, file)], {
    env: { ...process.env, PROC_NAME: name },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const prefix = (chunk: Buffer, out: NodeJS.WriteStream) => {
    for (const line of chunk.toString().split('\n')) if (line) out.write(`${name.padEnd(13)}| ${line}\n`);
  };
  child.stdout!.on('data', (c: Buffer) => prefix(c, process.stdout));
  child.stderr!.on('data', (c: Buffer) => prefix(c, process.stderr));
  child.on('exit', (code, signal) => {
    children.delete(name);
    if (stopping) return;
    console.error(`${name} exited (${signal ?? code}); restarting in 1 s`);
    setTimeout(() => !stopping && run(name, file), 1000).unref();
  });
  children.set(name, child);
}

for (const [name, file] of Object.entries(processes)) run(name, file);
console.log(`started: ${Object.keys(processes).join(', ')}`);

const stop = async (signal: NodeJS.Signals) => {
  if (stopping) return;
  stopping = true;
  const exits = [...children.values()].map((c) => new Promise((r) => c.once('exit', r)));
  for (const c of children.values()) c.kill(signal === 'SIGINT' ? 'SIGTERM' : signal);
  const force = setTimeout(() => {
    for (const c of children.values()) c.kill('SIGKILL');
  }, 20_000);
  await Promise.all(exits);
  clearTimeout(force);
  process.exit(0);
};
process.on('SIGTERM', () => void stop('SIGTERM'));
process.on('SIGINT', () => void stop('SIGINT'));
