import { createPreparedDb, type PreparedDb } from '../shared/db/prepared.js';
import { vacuumOutbox } from '../shared/db/outbox.js';
import { parseConfig } from '../shared/config.js';
import { isEntry, runProcess } from '../shared/process.js';
import { logger } from '../shared/logger.js';
import { KafkaPublisher } from './kafka.js';
import { pumpOnce, type PassResult } from './pump-pass.js';
import { drainByPolling } from './lib/poll-loop.js';

// The outbox pump relays every committed event to Kafka, in batches: one claim, one produce request and one
// UPDATE per pass. It needs PostgreSQL and Kafka only (no Redis): work that must happen after an event is a
// PostgreSQL row written with it and worked by a due loop, never a job the pump enqueues. Safe to run twice:
// one pump at a time publishes (a transaction-scoped advisory lock); the other's pass finds it taken.

/**
 * While there is work, a pass every 40 ms: at 600 holds/s a pass carries ~25 events (a pass costs about the same
 * for 1 event as for 50), and Kafka sees each event within ~50 ms of its commit. Idle, the interval doubles up to
 * 200 ms (the first event after a quiet spell waits at most that).
 */
const BUSY_POLL_MS = 40;
const IDLE_POLL_MAX_MS = 200;
/** VACUUM the outbox after this many rows were marked (and at least once a minute while any were). */
const VACUUM_AFTER_ROWS = 5_000;
const VACUUM_AT_LEAST_EVERY_MS = 60_000;

export interface PumpOptions {
  /** Kafka, when brokers are configured; without it events wait in the outbox (published_at stays null). */
  kafka?: KafkaPublisher | null;
  /** Called after every pass that ran (events published, another pump busy, a Kafka failure). */
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
  const loop = drainByPolling(async () => {
    const lane = o.kafka?.lane();
    if (!lane) return { full: false, worked: false }; // not connected, or backing off: the events wait
    const r = await pumpOnce(db, lane);
    if (r.failure) {
      o.kafka!.failed();
      if (Date.now() - lastWarn > 5_000) {
        lastWarn = Date.now();
        logger.warn({ err: String(r.failure) }, 'outbox pump: publishing failed; the events wait');
      }
    } else {
      o.kafka!.succeeded();
    }
    marked += r.published;
    maybeVacuum();
    o.onPass?.(r);
    return { full: r.full, worked: r.published > 0 || r.busy };
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
    let pump: ReturnType<typeof startPump> | null = null;
    const kafka = config.kafkaBrokers.length ? new KafkaPublisher(config.kafkaBrokers, config.KAFKA_TOPIC_PREFIX, () => pump?.kick()) : null;
    if (!kafka) logger.warn('KAFKA_BROKERS is unset: events wait in the outbox until a pump with brokers runs');
    kafka?.start();
    pump = startPump(db, { kafka });
    return async () => {
      await pump?.stop();
      await kafka?.stop();
      await db.end();
    };
  });
}
