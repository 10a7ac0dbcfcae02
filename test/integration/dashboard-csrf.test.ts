import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../shared/config.js';
import { redisClient } from '../../shared/redis.js';
import { createDashboard } from '../../dashboards/server.js';
import { QUEUES } from '../../shared/queues/registry.js';

describe('dashboard: cross-site requests', () => {
  const config = parseConfig({ DASHBOARD_USER: 'ops', DASHBOARD_PASSWORD: 'pw', REDIS_URL: 'redis://127.0.0.1:6379/5', QUEUE_PREFIX: `csrf${Date.now()}` });
  const auth = `Basic ${Buffer.from('ops:pw').toString('base64')}`;
  const name = QUEUES.maintenance.name;
  const connection = redisClient(config, 'producer');
  let server: Server;
  let close: () => Promise<unknown>;
  let base: string;
  let host: string;
  let queue: Queue;

  beforeAll(async () => {
    const d = await createDashboard(config);
    close = d.close;
    server = d.app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
    base = `http://${host}/admin/queues`;
    queue = new Queue(name, { connection, prefix: config.QUEUE_PREFIX });
  });
  afterAll(async () => {
    await queue?.obliterate({ force: true }).catch(() => {});
    await queue?.close();
    connection.disconnect();
    server?.close();
    await close?.();
  });

  const pause = (headers: Record<string, string>) =>
    fetch(`${base}/api/queues/${encodeURIComponent(name)}/pause`, { method: 'PUT', headers: { authorization: auth, ...headers } });

  it('refuses actions from another site, or without proof of coming from the dashboard page', async () => {
    const refused: Record<string, string>[] = [
      { 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' },
      { 'sec-fetch-site': 'same-site', origin: 'https://other.127.0.0.1.example' },
      { 'sec-fetch-site': 'cross-site', origin: `http://${host}` },
      { 'sec-fetch-site': 'none' },
      { origin: 'https://evil.example' },
      { origin: 'null' },
      {},
    ];
    for (const headers of refused) {
      const res = await pause(headers);
      expect(res.status, JSON.stringify(headers)).toBe(403);
      expect((await res.json()).error.code).toBe('FORBIDDEN');
    }
    expect(await queue.isPaused()).toBe(false);
  });

  it('asks for credentials first, and leaves reads open to the signed-in user', async () => {
    expect((await fetch(`${base}/api/queues/${encodeURIComponent(name)}/pause`, { method: 'PUT', headers: { 'sec-fetch-site': 'cross-site' } })).status).toBe(401);
    const read = await fetch(`${base}/api/queues`, { headers: { authorization: auth, 'sec-fetch-site': 'cross-site' } });
    expect(read.status).toBe(200);
    expect(read.headers.get('x-frame-options')).toBe('DENY');
    expect(read.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
  });

  it('accepts actions from its own page (Sec-Fetch-Site or Origin) and from scripts sending X-Requested-With', async () => {
    expect((await pause({ 'sec-fetch-site': 'same-origin', origin: `http://${host}` })).status).toBe(200);
    expect(await queue.isPaused()).toBe(true);
    await queue.resume();
    expect((await pause({ origin: `http://${host}` })).status).toBe(200);
    expect(await queue.isPaused()).toBe(true);
    await queue.resume();
    expect((await pause({ 'x-requested-with': 'curl' })).status).toBe(200);
    expect(await queue.isPaused()).toBe(true);
  });
});
