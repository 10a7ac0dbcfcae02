import cluster from 'node:cluster';
import { createServer } from 'node:http';
import { parseConfig } from '../shared/config.js';
import { closeDeps, createDeps } from '../shared/runtime.js';
import { redisClient } from '../shared/redis.js';
import { runProcess } from '../shared/process.js';
import { logger } from '../shared/logger.js';
import { startSearchIndexes } from '../shared/search/start.js';
import { SEARCH_LOAD_MAX_MS } from '../shared/usecases/readiness.js';
import { createHandler } from './app.js';
import { createMetrics } from './metrics.js';
import { registerOpsGauges } from './ops-gauges.js';
import { runApiWorkers } from './cluster.js';
import { holdRateLimiter } from './hold-rate-limiter.js';
import { answerSiblings, askSiblings } from './siblings.js';
import type { SearchIndex } from '../shared/usecases/search.js';
import type { SearchIndexes } from '../shared/search/indexes.js';

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
    const indexes = startSearchIndexes(deps.prepared, config.SEARCH_CACHE_TTL_S, config.SEARCH_INDEX === 'on');
    const searchIndex = indexes && withSiblings(indexes);
    // In a cluster: the other workers' asks (no-op in a single API process).
    answerSiblings({ 'catch-up': async () => indexes?.catchUp(), metrics: metrics.own });
    // Requests whose client went away still run to the end; shutdown waits for them before closing the pool.
    let inFlight = 0;
    const holdLimiter = holdRateLimiter({ redis, config, metrics });
    const handler = createHandler({ ...deps, redis, metrics, searchIndex, holdLimiter }, [
      async (_ctx, next) => {
        inFlight++;
        try {
          await next();
        } finally {
          inFlight--;
        }
      },
    ]);
    // A worker of a cluster takes connections only once its search index is built (or its build gave up, after
    // SEARCH_LOAD_MAX_MS): node:cluster hands connections only to workers that listen, so a restarted worker does not
    // answer searches from PostgreSQL while its siblings answer from their indexes. A single process listens at once
    // (its /ready waits for the index).
    if (cluster.isWorker) await indexBuilt(indexes);
    const server = createServer(handler).listen(config.PORT, () => logger.info({ port: config.PORT }, 'api listening'));
    server.keepAliveTimeout = 65_000;

    return async () => {
      // /ready answers 503 from the signal on; SHUTDOWN_DELAY_S keeps serving until balancers have noticed.
      await new Promise((r) => setTimeout(r, config.SHUTDOWN_DELAY_S * 1000));
      await new Promise<void>((resolve) => server.close(() => resolve()));
      for (let waited = 0; inFlight > 0 && waited < 10_000; waited += 50) await new Promise((r) => setTimeout(r, 50));
      await indexes?.stop();
      await holdLimiter.settled(); // the last holds' counts, sent after their answers
      redis.disconnect();
      await closeDeps(deps);
    };
  });
}

/** Resolves once the indexes are built, or their build has given up (then searches read PostgreSQL, as /ready says). */
async function indexBuilt(indexes: SearchIndexes | null): Promise<void> {
  while (indexes && !indexes.builtOrGaveUp(SEARCH_LOAD_MAX_MS)) await new Promise((r) => setTimeout(r, 50));
}

/** How long a catalogue write waits for the other API workers' indexes (as for its own: then it answers anyway). */
const SIBLING_CATCH_UP_MS = 1000;

/**
 * The indexes, whose catch-up (after a catalogue write, before its answer) also waits for every other API worker's:
 * the next search shows the write whichever worker answers it.
 */
function withSiblings(indexes: SearchIndexes): SearchIndex {
  return {
    cars: () => indexes.cars(),
    stays: (fromDay) => indexes.stays(fromDay),
    builtOrGaveUp: (maxMs) => indexes.builtOrGaveUp(maxMs),
    catchUp: async () => {
      await Promise.all([indexes.catchUp(), askSiblings('catch-up', SIBLING_CATCH_UP_MS)]);
    },
  };
}
