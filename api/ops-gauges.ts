import { Gauge } from 'prom-client';
import type { DatabasePool } from '../shared/db/pool.js';
import type { Config } from '../shared/config.js';
import { outboxLag } from '../shared/db/outbox.js';
import { valueWithin } from '../shared/async.js';
import { closeQueues, openQueues } from '../shared/queues/queues.js';
import type { Metrics } from './metrics.js';

const SCRAPE_BUDGET_MS = 1000;

/** Queue depths and outbox lag, read when Prometheus scrapes (never on the request path). */
export function registerOpsGauges(metrics: Metrics, db: DatabasePool, config: Config): () => Promise<void> {
  const queues = openQueues(config);
  for (const q of Object.values(queues)) q.on('error', () => {}); // a Redis outage shows as missing gauges, not a crash
  const registers = [metrics.registry];
  new Gauge({
    name: 'queue_depth', help: 'Jobs per queue and state', labelNames: ['queue', 'state'], registers,
    async collect() {
      await Promise.all(Object.values(queues).map(async (q) => {
        const counts = await valueWithin(q.getJobCounts('waiting', 'active', 'delayed', 'failed'), SCRAPE_BUDGET_MS);
        for (const [state, n] of Object.entries(counts ?? {})) this.set({ queue: q.name, state }, n);
      }));
    },
  });
  new Gauge({
    name: 'outbox_lag_seconds', help: 'Age of the oldest unpublished outbox event, and their count', labelNames: ['measure'], registers,
    async collect() {
      const l = await valueWithin(outboxLag(db), SCRAPE_BUDGET_MS);
      if (!l) return;
      this.set({ measure: 'oldest_age_seconds' }, l.lagSeconds);
      this.set({ measure: 'unpublished' }, l.pending);
    },
  });
  return () => closeQueues(queues);
}
