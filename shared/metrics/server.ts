import http from 'node:http';
import type { Registry } from 'prom-client';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { processRegistry } from './registry.js';

/**
 * Where each worker kind serves /metrics by default: METRICS_PORT_BASE (9100) + its offset. The api and the
 * dashboard serve /metrics on their own HTTP ports instead. Keep dashboards/prometheus/prometheus.yml in step.
 * (The outbox pump took the dispatcher's 4; the relay's 5 is left free, so maintenance keeps 9106.)
 */
export const METRICS_PORT_OFFSETS: Readonly<Record<string, number>> = {
  expiry: 1, refunds: 2, notifications: 3, pump: 4, maintenance: 6,
};

/** This process's metrics port: METRICS_PORT when set (0 = none), else the kind's default; null for kinds without one. */
export function metricsPortOf(kind: string, c: Pick<Config, 'METRICS_PORT' | 'METRICS_PORT_BASE'>): number | null {
  if (c.METRICS_PORT !== undefined) return c.METRICS_PORT === 0 ? null : c.METRICS_PORT;
  const offset = METRICS_PORT_OFFSETS[kind];
  return offset === undefined ? null : c.METRICS_PORT_BASE + offset;
}

/**
 * Serves GET /metrics on `port`. A port already taken is logged and skipped: metrics are worth less than
 * the work, so the process goes on without them. Returns the stop function.
 */
export async function serveMetrics(port: number, log: Logger, registry: Registry = processRegistry): Promise<() => Promise<void>> {
  const server = http.createServer((req, res) => {
    if (req.method !== 'GET' || req.url?.split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
      (err) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`${String(err)}\n`),
    );
  });
  server.keepAliveTimeout = 65_000;
  const listening = await new Promise<boolean>((resolve) => {
    server.once('error', (err) => {
      log.warn({ port, err: String(err) }, 'metrics port unavailable; this process serves no metrics');
      resolve(false);
    });
    server.listen(port, () => resolve(true));
  });
  if (!listening) return async () => {};
  log.info({ port }, 'metrics on /metrics');
  return () => new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
