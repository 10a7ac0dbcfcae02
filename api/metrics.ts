import { AggregatorRegistry, Counter, Histogram, Registry, type MetricObjectWithValues, type MetricValue } from 'prom-client';
import { LATENCY_BUCKETS, processRegistry } from '../shared/metrics/registry.js';
import { askSiblings, hasSiblings } from './siblings.js';

export type Metrics = ReturnType<typeof createMetrics>;

/** How long a scrape waits for the other API workers' metrics. */
const SIBLINGS_MS = 1000;

type MetricsJson = MetricObjectWithValues<MetricValue<string>>[];

/**
 * The api's own metrics, one registry per app (tests run several apps in one process), and `ops`, the state behind
 * the work read at scrape time (api/ops-gauges.ts). /metrics serves them with the process registry (Node's
 * metrics, provider calls, …): `scrape()`. In a cluster (API_WORKERS > 1) the requests and the process metrics
 * are every worker's, summed (prom-client's aggregators), with the counters of workers that are gone (api/cluster.ts:
 * a restarted worker does not make a sum go down), and `ops` is read once, by the worker scraped.
 */
export function createMetrics() {
  const registry = new Registry();
  const ops = new Registry();
  const registers = [registry];
  /** What this worker counted itself, as JSON (what a sibling sends). */
  const own = async (): Promise<MetricsJson> => (await Registry.merge([registry, processRegistry]).getMetricsAsJSON()) as MetricsJson;
  return {
    registry,
    ops,
    own,
    /** This app's metrics, its ops gauges and the process's (every API worker's), as Prometheus text. */
    scrape: async (): Promise<string> => {
      if (!hasSiblings()) return Registry.merge([registry, ops, processRegistry]).metrics();
      const mine = await own();
      const theirs = await askSiblings('metrics', SIBLINGS_MS, mine);
      const all = AggregatorRegistry.aggregate([mine, ...(theirs.filter(Array.isArray) as MetricsJson[])]);
      return Registry.merge([all as Registry, ops]).metrics();
    },
    contentType: registry.contentType,
    httpDuration: new Histogram({
      name: 'http_request_duration_seconds', help: 'HTTP request latency by method, route template and status', registers,
      labelNames: ['method', 'route', 'status'], buckets: LATENCY_BUCKETS,
    }),
    bookings: new Counter({
      name: 'bookings_total', help: 'Hold attempts by kind and outcome', registers, labelNames: ['kind', 'outcome'],
    }),
    rateLimiterFailOpen: new Counter({
      name: 'rate_limiter_fail_open_total', help: 'Holds let through unchecked: Redis unreachable, or holds in flight still undecided after the limiter\'s wait', registers,
    }),
    searchCache: new Counter({
      name: 'search_cache_total', help: 'Search cache lookups by kind and result (hit | miss)', registers, labelNames: ['kind', 'result'],
    }),
    webhooks: new Counter({
      name: 'webhooks_total', help: 'Provider webhooks by event type and outcome', registers, labelNames: ['type', 'outcome'],
    }),
  };
}
