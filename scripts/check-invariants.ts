import { parseArgs } from 'node:util';
import { formatResults, runChecks } from './invariants/index.js';

// `npm run check:invariants [-- --only name,name --notify-log file]`: reads PostgreSQL (DATABASE_URL), the provider
// (PSP_URL + PSP_API_KEY, when set), Kafka (KAFKA_BROKERS, when set and not `none`), Redis's jobs (REDIS_URL or
// REDIS_CLUSTER_NODES with QUEUE_PREFIX, when set) and the notification receiver's
// log (NOTIFY_LOG or --notify-log), prints one line per invariant, exits 1 on any violation. Never writes.

const { values } = parseArgs({
  options: { only: { type: 'string' }, 'notify-log': { type: 'string' }, samples: { type: 'string' } },
});
const env = process.env;
const brokers = (env.KAFKA_BROKERS ?? '').split(',').map((s) => s.trim()).filter((s) => s && s !== 'none');

const results = await runChecks({
  databaseUrl: env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/booking',
  graceS: Number(env.PAYMENT_GRACE_S ?? 600),
  psp: env.PSP_URL ? { url: env.PSP_URL, apiKey: env.PSP_API_KEY ?? '' } : null,
  kafka: brokers.length ? { brokers, prefix: env.KAFKA_TOPIC_PREFIX ?? '' } : null,
  redis: env.REDIS_URL || env.REDIS_CLUSTER_NODES
    ? { url: env.REDIS_URL || 'redis://127.0.0.1:6379', clusterNodes: env.REDIS_CLUSTER_NODES, prefix: env.QUEUE_PREFIX || 'bull' }
    : null,
  notifyLogPath: values['notify-log'] ?? env.NOTIFY_LOG ?? null,
  only: values.only?.split(',').filter(Boolean),
});
console.log(formatResults(results, Number(values.samples ?? 5)));
const failed = results.filter((r) => r.violations.length > 0);
console.log(failed.length ? `${failed.length} invariant(s) violated: ${failed.map((r) => r.name).join(', ')}` : 'all invariants hold');
process.exitCode = failed.length ? 1 : 0;
