import { Gauge } from 'prom-client';
import type { DatabasePool } from '../shared/db/pool.js';
import { outboxBacklog } from '../shared/db/outbox.js';
import { pendingRefundStats } from '../shared/db/refunds.js';
import { unsentNotificationStats } from '../shared/db/notifications.js';
import { valueWithin } from '../shared/async.js';
import { JOB_KINDS } from '../shared/domain/jobs.js';
import type { QueueSet } from '../shared/queues/producer.js';
import type { Metrics } from './metrics.js';

const SCRAPE_BUDGET_MS = 1000;

/** One read shared by the gauges of one scrape (they collect together): null when it failed or took too long. */
function perScrape<T>(read: () => Promise<T>): () => Promise<T | null> {
  let inFlight: Promise<T | null> | null = null;
  return () => (inFlight ??= valueWithin(read(), SCRAPE_BUDGET_MS).finally(() => {
    inFlight = null;
  }));
}

/** The age of a queue's oldest waiting job, from the time it was due (its data's dueAt; else when it was added). */
async function oldestWaitingAgeSeconds(queue: QueueSet[keyof QueueSet]): Promise<number> {
  const [oldest] = await queue.getJobs(['wait'], 0, 0, true);
  if (!oldest) return 0;
  const due = typeof (oldest.data as { dueAt?: unknown })?.dueAt === 'number' ? (oldest.data as { dueAt: number }).dueAt : oldest.timestamp;
  return Math.max(0, (Date.now() - due) / 1000);
}

/**
 * The state behind the work, read from PostgreSQL and Redis when Prometheus scrapes the api (never on the
 * request path, each read within 1 s): per queue the waiting, delayed, active and failed jobs and the age of the
 * oldest waiting one; the outbox backlog and the age of its oldest event; pending refunds; unsent notifications.
 * Served by the api so a stalled pump or worker still shows its backlog. A failed read leaves the previous values
 * (the scrape itself never fails). `queues`: the api's producers (null: no queue gauges).
 */
export function registerOpsGauges(metrics: Metrics, db: DatabasePool, queues: QueueSet | null): void {
  const registers = [metrics.ops];
  const gauge = <T>(name: string, help: string, read: () => Promise<T | null>, value: (v: T) => number) =>
    new Gauge({ name, help, registers, async collect() {
      const v = await read();
      if (v !== null) this.set(value(v));
    } });

  new Gauge({
    name: 'queue_depth', help: 'Jobs per queue (hash tag dropped) and state (waiting, active, delayed, failed)', labelNames: ['queue', 'state'], registers,
    async collect() {
      if (!queues) return;
      await Promise.all(JOB_KINDS.map(async (kind) => {
        const counts = await valueWithin(queues[kind].getJobCounts('waiting', 'active', 'delayed', 'failed'), SCRAPE_BUDGET_MS);
        for (const [state, n] of Object.entries(counts ?? {})) this.set({ queue: kind, state }, n);
      }));
    },
  });
  new Gauge({
    name: 'queue_oldest_waiting_age_seconds', help: 'Per queue, how long the oldest waiting job has waited since it was due (0: none waiting)',
    labelNames: ['queue'], registers,
    async collect() {
      if (!queues) return;
      await Promise.all(JOB_KINDS.map(async (kind) => {
        const age = await valueWithin(oldestWaitingAgeSeconds(queues[kind]), SCRAPE_BUDGET_MS);
        if (age !== null) this.set({ queue: kind }, age);
      }));
    },
  });
  const outbox = perScrape(() => outboxBacklog(db));
  gauge('outbox_unpublished_events', 'Outbox events not yet published to Kafka', outbox, (o) => o.unpublished);
  gauge('outbox_oldest_unpublished_age_seconds', 'Age of the oldest event not yet published to Kafka (0: none)', outbox, (o) => o.oldestUnpublishedAgeSeconds);
  const refunds = perScrape(() => pendingRefundStats(db));
  gauge('refunds_pending', 'Refunds PENDING at the provider', refunds, (r) => r.pending);
  gauge('refunds_pending_oldest_age_seconds', 'Age of the oldest PENDING refund (0: none)', refunds, (r) => r.oldestAgeSeconds);
  gauge('refunds_pending_over_1h', 'Refunds PENDING for over an hour', refunds, (r) => r.overOneHour);
  const notifications = perScrape(() => unsentNotificationStats(db));
  gauge('notifications_unsent', 'Notifications (sms, push) written with their event and not sent yet', notifications, (n) => n.unsent);
  gauge('notifications_unsent_oldest_age_seconds', 'Age of the oldest unsent notification (0: none)', notifications, (n) => n.oldestAgeSeconds);
}
