import { pathToFileURL } from 'node:url';
import { logger } from './logger.js';
import { markStopRequested, onSupervisorExit } from './supervision.js';

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
 * The life of every long-running process (api, workers, dispatcher, relay, dashboard): `start` returns
 * its `stop`, which runs once on SIGTERM/SIGINT. The one place to add what every process needs.
 */
export async function runProcess(name: string, start: () => Promise<() => Promise<void>>): Promise<void> {
  const log = logger.child({ proc: name });
  const stop = await start();
  log.info('started');
  onShutdown(stop, (m) => log.info(m));
}
