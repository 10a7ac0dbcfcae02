import { Gauge } from 'prom-client';
import type { DatabasePool } from '../shared/db/pool.js';
import type { Config } from '../shared/config.js';
import { outboxBacklog } from '../shared/db/outbox.js';
import { pendingRefundStats } from '../shared/db/refunds.js';
import { unsentNotificationStats } from '../shared/db/notifications.js';
import { valueWithin } from '../shared/async.js';
import { closeQueues, openQueues } from '../shared/queues/queues.js';
import type { Metrics } from './metrics.js';

const SCRAPE_BUDGET_MS = 1000;

/** One read shared by the gauges of one scrape (they collect together): null when it failed or took too long. */
function perScrape<T>(read: () => Promise<T>): () => Promise<T | null> {
  let inFlight: Promise<T | null> | null = null;
  return () => (inFlight ??= valueWithin(read(), SCRAPE_BUDGET_MS).finally(() => {
    inFlight = null;
  }));
}

/**
 * The state behind the work, read from PostgreSQL and Redis when Prometheus scrapes the api (never on the
 * request path, each read within 1 s): queue depths, the outbox backlog and the age of its oldest event,
 * pending refunds, unsent notifications. Served by the api so a stalled pump or worker still shows its backlog.
 * A failed read leaves the previous values (the scrape itself never fails).
 */
export function registerOpsGauges(metrics: Metrics, db: DatabasePool, config: Config): () => Promise<void> {
  const queues = openQueues(config);
  for (const q of Object.values(queues)) q.on('error', () => {}); // a Redis outage shows as stale gauges, not a crash
  const registers = [metrics.registry];
  const gauge = <T>(name: string, help: string, read: () => Promise<T | null>, value: (v: T) => number) =>
    new Gauge({ name, help, registers, async collect() {
      const v = await read();
      if (v !== null) this.set(value(v));
    } });

  new Gauge({
    name: 'queue_depth', help: 'Jobs per queue and state (waiting, active, delayed, failed)', labelNames: ['queue', 'state'], registers,
    async collect() {
      await Promise.all(Object.values(queues).map(async (q) => {
        const counts = await valueWithin(q.getJobCounts('waiting', 'active', 'delayed', 'failed'), SCRAPE_BUDGET_MS);
        for (const [state, n] of Object.entries(counts ?? {})) this.set({ queue: q.name, state }, n);
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
  return () => closeQueues(queues);
}
