import type { DatabasePool } from '../db/pool.js';
import type { PreparedDb } from '../db/prepared.js';
import type { Clock } from '../domain/clock.js';
import type { Config } from '../config.js';
import type { PspClient } from '../psp/client.js';
import type { ReadReplica } from '../read-replica.js';
import type { JobProducer } from '../queues/producer.js';

export interface Deps {
  db: DatabasePool;
  /** Named statements on plain node-postgres, for the hottest paths (see shared/db/prepared.ts). */
  prepared: PreparedDb;
  clock: Clock;
  config: Config;
  psp: PspClient;
  /** The read replica (DATABASE_READ_URL) for reads that may be stale; see staleRead. */
  replica?: ReadReplica;
  /** Adds the jobs a committed change owes (see transact.ts); fails fast, never throws. */
  jobs: JobProducer;
}
