import { once } from 'node:events';
import { createPreparedDb, type PreparedDb } from '../shared/db/prepared.js';
import { vacuumOutbox } from '../shared/db/outbox.js';
import { parseConfig } from '../shared/config.js';
import { requestRedis } from '../shared/runtime.js';
import { isEntry, runProcess } from '../shared/process.js';
import { logger } from '../shared/logger.js';
import { closeQueues, openQueues, type Queues } from '../shared/queues/queues.js';
import { KafkaPublisher } from './kafka.js';
import { pumpOnce, type PassResult } from './pump-pass.js';
import { drainByPolling } from './wake.js';

// The outbox pump: every committed event goes to Kafka (the publish lane, when brokers are configured) and
// becomes the BullMQ jobs the queue registry asks for (the dispatch lane), in batches: one claim, one produce
// request, one bulk add per queue and one UPDATE per pass. Safe to run twice: a lane is worked by one pump at a
// time (a transaction-scoped advisory lock), the other pump's pass finds it taken and does nothing.

/**
 * While there is work, a pass every 40 ms: at 600 holds/s a pass carries ~25 events (a pass costs about the same
 * for 1 event as for 50), and Kafka sees each event within ~50 ms of its commit. Idle, the interval doubles up to
 * 200 ms (the first event after a quiet spell waits at most that).
 */
const BUSY_POLL_MS = 40;
const IDLE_POLL_MAX_MS = 200;
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
  busyPollMs?: number;
  idlePollMaxMs?: number;
}

export function startPump(db: PreparedDb, o: PumpOptions) {
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
  const loop = drainByPolling(async () => {
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
    return { full: r.full, worked: r.published + r.dispatched > 0 || r.lanesBusy };
  }, { busyMs: o.busyPollMs ?? BUSY_POLL_MS, idleMaxMs: o.idlePollMaxMs ?? IDLE_POLL_MAX_MS });
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
    // One connection for the passes, one for VACUUM.
    const db = createPreparedDb(config.DATABASE_URL, 2);
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
    pump = startPump(db, { kafka, jobs: { queues, alive } });
    return async () => {
      await pump?.stop();
      await kafka?.stop();
      probe.disconnect();
      await closeQueues(queues);
      await db.end();
    };
  });
}
