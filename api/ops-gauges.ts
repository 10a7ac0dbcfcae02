import { Queue } from 'bullmq';
import { Gauge } from 'prom-client';
import type { DatabasePool } from '../shared/db/pool.js';
import type { Config } from '../shared/config.js';
import { queueConnection } from '../shared/runtime.js';
import { outboxLag } from '../shared/db/outbox.js';
import { EXPIRY_QUEUE } from '../workers/expiry.js';
import { REFUNDS_QUEUE } from '../workers/refunds.js';
import { NOTIFICATIONS_QUEUE } from '../workers/notifications.js';
import type { Metrics } from './metrics.js';

export const QUEUE_NAMES = [EXPIRY_QUEUE, REFUNDS_QUEUE, NOTIFICATIONS_QUEUE];

const settle = <T>(p: Promise<T>) =>
  Promise.race([p, new Promise<null>((r) => setTimeout(() => r(null), 1000).unref())]).catch(() => null);

/** Queue depths and outbox lag, read when Prometheus scrapes (never on the request path). */
export function registerOpsGauges(metrics: Metrics, db: DatabasePool, config: Config): () => Promise<void> {
  const queues = QUEUE_NAMES.map((name) => new Queue(name, { connection: queueConnection(config.REDIS_URL), prefix: config.QUEUE_PREFIX }));
  for (const q of queues) q.on('error', () => {}); // a Redis outage shows as missing gauges, not a crash
  const registers = [metrics.registry];
  new Gauge({
    name: 'queue_depth', help: 'Jobs per queue and state', labelNames: ['queue', 'state'], registers,
    async collect() {
      await Promise.all(queues.map(async (q) => {
        const counts = await settle(q.getJobCounts('waiting', 'active', 'delayed', 'failed'));
        for (const [state, n] of Object.entries(counts ?? {})) this.set({ queue: q.name, state }, n);
      }));
    },
  });
  new Gauge({
    name: 'outbox_lag_seconds', help: 'Age of the oldest unpublished outbox event, and their count', labelNames: ['measure'], registers,
    async collect() {
      const l = await settle(outboxLag(db));
      if (!l) return;
      this.set({ measure: 'oldest_age_seconds' }, l.lagSeconds);
      this.set({ measure: 'unpublished' }, l.pending);
    },
  });
  return async () => {
    await Promise.all(queues.map((q) => q.close()));
  };
}
