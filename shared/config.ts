import { availableParallelism } from 'node:os';
import { z } from 'zod';
import { randomSecret, SECRET_NAMES, withLocalSecrets, type Env, type SecretName } from './local-secrets.js';

/** API_WORKERS when unset: one API process per core this process may use, at most 4. */
export const defaultApiWorkers = (cores = availableParallelism()): number => Math.max(1, Math.min(4, cores));

// Empty strings count as unset: `PSP_URL=` means "no external provider", as in the contract.
const optionalString = z.preprocess((v) => (v === '' ? undefined : v), z.string().optional());
const int = (def: number, min = 0) => z.coerce.number().int().min(min).default(def);

const schema = z.object({
  NODE_ENV: z.string().default('development'),
  DATABASE_URL: z.string().url().default('postgres://postgres@127.0.0.1:5432/booking'),
  // Not in the contract: a streaming replica for reads that may be stale (searches, availability, timelines), used
  // while it is at most DATABASE_READ_MAX_LAG_S seconds behind; past that, or down, those reads go to DATABASE_URL.
  DATABASE_READ_URL: z.preprocess((v) => (v === '' ? undefined : v), z.string().url().optional()),
  DATABASE_READ_MAX_LAG_S: z.coerce.number().positive().default(5),
  REDIS_URL: z.string().url().default('redis://127.0.0.1:6379'),
  // Redis Cluster: `host:port,host:port,…` (seed nodes). When set it wins over REDIS_URL for every Redis client
  // (queues, workers, dashboard, limiter, search cache); credentials and TLS still come from REDIS_URL.
  REDIS_CLUSTER_NODES: optionalString,
  KAFKA_BROKERS: optionalString,
  KAFKA_TOPIC_PREFIX: z.string().default(''),
  PORT: int(3000),
  DASHBOARD_PORT: int(3001),
  PSP_PORT: int(4000),
  PSP_URL: z.preprocess((v) => (v === '' ? undefined : v), z.string().url().optional()),
  PSP_API_KEY: optionalString,
  PSP_SANDBOX: z.enum(['true', 'false', '1', '0', '']).default('false').transform((v) => v === 'true' || v === '1'),
  // Unset: the api on this host at PORT (contract default http://127.0.0.1:3000), so paymentUrl, the sandbox's
  // webhook target and the OpenAPI server list follow PORT.
  PUBLIC_BASE_URL: z.preprocess((v) => (v === '' ? undefined : v), z.string().url().optional()),
  JWT_SECRET: optionalString,
  PAYMENT_WEBHOOK_SECRET: optionalString,
  HOLD_TTL_S: int(900, 1),
  HOLD_RATE_LIMIT: int(3, 1),
  HOLD_RATE_WINDOW_S: int(900, 1),
  PAYMENT_GRACE_S: int(600),
  // Not in the contract: how long a job's claim on its row lasts (lease_until): a claim whose process died is free
  // again after it. Meant to outlive an attempt (a provider call is 2 s per try, at most 3 tries); one that does not
  // (slow lookups, a stalled process) sends no refund POST after it. A refund's claim is renewed to LEASE_S as its POST
  // leaves, and held that long when the POST goes unanswered: LEASE_S must also outlast how late the provider may
  // carry out a request its client gave up on, or a refund's next attempt may miss that POST's refund (and pay again
  // once the provider has forgotten the key). shared/usecases/refunds.ts. An intent cancellation waits 2 × LEASE_S (plus
  // the client's longest call) after a create's send in doubt before it settles (shared/usecases/intent-cancellations.ts).
  LEASE_S: int(30, 1),
  // Not in the contract: BullMQ's job lock (lockDuration) and stalled-job check interval, in seconds: a worker that
  // dies mid-job has its job taken up again within about twice this.
  JOB_LOCK_S: int(30, 1),
  // Provider calls per second per queue, across every process (payment checks, intent cancellations, refunds).
  PSP_RATE_LIMIT: int(20, 1),
  SEARCH_CACHE_TTL_S: int(30),
  QUOTE_TTL_S: int(900, 1),
  // Not in the contract: days settled outbox, webhook_inbox and notification rows are kept before the maintenance
  // worker purges them (never an unpublished outbox row).
  RETENTION_DAYS: int(7, 1),
  DASHBOARD_USER: z.string().default('admin'),
  DASHBOARD_PASSWORD: optionalString,
  // A URL (sms and push are POSTed there), `none` (sending is off: recorded as skipped), or unset (development and
  // test only: written to the log). Required in production.
  NOTIFY_WEBHOOK_URL: z.preprocess((v) => (v === '' ? undefined : v), z.union([z.literal('none'), z.string().url()]).optional()),
  // Not in the contract. The sandbox provider's bind address (the contract: 127.0.0.1 only; containers
  // that reach it by service name set 0.0.0.0) and the base of its checkout URLs when it sits behind one.
  PSP_HOST: z.string().min(1).default('127.0.0.1'),
  PSP_PUBLIC_URL: z.preprocess((v) => (v === '' ? undefined : v), z.string().url().optional()),
  // Not in the contract: namespaces for sharing one Redis between deployments (and test runs).
  QUEUE_PREFIX: z.string().regex(/^[\w-]+$/).default('bull'),
  // Not in the contract: API processes behind the one port (node:cluster); 1 = the process serves itself. By default
  // one per core, at most 4: one Node thread tops out near a core, and the seed's peak mix (300 holds/s with 3,000
  // searches/s) or 6,000 searches/s need more than one core of API (docs/benchmarks.md); 4 keeps a deployment's
  // PostgreSQL connections under 100. More than one: a catalogue write waits for every worker's search index and
  // /metrics sums every worker's (api/siblings.ts, docs/operations.md).
  API_WORKERS: z.preprocess((v) => (v === '' ? undefined : v), z.coerce.number().int().min(1).max(32).default(() => defaultApiWorkers())),
  // Not in the contract: the nice value `npm start` gives the workers, the pump and the dashboard (not the API, nor
  // the sandbox provider its /pay waits for): on shared cores the API's requests go first; 0 runs them all alike
  // (docs/operations.md).
  BACKGROUND_NICE: z.coerce.number().int().min(0).max(19).default(10),
  // Not in the contract: answer searches from in-memory indexes (when SEARCH_CACHE_TTL_S ≥ 2); off: every search
  // reads PostgreSQL through the Redis cache.
  SEARCH_INDEX: z.enum(['on', 'off']).default('on'),
  REDIS_KEY_PREFIX: z.string().default(''),
  // Not in the contract: seconds the API keeps serving (with /ready at 503) after a stop signal.
  SHUTDOWN_DELAY_S: int(0),
  // Not in the contract: observability. The name on every log line (npm start sets it from the Procfile;
  // else the process's kind); a worker's metrics port (unset: METRICS_PORT_BASE + the kind's offset, 0: none).
  PROC_NAME: optionalString,
  METRICS_PORT: z.preprocess((v) => (v === '' ? undefined : v), z.coerce.number().int().min(0).max(65_535).optional()),
  METRICS_PORT_BASE: int(9100),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

export type Config = Omit<z.infer<typeof schema>, SecretName | 'PUBLIC_BASE_URL'> & Record<SecretName, string> & {
  PUBLIC_BASE_URL: string;
  pspUrl: string;
  kafkaBrokers: string[];
  /** REDIS_CLUSTER_NODES parsed (empty: a single Redis at REDIS_URL). */
  redisClusterNodes: { host: string; port: number }[];
};

const SECRETS = new Set(['JWT_SECRET', 'PAYMENT_WEBHOOK_SECRET', 'PSP_API_KEY', 'DASHBOARD_PASSWORD', 'DATABASE_URL', 'DATABASE_READ_URL', 'REDIS_URL']);

export class ConfigError extends Error {
  override name = 'ConfigError';
}

const isLoopback = (host: string) => /^(127(\.\d{1,3}){3}|::1|\[::1\]|localhost)$/i.test(host);

/**
 * Outside development and test (production, staging, ...) every secret must be set, the signing ones
 * at least 32 characters, and an external provider named unless PSP_SANDBOX=true. Names only, no values.
 */
function productionProblems(c: z.infer<typeof schema>): string[] {
  const problems = SECRET_NAMES.filter((n) => !c[n]).map((n) => `${n}: required when NODE_ENV=${c.NODE_ENV}`);
  for (const n of ['JWT_SECRET', 'PAYMENT_WEBHOOK_SECRET'] as const) {
    if (c[n] && c[n].length < 32) problems.push(`${n}: must be at least 32 characters`);
  }
  if (!c.NOTIFY_WEBHOOK_URL) problems.push(`NOTIFY_WEBHOOK_URL: required when NODE_ENV=${c.NODE_ENV} (a URL, or none to record notifications as skipped)`);
  if (!c.PSP_URL && !c.PSP_SANDBOX) problems.push(`PSP_URL: required when NODE_ENV=${c.NODE_ENV} (or PSP_SANDBOX=true for the sandbox provider)`);
  // PSP_SANDBOX=true in production is a deployment where no money moves (a demo, a staging). Its sandbox's
  // /sandbox/* routes confirm payments without money, so it stays on the loopback interface there: only this host
  // can reach it (compose's private-network exception runs the sandbox as PSP_URL, not with PSP_SANDBOX).
  if (c.PSP_SANDBOX && !isLoopback(c.PSP_HOST)) {
    problems.push(`PSP_HOST: must be a loopback address when PSP_SANDBOX=true and NODE_ENV=${c.NODE_ENV} (its /sandbox/* routes confirm payments without money)`);
  }
  return problems;
}

/**
 * A search may be SEARCH_CACHE_TTL_S stale (the contract): read on a replica, its cached answer lives
 * SEARCH_CACHE_TTL_S − replicaLagBudget seconds, so the replica's lag bound must leave the cache some room.
 */
function replicaProblem(c: z.infer<typeof schema>): string | null {
  if (!c.DATABASE_READ_URL || replicaLagBudget(c) < c.SEARCH_CACHE_TTL_S) return null;
  return `DATABASE_READ_MAX_LAG_S: must leave room under SEARCH_CACHE_TTL_S (${c.SEARCH_CACHE_TTL_S}) for the search cache: `
    + `at most ${c.SEARCH_CACHE_TTL_S - 2} (got ${c.DATABASE_READ_MAX_LAG_S})`;
}

/** Whole seconds a read on the replica may be stale: the lag bound and one probe interval (0.5 s), rounded up. */
export const replicaLagBudget = (c: Pick<Config, 'DATABASE_READ_URL' | 'DATABASE_READ_MAX_LAG_S'>): number =>
  c.DATABASE_READ_URL ? Math.ceil(c.DATABASE_READ_MAX_LAG_S + 0.5) : 0;

/** The process environment, with development secrets from the local secrets file. */
function processEnv(): Env {
  try {
    return withLocalSecrets(process.env);
  } catch (e) {
    throw new ConfigError(`invalid configuration:\n  LOCAL_SECRETS_FILE: ${(e as Error).message}`);
  }
}

/**
 * Parses the environment once; throws naming each bad variable, never echoing secret values.
 * Secrets not set in development or test get a random value for this process only (tests pass theirs;
 * the entries read the local secrets file through `processEnv`).
 */
export function parseConfig(env: Env = processEnv()): Config {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => {
      const name = String(i.path[0]);
      const value = SECRETS.has(name) ? '' : ` (got ${JSON.stringify(env[name])})`;
      return `${name}: ${i.message}${value}`;
    });
    throw new ConfigError(`invalid configuration:\n  ${lines.join('\n  ')}`);
  }
  const c = parsed.data;
  const readProblem = replicaProblem(c);
  if (readProblem) throw new ConfigError(`invalid configuration:\n  ${readProblem}`);
  const clusterNodes = parseClusterNodes(c.REDIS_CLUSTER_NODES);
  if (clusterNodes instanceof ConfigError) throw clusterNodes;
  if (!['development', 'test'].includes(c.NODE_ENV)) {
    const problems = productionProblems(c);
    if (problems.length) throw new ConfigError(`invalid configuration:\n  ${problems.join('\n  ')}`);
  }
  const secrets = Object.fromEntries(SECRET_NAMES.map((n) => [n, c[n] ?? randomSecret()])) as Record<SecretName, string>;
  const brokers = c.KAFKA_BROKERS === 'none' ? undefined : c.KAFKA_BROKERS;
  return {
    ...c,
    ...secrets,
    PUBLIC_BASE_URL: c.PUBLIC_BASE_URL ?? `http://127.0.0.1:${c.PORT}`,
    pspUrl: c.PSP_URL ?? `http://127.0.0.1:${c.PSP_PORT}`,
    kafkaBrokers: brokers ? brokers.split(',').map((s) => s.trim()).filter(Boolean) : [],
    redisClusterNodes: clusterNodes,
  };
}

/** `host:port,host:port` (IPv6 in brackets: `[::1]:7000`); a ConfigError naming the variable when malformed. */
function parseClusterNodes(value: string | undefined): { host: string; port: number }[] | ConfigError {
  if (!value) return [];
  const nodes = value.split(',').map((s) => s.trim()).filter(Boolean).map((s) => s.match(/^(\[[^\]]+\]|[^:\s]+):(\d{1,5})$/));
  if (nodes.length === 0 || nodes.some((m) => !m || Number(m[2]) < 1 || Number(m[2]) > 65_535)) {
    return new ConfigError(`invalid configuration:\n  REDIS_CLUSTER_NODES: expected host:port,host:port,… (got ${JSON.stringify(value)})`);
  }
  return nodes.map((m) => ({ host: m![1]!.replace(/^\[|\]$/g, ''), port: Number(m![2]) }));
}

let cached: Config | undefined;
export function config(): Config {
  cached ??= parseConfig();
  return cached;
}
