import { createDb } from './db/pool.js';
import { createPreparedDb } from './db/prepared.js';
import { openReadReplica } from './read-replica.js';
import { PspClient } from './psp/client.js';
import { PSP_CALLS } from './psp/attempt-policy.js';
import { pspDuration } from './metrics/work.js';
import { systemClock, type Clock } from './domain/clock.js';
import { openProducers, type JobProducer, type Producers } from './queues/producer.js';
import type { Config } from './config.js';
import type { Deps } from './usecases/deps.js';

export function pspClient(config: Config): PspClient {
  return new PspClient({
    baseUrl: config.pspUrl, apiKey: config.PSP_API_KEY, ...PSP_CALLS,
    onCall: (c) => pspDuration.observe({ operation: c.operation, outcome: c.outcome }, c.seconds),
  });
}

export interface DepsOptions {
  clock?: Clock;
  poolSize?: number;
  preparedPoolSize?: number;
  /** The job producer; default: one per queue on a fail-fast connection (shared/queues/producer.ts). */
  jobs?: JobProducer;
  /** Opens the read replica when DATABASE_READ_URL is set: only processes that serve stale-tolerant reads (the api). */
  readReplica?: boolean;
}

/** A process's dependencies, and what closes them. */
export interface ProcessDeps extends Deps {
  /** The producers when this process opened them (their queues also serve the dashboard and the gauges). */
  producers: Producers | null;
}

/**
 * A process's dependencies. Pools are small: the machine has 2 cores, and two of every process (as the
 * chaos tooling runs them) must stay well below PostgreSQL's max_connections (100). Connections open on demand.
 */
export async function createDeps(config: Config, opts: DepsOptions = {}): Promise<ProcessDeps> {
  const db = await createDb(config.DATABASE_URL, { maximumPoolSize: opts.poolSize ?? 4 });
  // Only processes that serve stale-tolerant reads (the api) open the replica, and only when one is configured.
  const replica = opts.readReplica && config.DATABASE_READ_URL
    ? await openReadReplica(db, config.DATABASE_READ_URL, config.DATABASE_READ_MAX_LAG_S, { poolSize: opts.poolSize })
    : undefined;
  const producers = opts.jobs ? null : openProducers(config);
  return {
    db,
    replica,
    prepared: createPreparedDb(config.DATABASE_URL, opts.preparedPoolSize ?? 2),
    clock: opts.clock ?? systemClock,
    config,
    psp: pspClient(config),
    jobs: opts.jobs ?? producers!,
    producers,
  };
}

/** Closes what createDeps opened (every process's last step of its stop). */
export async function closeDeps(deps: ProcessDeps): Promise<void> {
  await deps.producers?.close();
  await deps.replica?.close();
  await deps.db.end();
  await deps.prepared.end();
}
