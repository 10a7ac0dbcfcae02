// N API processes (api/server.ts under tsx), each on its own port, and a rolling restart of them.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '../..');

export interface ApiProcess {
  name: string;
  port: number;
  child: ChildProcess;
}

/**
 * Starts one API on `port` with `env` (the whole configuration: nothing is inherited but PATH). One process per port
 * unless `env` says otherwise: the APIs behind HAProxy are the scale-out, and the faults aim at that process.
 */
export function spawnApi(name: string, port: number, env: Record<string, string>): ApiProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', 'api/server.ts'], {
    cwd: ROOT, env: { PATH: process.env.PATH!, API_WORKERS: '1', ...env, PORT: String(port), PROC_NAME: name }, stdio: ['ignore', 'ignore', 'inherit'],
  });
  return { name, port, child };
}

/** Resolves once the API answers /ready with 200; fails at once when `child` (the API's process) has exited. */
export async function waitReady(port: number, timeoutMs = 60_000, child?: ChildProcess): Promise<void> {
  const until = Date.now() + timeoutMs;
  let last = 'nothing listening';
  for (;;) {
    if (child && (child.exitCode !== null || child.signalCode !== null)) {
      throw new Error(`api on :${port} exited (${child.exitCode ?? child.signalCode}) before it was ready (last: ${last})`);
    }
    try {
      const r = await fetch(`http://127.0.0.1:${port}/ready`);
      if (r.status === 200) return;
      last = `${r.status} ${await r.text()}`;
    } catch {
      // not listening yet
    }
    if (Date.now() > until) throw new Error(`api on :${port} not ready within ${timeoutMs} ms (last: ${last})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** SIGTERM and wait for the exit: /ready turns 503 at once, the API serves SHUTDOWN_DELAY_S more, then drains. */
export async function stopApi(api: ApiProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (api.child.exitCode !== null || api.child.signalCode !== null) return;
  const exited = new Promise((r) => api.child.once('exit', r));
  api.child.kill(signal);
  await exited;
}

/**
 * Restarts every API one after the other: stop it (the balancer sees /ready at 503 and takes it out while it still
 * serves), start it again on the same port, and go on to the next once `inPool` says the balancer uses it again.
 */
export async function rollingRestart(
  apis: ApiProcess[], env: Record<string, string>, inPool: (name: string) => Promise<boolean>,
): Promise<void> {
  for (let i = 0; i < apis.length; i++) {
    const old = apis[i]!;
    await stopApi(old);
    apis[i] = spawnApi(old.name, old.port, env);
    await waitReady(old.port, 60_000, apis[i]!.child);
    for (let t = 0; !(await inPool(old.name)); t++) {
      if (t > 200) throw new Error(`${old.name} not back in the pool`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
