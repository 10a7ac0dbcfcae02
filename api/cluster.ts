import cluster from 'node:cluster';
import { runProcess } from '../shared/process.js';
import { logger } from '../shared/logger.js';

/**
 * API_WORKERS > 1: this process forks that many API workers sharing the port (node:cluster hands each new
 * connection to the next worker; a keep-alive connection stays with its worker), restarts one that dies, and
 * on SIGTERM stops them all — each finishes its requests as a single API process does. One Node thread tops out
 * near one core; at the peak (3,000 searches/s plus holds) the API needs more than that on a 2-core machine.
 * Each worker keeps its own search indexes (tens of MB, a few small queries a second).
 */
export async function runApiWorkers(n: number): Promise<void> {
  await runProcess('api', async () => {
    let stopping = false;
    const fork = () => {
      // A worker's supervisor is this process (shared/supervision.ts): with the supervisor's pid inherited from
      // `npm start`, a worker (whose parent is this process) took itself for orphaned and exited at once.
      const w = cluster.fork(process.env.SUPERVISOR_PID ? { SUPERVISOR_PID: String(process.pid) } : {});
      w.on('exit', (code, signal) => {
        if (stopping) return;
        logger.warn({ code, signal }, 'api worker exited; starting another in 1 s');
        setTimeout(() => !stopping && fork(), 1000).unref();
      });
    };
    for (let i = 0; i < n; i++) fork();
    return async () => {
      stopping = true;
      const alive = Object.values(cluster.workers ?? {}).filter((w) => w !== undefined);
      await Promise.all(alive.map((w) => new Promise<void>((resolve) => {
        w.once('exit', () => resolve());
        w.process.kill('SIGTERM');
      })));
    };
  });
}
