import type { Deps } from './deps.js';
import type { JobOutcome } from '../domain/jobs.js';
import type { MaintenanceTask } from '../queues/registry.js';
import { purgeIdempotencyKeys } from './idempotency.js';
import { purgeExpiredQuotes } from './quotes.js';
import { purgeSettled } from './retention.js';

/** A maintenance job (a tick of one of the job schedulers in the registry): one purge; each is idempotent. */
export async function runMaintenanceJob(deps: Deps, task: MaintenanceTask): Promise<JobOutcome> {
  const purged = await purge(deps, task);
  return { kind: 'done', result: JSON.stringify(purged), log: `${task}: ${JSON.stringify(purged)}` };
}

async function purge(deps: Deps, task: MaintenanceTask): Promise<Record<string, number>> {
  switch (task) {
    case 'purge-idempotency-keys':
      return { idempotency_key: await purgeIdempotencyKeys(deps) };
    case 'purge-quotes':
      return { quote: await purgeExpiredQuotes(deps) };
    case 'purge-settled':
      return purgeSettled(deps);
  }
}
