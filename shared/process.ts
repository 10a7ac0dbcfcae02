import { pathToFileURL } from 'node:url';
import { logger, nameProcess } from './logger.js';
import { config } from './config.js';
import { markStopRequested, onSupervisorExit } from './supervision.js';
import { collectProcessMetrics } from './metrics/registry.js';
import { metricsPortOf, serveMetrics } from './metrics/server.js';
import { watchEventLoop } from './metrics/event-loop.js';

/** True when the module at `url` is the file node was started with (the process's entry point). */
export const isEntry = (url: string): boolean => process.argv[1] !== undefined && url === pathToFileURL(process.argv[1]).href;

/** Runs `stop` once on SIGTERM/SIGINT or when the supervising `npm start` dies, then exits (forced after 25 s). */
export function onShutdown(stop: () => Promise<void>, log: (m: string) => void = () => {}): void {
  let stopping = false;
  const handler = (signal: string) => {
    if (stopping) return;
    stopping = true;
    markStopRequested();
    log(`${signal}: shutting down`);
    const force = setTimeout(() => process.exit(1), 25_000);
    force.unref();
    stop().then(() => process.exit(0), () => process.exit(1));
  };
  process.on('SIGTERM', () => handler('SIGTERM'));
  process.on('SIGINT', () => handler('SIGINT'));
  onSupervisorExit(() => handler('supervisor exited'));
}

/**
 * The life of every long-running process (api, workers, outbox pump, dashboard): `start` returns
 * its `stop`, which runs once on SIGTERM/SIGINT. The one place to add what every process needs: its name
 * on every log line, process metrics, and a worker's /metrics port (shared/metrics/server.ts).
 */
export async function runProcess(name: string, start: () => Promise<() => Promise<void>>): Promise<void> {
  collectProcessMetrics(nameProcess(name));
  watchEventLoop(logger);
  const port = metricsPortOf(name, config());
  const stopMetrics = port === null ? async () => {} : await serveMetrics(port, logger);
  const stop = await start();
  logger.info('started');
  onShutdown(async () => {
    await stop();
    await stopMetrics();
  }, (m) => logger.info(m));
}
