import { Redis } from 'ioredis';
import type { ConnectionOptions } from 'bullmq';
import { createDb } from './db/pool.js';
import { PspClient } from './psp/client.js';
import { systemClock, type Clock } from './domain/clock.js';
import type { Config } from './config.js';
import type { Deps } from './usecases/deps.js';
import { markStopRequested, onSupervisorExit } from './supervision.js';

/** Request-path Redis: fail fast instead of queueing, so callers can fail open. */
export function requestRedis(url: string, keyPrefix = ''): Redis {
  return new Redis(url, {
    keyPrefix, maxRetriesPerRequest: 1, enableOfflineQueue: false, commandTimeout: 1000, connectTimeout: 2000 });
}

/** BullMQ wants blocking connections that retry forever. */
export function queueConnection(url: string): ConnectionOptions {
  const u = new URL(url);
  return {
    host: u.hostname, port: Number(u.port || 6379), db: Number(u.pathname.slice(1) || 0),
    username: u.username || undefined, password: u.password ? decodeURIComponent(u.password) : undefined,
    maxRetriesPerRequest: null,
  };
}

export function pspClient(config: Config): PspClient {
  return new PspClient({ baseUrl: config.pspUrl, apiKey: config.PSP_API_KEY, timeoutMs: 2000, retries: 2 });
}

export async function createDeps(config: Config, opts: { clock?: Clock; poolSize?: number } = {}): Promise<Deps> {
  return {
    db: await createDb(config.DATABASE_URL, { maximumPoolSize: opts.poolSize }),
    clock: opts.clock ?? systemClock,
    config,
    psp: pspClient(config),
  };
}

/** Runs `stop` once on SIGTERM/SIGINT or when the supervising `npm start` dies, then exits. */
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
