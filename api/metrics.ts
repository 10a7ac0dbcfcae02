import { Counter, Histogram, Registry } from 'prom-client';
import { LATENCY_BUCKETS, processRegistry } from '../shared/metrics/registry.js';

export type Metrics = ReturnType<typeof createMetrics>;

/**
 * The api's own metrics, one registry per app (tests run several apps in one process). /metrics serves them
 * with the process registry (Node's metrics, provider calls, …): `scrape()`.
 */
export function createMetrics() {
  const registry = new Registry();
  const registers = [registry];
  return {
    registry,
    /** This app's metrics and the process's, as Prometheus text. */
    scrape: () => Registry.merge([registry, processRegistry]).metrics(),
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
