import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import path from 'node:path';

// The chaos run's own supervisor: every app process is a child it restarts when it dies (as `npm start` or a
// platform would, after RESTART_DELAY_MS), so a kill -9 is followed by a fresh process picking up the work.

const RESTART_DELAY_MS = 500;

export interface Proc {
  /** e.g. `expiry#2` */
  name: string;
  kind: string;
  pid: () => number | undefined;
  restarts: () => number;
  kill9: () => boolean;
  stop: () => Promise<void>;
}

export function supervise(root: string, logDir: string, kind: string, index: number, entry: string, env: Record<string, string>): Proc {
  const name = `${kind}#${index}`;
  const log: WriteStream = createWriteStream(path.join(logDir, `${kind}-${index}.log`), { flags: 'a' });
  let child: ChildProcess | null = null;
  let stopping = false;
  let restarts = 0;
  const start = () => {
    const c = spawn(process.execPath, ['--import', 'tsx', entry], { cwd: root, env: { ...env, PROC_NAME: name }, stdio: ['ignore', 'pipe', 'pipe'] });
    c.stdout!.pipe(log, { end: false });
    c.stderr!.pipe(log, { end: false });
    c.on('exit', (code, signal) => {
      log.write(`--- ${name} exited (${signal ?? code})\n`);
      if (child === c) child = null;
      if (stopping) return;
      restarts++;
      setTimeout(() => !stopping && start(), RESTART_DELAY_MS);
    });
    child = c;
  };
  start();
  return {
    name,
    kind,
    pid: () => child?.pid,
    restarts: () => restarts,
    kill9: () => Boolean(child?.kill('SIGKILL')),
    async stop() {
      stopping = true;
      const c = child;
      if (c && c.exitCode === null && c.signalCode === null) {
        const exited = new Promise((r) => c.once('exit', r));
        c.kill('SIGTERM');
        const force = setTimeout(() => c.kill('SIGKILL'), 15_000);
        await exited;
        clearTimeout(force);
      }
      log.end();
    },
  };
}
