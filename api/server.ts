import cluster from 'node:cluster';
import { parseConfig } from '../shared/config.js';
import { closeDeps, createDeps } from '../shared/runtime.js';
import { redisClient } from '../shared/redis.js';
import { runProcess } from '../shared/process.js';
import { logger } from '../shared/logger.js';
import { startSearchIndexes } from '../shared/search/start.js';
import { createApp } from './app.js';
import { createMetrics } from './metrics.js';
import { registerOpsGauges } from './ops-gauges.js';
import { runApiWorkers } from './cluster.js';

const apiWorkers = parseConfig().API_WORKERS;
if (cluster.isPrimary && apiWorkers > 1) await runApiWorkers(apiWorkers);
else await runApi();

/** One API process: the Koa app on PORT, its pools, Redis, gauges and search indexes. */
async function runApi(): Promise<void> {
  await runProcess('api', async () => {
    const config = parseConfig();
    // The hold's one statement runs on the prepared pool; the slonik pool serves the rest of the API.
    const deps = await createDeps(config, { poolSize: 6, preparedPoolSize: 8, readReplica: true });
    const redis = redisClient(config, 'request', { keyPrefix: config.REDIS_KEY_PREFIX });
    redis.on('error', () => {});
    const metrics = createMetrics();
    registerOpsGauges(metrics, deps.db, deps.producers?.queues ?? null);
    const searchIndex = startSearchIndexes(deps.prepared, config.SEARCH_CACHE_TTL_S, config.SEARCH_INDEX === 'on');
    // Requests whose client went away still run to the end; shutdown waits for them before closing the pool.
    let inFlight = 0;
    const app = createApp({ ...deps, redis, metrics, searchIndex }, [
      async (_ctx, next) => {
        inFlight++;
        try {
          await next();
        } finally {
          inFlight--;
        }
      },
    ]);
    const server = app.listen(config.PORT, () => logger.info({ port: config.PORT }, 'api listening'));
    server.keepAliveTimeout = 65_000;

    return async () => {
      // /ready answers 503 from the signal on; SHUTDOWN_DELAY_S keeps serving until balancers have noticed.
      await new Promise((r) => setTimeout(r, config.SHUTDOWN_DELAY_S * 1000));
      await new Promise<void>((resolve) => server.close(() => resolve()));
      for (let waited = 0; inFlight > 0 && waited < 10_000; waited += 50) await new Promise((r) => setTimeout(r, 50));
      await searchIndex?.stop();
      redis.disconnect();
      await closeDeps(deps);
    };
  });
}
