import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { waitFor } from '../helpers/http.js';
import { holdCar } from '../helpers/cars.js';
import { startKafkaPump } from '../helpers/kafka.js';
import { ROOT } from '../helpers/processes.js';

// `npm run events -- --booking N`: this deployment's events only, in time order, and it ends by itself.
// Two deployments (databases) share one broker and one topic prefix, as test runs and staging copies do: both have
// a booking 1.

const BROKERS = ['127.0.0.1:9092'];
const prefix = `evcli${randomUUID().slice(0, 8)}.`;
let a: Harness;
let b: Harness;
const pumps: { stop(): Promise<void> }[] = [];

beforeAll(async () => {
  a = await startHarness();
  b = await startHarness();
  for (const h of [a, b]) {
    const hold = await holdCar(h);
    expect(hold.id).toBe(1);
    expect((await h.req('POST', `/bookings/${hold.id}/cancel`, { token: hold.token, body: {} })).status).toBe(200);
    pumps.push(startKafkaPump(h.deps.prepared, prefix, BROKERS));
  }
  await waitFor(async () => {
    const left = await Promise.all([a, b].map((h) => h.sql('SELECT 1 FROM outbox WHERE published_at IS NULL')));
    return left.every((r) => r.rowCount === 0);
  }, 30_000, 100);
}, 90_000);
afterAll(async () => {
  for (const p of pumps) await p.stop();
  await a?.close();
  await b?.close();
});

function events(h: Harness, args: string[]) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/events.ts', ...args], {
    cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH!, NODE_ENV: 'test', LOG_LEVEL: 'silent', DATABASE_URL: h.config.DATABASE_URL, KAFKA_BROKERS: BROKERS.join(','), KAFKA_TOPIC_PREFIX: prefix },
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const timeout = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return exited.then((code) => {
    clearTimeout(timeout);
    return { code, lines: out.split('\n').filter(Boolean), err };
  });
}

const eventIdsOf = async (h: Harness) =>
  (await h.sql(`SELECT event_id::text AS id, payload->>'occurredAt' AS at FROM outbox ORDER BY payload->>'occurredAt', id`)).rows as { id: string; at: string }[];

describe('npm run events', () => {
  it('--booking 1 prints only this deployment\'s events of booking 1, oldest first, and ends by itself', async () => {
    const mine = await eventIdsOf(a);
    const theirs = new Set((await eventIdsOf(b)).map((e) => e.id));
    expect(mine.length).toBeGreaterThanOrEqual(2); // booking.held, booking.cancelled
    const t0 = Date.now();
    const r = await events(a, ['--from-beginning', '--booking', '1']);
    // Regression: it printed booking 1 of every database on the broker, in topic-read order, and ran until Ctrl-C.
    expect(r.code, r.err).toBe(0);
    expect(Date.now() - t0).toBeLessThan(60_000);
    const printed = r.lines.map((l) => JSON.parse(l.slice(l.indexOf('{'))) as { eventId: string; occurredAt: string; bookingId: number });
    expect(printed.map((e) => e.eventId)).toEqual(mine.map((e) => e.id));
    for (const e of printed) expect(theirs.has(e.eventId)).toBe(false);
    const times = printed.map((e) => e.occurredAt);
    expect(times).toEqual([...times].sort());
    expect(r.err).toMatch(/all \d+ events of booking 1/);
  }, 90_000);

  it('--from-beginning without --booking ends at the end of what was there, with this deployment\'s events only', async () => {
    const r = await events(b, ['--from-beginning']);
    expect(r.code, r.err).toBe(0);
    const printed = r.lines.map((l) => (JSON.parse(l.slice(l.indexOf('{'))) as { eventId: string }).eventId);
    expect(printed.sort()).toEqual((await eventIdsOf(b)).map((e) => e.id).sort());
  }, 90_000);

  it('says so when the booking is not this deployment\'s', async () => {
    const r = await events(a, ['--booking', '999999']);
    expect(r.code).toBe(1);
    expect(r.err).toContain('booking 999999 has no events');
  }, 60_000);
});
