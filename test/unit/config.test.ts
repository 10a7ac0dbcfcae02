import { describe, expect, it } from 'vitest';
import { availableParallelism } from 'node:os';
import { parseConfig, ConfigError, defaultApiWorkers } from '../../shared/config.js';

describe('config', () => {
  it('runs one API process per core by default, at most 4; API_WORKERS sets it', () => {
    expect([1, 2, 3, 4, 8, 64].map((cores) => defaultApiWorkers(cores))).toEqual([1, 2, 3, 4, 4, 4]);
    expect(parseConfig({}).API_WORKERS).toBe(Math.min(4, availableParallelism()));
    expect(parseConfig({ API_WORKERS: '1' }).API_WORKERS).toBe(1);
    expect(parseConfig({ API_WORKERS: '' }).API_WORKERS, 'empty, as compose passes an unset variable').toBe(Math.min(4, availableParallelism()));
  });

  it('applies the contract defaults', () => {
    const c = parseConfig({});
    expect(c.PORT).toBe(3000);
    expect(c.HOLD_TTL_S).toBe(900);
    expect(c.HOLD_RATE_LIMIT).toBe(3);
    expect(c.PAYMENT_GRACE_S).toBe(600);
    expect(c.pspUrl).toBe('http://127.0.0.1:4000');
    expect(c.kafkaBrokers).toEqual([]);
  });
  it('treats empty PSP_URL and KAFKA_BROKERS as unset', () => {
    const c = parseConfig({ PSP_URL: '', KAFKA_BROKERS: '', PSP_PORT: '4100' });
    expect(c.PSP_URL).toBeUndefined();
    expect(c.pspUrl).toBe('http://127.0.0.1:4100');
    expect(parseConfig({ KAFKA_BROKERS: 'a:1, b:2' }).kafkaBrokers).toEqual(['a:1', 'b:2']);
  });
  it('derives the defaults that depend on a port from that port (PUBLIC_BASE_URL from PORT, the provider from PSP_PORT)', () => {
    // Regression: PORT=3100 left PUBLIC_BASE_URL at :3000, so paymentUrl, the sandbox's webhooks and the
    // OpenAPI server list pointed at a port nothing listened on, and a paid hold stayed HOLD.
    const c = parseConfig({ PORT: '3100', PSP_PORT: '4100' });
    expect(c.PUBLIC_BASE_URL).toBe('http://127.0.0.1:3100');
    expect(c.pspUrl).toBe('http://127.0.0.1:4100');
    expect(parseConfig({}).PUBLIC_BASE_URL).toBe('http://127.0.0.1:3000');
    // Given explicitly, it wins (a proxy in front of the api).
    expect(parseConfig({ PORT: '3100', PUBLIC_BASE_URL: 'https://booking.example' }).PUBLIC_BASE_URL).toBe('https://booking.example');
  });
  it('fails fast naming the bad variable', () => {
    expect(() => parseConfig({ HOLD_TTL_S: 'soon' })).toThrow(/HOLD_TTL_S/);
    expect(() => parseConfig({ PORT: '-1' })).toThrow(ConfigError);
  });
  it('never echoes secret values', () => {
    let thrown: unknown;
    expect(() => {
      try {
        parseConfig({ DATABASE_URL: 'not a url with secret-password' });
      } catch (e) {
        thrown = e;
        throw e;
      }
    }).toThrow(ConfigError);
    expect(String(thrown)).toMatch(/DATABASE_URL/);
    expect(String(thrown)).not.toMatch(/secret-password/);
  });
  it('requires real secrets in production', () => {
    expect(() => parseConfig({ NODE_ENV: 'production', PAYMENT_WEBHOOK_SECRET: 'x' })).toThrow(/JWT_SECRET/);
  });
});
