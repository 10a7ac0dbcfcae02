import { purgeIdempotencyKeys } from '../shared/usecases/idempotency.js';
import { purgeExpiredQuotes } from '../shared/usecases/quotes.js';
import { isEntry } from '../shared/process.js';
import { MAINTENANCE_QUEUE } from '../shared/queues/registry.js';
import { runWorkerProcess, type WorkerDefinition } from './runner.js';

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

if (isEntry(import.meta.url)) await runWorkerProcess(maintenanceWorker);
