import { describe, expect, it } from 'vitest';
import { parseConfig, ConfigError } from '../../shared/config.js';

const strong = (c: string) => c.repeat(40);
const production = {
  NODE_ENV: 'production',
  JWT_SECRET: strong('j'),
  PAYMENT_WEBHOOK_SECRET: strong('w'),
  PSP_API_KEY: 'psp-key-value',
  DASHBOARD_PASSWORD: 'dashboard-password-value',
  PSP_URL: 'https://psp.example.com',
  NOTIFY_WEBHOOK_URL: 'https://notify.example.com/hook',
};
const without = (...names: string[]) => Object.fromEntries(Object.entries(production).filter(([k]) => !names.includes(k)));
const messageOf = (env: Record<string, string>) => {
  try {
    parseConfig(env);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as Error).message;
  }
  throw new Error('expected a ConfigError');
};

describe('config: secrets', () => {
  it('accepts a complete production configuration', () => {
    const c = parseConfig(production);
    expect(c.JWT_SECRET).toBe(production.JWT_SECRET);
    expect(c.pspUrl).toBe('https://psp.example.com');
  });

  it('names every missing secret in production, and PSP_URL', () => {
    const m = messageOf({ NODE_ENV: 'production' });
    for (const n of ['JWT_SECRET', 'PAYMENT_WEBHOOK_SECRET', 'PSP_API_KEY', 'DASHBOARD_PASSWORD', 'PSP_URL']) expect(m).toContain(n);
    for (const n of Object.keys(production).filter((k) => k !== 'NODE_ENV')) {
      expect(messageOf(without(n))).toContain(`${n}: required`);
    }
  });

  it('NOTIFY_WEBHOOK_URL: a URL or none in production (named when missing); in development unset means the log', () => {
    expect(messageOf(without('NOTIFY_WEBHOOK_URL'))).toContain('NOTIFY_WEBHOOK_URL: required when NODE_ENV=production');
    expect(parseConfig({ ...production, NOTIFY_WEBHOOK_URL: 'none' }).NOTIFY_WEBHOOK_URL).toBe('none');
    expect(messageOf({ ...production, NOTIFY_WEBHOOK_URL: 'not a url' })).toContain('NOTIFY_WEBHOOK_URL');
    expect(parseConfig({}).NOTIFY_WEBHOOK_URL).toBeUndefined();
  });

  it('treats an empty secret as missing', () => {
    expect(messageOf({ ...production, DASHBOARD_PASSWORD: '' })).toContain('DASHBOARD_PASSWORD: required');
  });

  it('needs no PSP_URL when PSP_SANDBOX=true says the sandbox provider is meant', () => {
    const c = parseConfig({ ...without('PSP_URL'), PSP_SANDBOX: 'true', PSP_PORT: '4100' });
    expect(c.PSP_SANDBOX).toBe(true);
    expect(c.pspUrl).toBe('http://127.0.0.1:4100');
    expect(messageOf({ ...without('PSP_URL'), PSP_SANDBOX: 'false' })).toContain('PSP_URL');
    expect(() => parseConfig({ ...production, PSP_SANDBOX: 'maybe' })).toThrow(/PSP_SANDBOX/);
  });

  it('requires at least 32 characters for the signing secrets, without echoing them', () => {
    const short = { JWT_SECRET: 'j'.repeat(31), PAYMENT_WEBHOOK_SECRET: 'short-webhook-secret' };
    const m = messageOf({ ...production, ...short });
    expect(m).toContain('JWT_SECRET: must be at least 32 characters');
    expect(m).toContain('PAYMENT_WEBHOOK_SECRET: must be at least 32 characters');
    expect(m).not.toContain(short.JWT_SECRET);
    expect(m).not.toContain(short.PAYMENT_WEBHOOK_SECRET);
    expect(() => parseConfig({ ...production, JWT_SECRET: 'j'.repeat(32) })).not.toThrow();
  });

  it('never echoes any secret value, whatever else is wrong', () => {
    const env = { ...production, JWT_SECRET: 'tiny-jwt', PORT: 'not-a-port', DATABASE_URL: 'bad url with pg-password' };
    const m = messageOf(env);
    expect(m).toMatch(/PORT/);
    for (const v of ['tiny-jwt', production.PAYMENT_WEBHOOK_SECRET, production.PSP_API_KEY, production.DASHBOARD_PASSWORD, 'pg-password']) {
      expect(m).not.toContain(v);
    }
  });

  it('applies the same rules to any NODE_ENV other than development and test', () => {
    expect(messageOf({ NODE_ENV: 'staging' })).toContain('JWT_SECRET: required when NODE_ENV=staging');
  });

  it('has no public defaults: unset secrets in development or test are random, per process', () => {
    for (const NODE_ENV of ['development', 'test']) {
      const a = parseConfig({ NODE_ENV });
      const b = parseConfig({ NODE_ENV });
      for (const n of ['JWT_SECRET', 'PAYMENT_WEBHOOK_SECRET', 'PSP_API_KEY', 'DASHBOARD_PASSWORD'] as const) {
        expect(a[n].length).toBeGreaterThanOrEqual(32);
        expect(a[n]).not.toBe(b[n]);
        expect(['dev-jwt-secret', 'dev-webhook-secret', 'admin', 'sandbox-key']).not.toContain(a[n]);
      }
    }
    expect(parseConfig({ NODE_ENV: 'test', JWT_SECRET: 'given' }).JWT_SECRET).toBe('given');
  });

  it('KAFKA_BROKERS=none means no broker; the sandbox binds 127.0.0.1 by default', () => {
    expect(parseConfig({ KAFKA_BROKERS: 'none' }).kafkaBrokers).toEqual([]);
    expect(parseConfig({}).PSP_HOST).toBe('127.0.0.1');
  });
});
