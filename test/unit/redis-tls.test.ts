import { describe, expect, it } from 'vitest';
import type { Cluster, Redis } from 'ioredis';
import { parseConfig } from '../../shared/config.js';
import { redisClient } from '../../shared/redis.js';
import { redisTls } from '../../shared/redis-tls.js';

// `REDIS_URL=rediss://…` must mean TLS for every Redis client of every process (BullMQ's workers and producers, the
// dashboard, the API's limiter and cache): they all come from one factory (shared/redis.ts), which also builds a
// Cluster client when REDIS_CLUSTER_NODES is set, with the URL's credentials and TLS.

const client = (env: Record<string, string>, role: Parameters<typeof redisClient>[1], keyPrefix?: string) =>
  redisClient(parseConfig(env), role, { keyPrefix, lazyConnect: true });

describe('rediss:// is TLS everywhere', () => {
  it('worker and producer connections carry tls, with the host name for SNI, and the URL\'s credentials and database', () => {
    const worker = client({ REDIS_URL: 'rediss://app:p%40ss@redis.example.com:6380/3' }, 'worker') as Redis;
    const producer = client({ REDIS_URL: 'rediss://app:p%40ss@redis.example.com:6380/3' }, 'producer') as Redis;
    try {
      expect(worker.options).toMatchObject({ host: 'redis.example.com', port: 6380, db: 3, username: 'app', password: 'p@ss', maxRetriesPerRequest: null });
      expect(worker.options.tls).toEqual({ servername: 'redis.example.com' });
      // A producer fails fast: no offline queue, one retry, a short timeout.
      expect(producer.options).toMatchObject({ enableOfflineQueue: false, maxRetriesPerRequest: 1, tls: { servername: 'redis.example.com' } });
      expect(producer.options.commandTimeout).toBeLessThanOrEqual(500);
    } finally {
      worker.disconnect();
      producer.disconnect();
    }
  });

  it('an IP address gets TLS without SNI; redis:// stays plain', () => {
    const ip = client({ REDIS_URL: 'rediss://10.0.0.5:6380' }, 'worker') as Redis;
    const v6 = client({ REDIS_URL: 'rediss://[::1]:6380' }, 'worker') as Redis;
    const plain = client({ REDIS_URL: 'redis://127.0.0.1:6379/5' }, 'worker') as Redis;
    try {
      expect(ip.options.tls).toEqual({});
      expect(v6.options).toMatchObject({ host: '::1', tls: {} });
      expect(plain.options.tls).toBeUndefined();
      expect(redisTls('redis://cache.internal:6379')).toEqual({});
    } finally {
      for (const c of [ip, v6, plain]) c.disconnect();
    }
  });

  it('the request-path client (API limiter and search cache) carries tls and the key prefix', () => {
    const tlsClient = client({ REDIS_URL: 'rediss://cache.example.com:6380/2' }, 'request', 'p:') as Redis;
    try {
      expect(tlsClient.options).toMatchObject({ host: 'cache.example.com', port: 6380, db: 2, keyPrefix: 'p:', tls: { servername: 'cache.example.com' } });
    } finally {
      tlsClient.disconnect();
    }
  });

  it('REDIS_CLUSTER_NODES wins over REDIS_URL: a Cluster client of those nodes, with the URL\'s credentials and TLS', () => {
    const c = client({ REDIS_URL: 'rediss://app:pw@redis.example.com:6380', REDIS_CLUSTER_NODES: '10.0.0.1:7000, 10.0.0.2:7001,[::1]:7002' }, 'worker', undefined) as Cluster;
    try {
      expect(c.isCluster).toBe(true);
      expect((c as unknown as { startupNodes: unknown }).startupNodes).toEqual([{ host: '10.0.0.1', port: 7000 }, { host: '10.0.0.2', port: 7001 }, { host: '::1', port: 7002 }]);
      expect(c.options.redisOptions).toMatchObject({ username: 'app', password: 'pw', maxRetriesPerRequest: null, tls: { servername: 'redis.example.com' } });
    } finally {
      c.disconnect();
    }
    expect(() => parseConfig({ REDIS_CLUSTER_NODES: '10.0.0.1' })).toThrow(/REDIS_CLUSTER_NODES/);
    expect(() => parseConfig({ REDIS_CLUSTER_NODES: 'a:99999' })).toThrow(/REDIS_CLUSTER_NODES/);
  });
});
