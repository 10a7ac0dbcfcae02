import { parseConfig } from '../shared/config.js';
import { createDeps, requestRedis } from '../shared/runtime.js';
import { runProcess } from '../shared/process.js';
import { logger } from '../shared/logger.js';
import { createApp } from './app.js';
import { createMetrics } from './metrics.js';
import { registerOpsGauges } from './ops-gauges.js';

await runProcess('api', async () => {
  const config = parseConfig();
  const deps = await createDeps(config);
  const redis = requestRedis(config.REDIS_URL, config.REDIS_KEY_PREFIX);
  redis.on('error', () => {});
  const metrics = createMetrics();
  const closeGauges = registerOpsGauges(metrics, deps.db, config);
  // Requests whose client went away still run to the end; shutdown waits for them before closing the pool.
  let inFlight = 0;
  const app = createApp({ ...deps, redis, metrics }, [
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
    await closeGauges();
    redis.disconnect();
    await deps.db.end();
  };
});
