import { z } from 'zod';

// Empty strings count as unset: `PSP_URL=` means "no external provider", as in the contract.
const optionalString = z.preprocess((v) => (v === '' ? undefined : v), z.string().optional());
const int = (def: number, min = 0) => z.coerce.number().int().min(min).default(def);

const schema = z.object({
  NODE_ENV: z.string().default('development'),
  DATABASE_URL: z.string().url().default('postgres://postgres@127.0.0.1:5432/booking'),
  REDIS_URL: z.string().url().default('redis://127.0.0.1:6379'),
  KAFKA_BROKERS: optionalString,
  KAFKA_TOPIC_PREFIX: z.string().default(''),
  PORT: int(3000),
  DASHBOARD_PORT: int(3001),
  PSP_PORT: int(4000),
  PSP_URL: z.preprocess((v) => (v === '' ? undefined : v), z.string().url().optional()),
  PSP_API_KEY: z.string().default('sandbox-key'),
  PUBLIC_BASE_URL: z.string().url().default('http://127.0.0.1:3000'),
  JWT_SECRET: z.string().min(1).default('dev-jwt-secret'),
  PAYMENT_WEBHOOK_SECRET: z.string().min(1).default('dev-webhook-secret'),
  HOLD_TTL_S: int(900, 1),
  HOLD_RATE_LIMIT: int(3, 1),
  HOLD_RATE_WINDOW_S: int(900, 1),
  PAYMENT_GRACE_S: int(600),
  SEARCH_CACHE_TTL_S: int(30),
  QUOTE_TTL_S: int(900, 1),
  DASHBOARD_USER: z.string().default('admin'),
  DASHBOARD_PASSWORD: z.string().default('admin'),
  NOTIFY_WEBHOOK_URL: z.preprocess((v) => (v === '' ? undefined : v), z.string().url().optional()),
  // Not in the contract. The sandbox provider's bind address (the contract: 127.0.0.1 only; containers
  // that reach it by service name set 0.0.0.0) and the base of its checkout URLs when it sits behind one.
  PSP_HOST: z.string().min(1).default('127.0.0.1'),
  PSP_PUBLIC_URL: z.preprocess((v) => (v === '' ? undefined : v), z.string().url().optional()),
  // Not in the contract: namespaces for sharing one Redis between deployments (and test runs).
  QUEUE_PREFIX: z.string().regex(/^[\w-]+$/).default('bull'),
  REDIS_KEY_PREFIX: z.string().default(''),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

export type Config = z.infer<typeof schema> & { pspUrl: string; kafkaBrokers: string[] };

const SECRETS = new Set(['JWT_SECRET', 'PAYMENT_WEBHOOK_SECRET', 'PSP_API_KEY', 'DASHBOARD_PASSWORD', 'DATABASE_URL', 'REDIS_URL']);

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Parses the environment once; throws naming each bad variable, never echoing secret values. */
export function parseConfig(env: Record<string, string | undefined> = process.env): Config {
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
  // The defaults of these are public (they are in this file): only development and tests may run on them.
  if (!['development', 'test'].includes(c.NODE_ENV)) {
    const missing = ['JWT_SECRET', 'PAYMENT_WEBHOOK_SECRET', 'PSP_API_KEY', 'DASHBOARD_PASSWORD'].filter((name) => !env[name]);
    if (missing.length) {
      throw new ConfigError(`invalid configuration:\n  ${missing.map((n) => `${n}: required when NODE_ENV=${c.NODE_ENV}`).join('\n  ')}`);
    }
  }
  return {
    ...c,
    pspUrl: c.PSP_URL ?? `http://127.0.0.1:${c.PSP_PORT}`,
    kafkaBrokers: c.KAFKA_BROKERS ? c.KAFKA_BROKERS.split(',').map((s) => s.trim()).filter(Boolean) : [],
  };
}

let cached: Config | undefined;
export function config(): Config {
  cached ??= parseConfig();
  return cached;
}
