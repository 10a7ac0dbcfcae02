import { once } from 'node:events';
import type { DatabasePool } from '../shared/db/pool.js';
import { vacuumOutbox } from '../shared/db/outbox.js';
import { parseConfig } from '../shared/config.js';
import { createDb } from '../shared/db/pool.js';
import { requestRedis } from '../shared/runtime.js';
import { isEntry, runProcess } from '../shared/process.js';
import { logger } from '../shared/logger.js';
import { closeQueues, openQueues, type Queues } from '../shared/queues/queues.js';
import { KafkaPublisher } from './kafka.js';
import { pumpOnce, type PassResult } from './pump-pass.js';
import { drainOnNotify } from './wake.js';

// The outbox pump: every committed event goes to Kafka (the publish lane, when brokers are configured) and
// becomes the BullMQ jobs the queue registry asks for (the dispatch lane), in batches: one claim, one produce
// request, one bulk add per queue and one UPDATE per pass. Safe to run twice: a lane is worked by one pump at a
// time (a transaction-scoped advisory lock), the other pump's pass finds it taken and does nothing.

/**
 * Gather the commits of up to this many ms (or this many commits) into one pass: at 600 holds/s a pass then
 * carries ~25 events instead of ~2, and Kafka still sees each event within ~100 ms of its commit.
 */
const COALESCE_MS = 40;
const COALESCE_COUNT = 200;
/** Skip the Redis ping while the last bulk add is this recent: it proved Redis alive. */
const REDIS_PROVEN_MS = 1_000;
/** VACUUM the outbox after this many rows were marked (and at least once a minute while any were). */
const VACUUM_AFTER_ROWS = 5_000;
const VACUUM_AT_LEAST_EVERY_MS = 60_000;

export interface PumpOptions {
  /** Kafka, when brokers are configured; without it events wait in the outbox (published_at stays null). */
  kafka?: KafkaPublisher | null;
  /** BullMQ producers and a fail-fast liveness probe of their Redis. */
  jobs?: { queues: Queues; alive?: () => Promise<unknown> } | null;
  /** Called after every pass (for metrics: events published and dispatched). */
  onPass?: (r: PassResult) => void;
  coalesceMs?: number;
  coalesceCount?: number;
}

export function startPump(db: DatabasePool, databaseUrl: string, o: PumpOptions) {
  let marked = 0;
  let lastVacuum = Date.now();
  let vacuuming: Promise<void> | null = null;
  const maybeVacuum = () => {
    if (vacuuming || marked === 0 || (marked < VACUUM_AFTER_ROWS && Date.now() - lastVacuum < VACUUM_AT_LEAST_EVERY_MS)) return;
    marked = 0;
    lastVacuum = Date.now();
    vacuuming = vacuumOutbox(db)
      .catch((err) => logger.warn({ err: String(err) }, 'outbox vacuum failed'))
      .finally(() => { vacuuming = null; });
  };
  let lastWarn = 0;
  let redisProvenAt = 0;
  const loop = drainOnNotify(databaseUrl, 'outbox', async () => {
    const kafka = o.kafka?.lane() ?? null;
    const jobs = o.jobs && Date.now() - redisProvenAt < REDIS_PROVEN_MS ? { queues: o.jobs.queues } : o.jobs;
    const r = await pumpOnce(db, { kafka, jobs });
    if (o.jobs && !r.failures.some((f) => f.lane === 'dispatch')) redisProvenAt = Date.now();
    if (kafka) {
      if (r.failures.some((f) => f.lane === 'publish')) o.kafka!.failed();
      else o.kafka!.succeeded();
    }
    if (r.failures.length && Date.now() - lastWarn > 5_000) {
      lastWarn = Date.now();
      logger.warn({ failures: r.failures.map((f) => `${f.lane}: ${String(f.error)}`) }, 'outbox pump: a lane failed; its events wait');
    }
    marked += Math.max(r.published, r.dispatched);
    maybeVacuum();
    o.onPass?.(r);
    return r.full;
  }, { coalesceMs: o.coalesceMs ?? COALESCE_MS, coalesceCount: o.coalesceCount ?? COALESCE_COUNT });
  return {
    kick: loop.kick,
    async stop() {
      await loop.stop();
      await vacuuming;
    },
  };
}

if (isEntry(import.meta.url)) {
  await runProcess('pump', async () => {
    const config = parseConfig();
    // One connection for the passes, one for VACUUM (plus the LISTEN client of drainOnNotify).
    const db = await createDb(config.DATABASE_URL, { maximumPoolSize: 2 });
    const queues = openQueues(config);
    const probe = requestRedis(config.REDIS_URL);
    probe.on('error', () => {});
    let pump: ReturnType<typeof startPump> | null = null;
    const kafka = config.kafkaBrokers.length ? new KafkaPublisher(config.kafkaBrokers, config.KAFKA_TOPIC_PREFIX, () => pump?.kick()) : null;
    if (!kafka) logger.warn('KAFKA_BROKERS is unset: events wait in the outbox until a pump with brokers runs');
    kafka?.start();
    // Right after start the probe may still be connecting (no offline queue): wait for it, within the ping's budget.
    const alive = async () => {
      if (probe.status !== 'ready') await once(probe, 'ready', { signal: AbortSignal.timeout(2_000) });
      return probe.ping();
    };
    pump = startPump(db, config.DATABASE_URL, { kafka, jobs: { queues, alive } });
    return async () => {
      await pump?.stop();
      await kafka?.stop();
      probe.disconnect();
      await closeQueues(queues);
      await db.end();
    };
  });
}
