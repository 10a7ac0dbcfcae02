import { purgeIdempotencyKeys } from '../shared/usecases/idempotency.js';
import { purgeExpiredQuotes } from '../shared/usecases/quotes.js';
import { isEntry, runProcess } from '../shared/process.js';
import { parseConfig } from '../shared/config.js';
import { createDeps } from '../shared/runtime.js';
import { closeQueues, openQueues, schedulesOf, upsertSchedule } from '../shared/queues/queues.js';
import { MAINTENANCE_QUEUE } from '../shared/queues/registry.js';
import { startWorker, type WorkerDefinition, type WorkerDeps } from './runner.js';
import { startHousekeeping } from './housekeeping.js';

/** Housekeeping jobs that run on a schedule (see SCHEDULES in the queue registry). */
export const maintenanceWorker: WorkerDefinition<typeof MAINTENANCE_QUEUE> = {
  queue: MAINTENANCE_QUEUE,
  concurrency: 1,
  async processor(deps, data) {
    switch (data.task) {
      case 'purge-idempotency-keys':
        return { purged: await purgeIdempotencyKeys(deps) };
      case 'purge-quotes':
        return { purged: await purgeExpiredQuotes(deps) };
    }
  },
};

/**
 * The maintenance process: the queue's scheduled jobs, and the housekeeping loop (retention purges), which runs
 * whatever Redis remembers.
 */
async function runMaintenanceProcess(): Promise<void> {
  await runProcess(MAINTENANCE_QUEUE, async () => {
    const config = parseConfig();
    const deps: WorkerDeps = { ...(await createDeps(config)), queues: openQueues(config) };
    const worker = startWorker(maintenanceWorker, deps);
    for (const id of schedulesOf(MAINTENANCE_QUEUE)) await upsertSchedule(deps.queues, id).catch(() => {});
    const housekeeping = startHousekeeping(deps);
    return async () => {
      await housekeeping.stop();
      await worker.close();
      await closeQueues(deps.queues);
      await deps.db.end();
      await deps.prepared.end();
    };
  });
}

if (isEntry(import.meta.url)) await runMaintenanceProcess();
