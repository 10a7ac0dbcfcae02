import { describe, expect, it } from 'vitest';
import { queueConnection } from '../../shared/queues/queues.js';
import { requestRedis } from '../../shared/runtime.js';
import { redisTls } from '../../shared/redis-tls.js';

// Issue 8, item 10: `REDIS_URL=rediss://…` must mean TLS for every Redis client of every process. BullMQ's
// connection (queues, workers, the pump's producers, the dashboard) dropped it; the request-path client (the API's
// limiter and cache, the pump's probe) gets it from the same place.

describe('rediss:// is TLS everywhere', () => {
  it('BullMQ connections (workers, queues, pump, dashboard) carry tls, with the host name for SNI', () => {
    const c = queueConnection('rediss://app:p%40ss@redis.example.com:6380/3') as Record<string, unknown>;
    expect(c).toMatchObject({ host: 'redis.example.com', port: 6380, db: 3, username: 'app', password: 'p@ss', maxRetriesPerRequest: null });
    expect(c.tls).toEqual({ servername: 'redis.example.com' });
  });

  it('an IP address gets TLS without SNI; redis:// stays plain', () => {
    expect((queueConnection('rediss://10.0.0.5:6380') as Record<string, unknown>).tls).toEqual({});
    expect(queueConnection('rediss://[::1]:6380')).toMatchObject({ host: '::1', tls: {} });
    expect('tls' in queueConnection('redis://127.0.0.1:6379/5')).toBe(false);
    expect(redisTls('redis://cache.internal:6379')).toEqual({});
  });

  it('the request-path client (API limiter and search cache, pump probe) carries tls too', () => {
    const tlsClient = requestRedis('rediss://cache.example.com:6380/2', 'p:', { lazyConnect: true });
    const plain = requestRedis('redis://127.0.0.1:6379/2', 'p:', { lazyConnect: true });
    try {
      expect(tlsClient.options.tls).toMatchObject({ servername: 'cache.example.com' });
      expect(tlsClient.options).toMatchObject({ host: 'cache.example.com', port: 6380, db: 2, keyPrefix: 'p:' });
      expect(plain.options.tls).toBeUndefined();
    } finally {
      tlsClient.disconnect();
      plain.disconnect();
    }
  });
});
