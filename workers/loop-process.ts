import { parseConfig, type Config } from '../shared/config.js';
import { createDeps } from '../shared/runtime.js';
import { runProcess } from '../shared/process.js';
import type { Deps } from '../shared/usecases/deps.js';

/**
 * Entry point of a worker process made of PostgreSQL loops (expiry, refunds, notifications): its deps from the
 * parsed config, the loops `start` returns, and a graceful stop that ends them before closing the pools.
 */
export async function runLoopProcess(kind: string, start: (deps: Deps, config: Config) => { stop(): Promise<void> }): Promise<void> {
  await runProcess(kind, async () => {
    const config = parseConfig();
    const deps = await createDeps(config);
    const loops = start(deps, config);
    return async () => {
      await loops.stop();
      await deps.db.end();
      await deps.prepared.end();
    };
  });
}
