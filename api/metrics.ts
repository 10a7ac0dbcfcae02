import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export type Metrics = ReturnType<typeof createMetrics>;

export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return {
    registry,
    httpDuration: new Histogram({
      name: 'http_request_duration_seconds', help: 'HTTP request latency', registers: [registry],
      labelNames: ['method', 'route', 'status'], buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    }),
    bookings: new Counter({
      name: 'bookings_total', help: 'Hold attempts by outcome', registers: [registry], labelNames: ['kind', 'outcome'],
    }),
    rateLimiterFailOpen: new Counter({
      name: 'rate_limiter_fail_open_total', help: 'Holds let through because Redis was unreachable', registers: [registry],
    }),
    searchCache: new Counter({
      name: 'search_cache_total', help: 'Search cache lookups', registers: [registry], labelNames: ['kind', 'result'],
    }),
  };
}
