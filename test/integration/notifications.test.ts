import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { inHours, waitFor } from '../helpers/http.js';
import { drained, notificationsOf, outboxOf, settledRefunds, statusOf } from '../helpers/bookings.js';
import { holdCar, hostToken, newCar, type Hold } from '../helpers/cars.js';
import { sandbox } from '../helpers/sandbox.js';
import { paymentSucceeded, signedWebhook } from '../helpers/webhooks.js';

/** Stands in for the sms/push gateway (NOTIFY_WEBHOOK_URL): records what it accepted, can fail on demand. */
const gateway = {
  accepted: [] as { eventId: string; eventType: string; bookingId: number; channel: string; recipient: number; key?: string }[],
  failNext: 0,
  refused: 0,
};
let gatewayServer: Server;
let h: Harness;

beforeAll(async () => {
  gatewayServer = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (gateway.failNext > 0) {
        gateway.failNext--;
        gateway.refused++;
        res.writeHead(503).end();
        return;
      }
      const key = req.headers['idempotency-key'];
      gateway.accepted.push({ ...JSON.parse(Buffer.concat(chunks).toString('utf8')), key: typeof key === 'string' ? key : undefined });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => gatewayServer.listen(0, '127.0.0.1', r));
  const notifyUrl = `http://127.0.0.1:${(gatewayServer.address() as AddressInfo).port}/notify`;
  h = await startHarness({ workers: true, env: { NOTIFY_WEBHOOK_URL: notifyUrl, HOLD_RATE_LIMIT: '1000' } });
});
afterEach(async () => {
  gateway.failNext = 0;
  await sandbox(h).idle(); // late refund webhooks land before the next test
});
afterAll(async () => {
  await h?.close();
  await new Promise((r) => gatewayServer?.close(r));
});

const sentFor = (bookingId: number) =>
  gateway.accepted.filter((n) => n.bookingId === bookingId).map((n) => `${n.eventType}/${n.channel}`).sort();

async function confirmed(): Promise<Hold> {
  const b = await holdCar(h);
  expect((await signedWebhook(h, paymentSucceeded(b.id, b.deposit))).status).toBe(200);
  expect(await statusOf(h, b.id)).toBe('CONFIRMED');
  return b;
}

/** Confirmed, then cancelled by the host (100% refund), refund paid: 3 notified events × 2 channels. */
async function fullLifecycle(): Promise<Hold> {
  const b = await confirmed();
  const c = await h.req('POST', `/bookings/${b.id}/cancel`, { token: hostToken(h), body: { reason: 'car broke down' } });
  expect(c.status, c.text).toBe(200);
  expect(c.json).toMatchObject({ status: 'CANCELLED', refundAmount: b.deposit });
  await settledRefunds(h, b.id);
  await drained(h);
  return b;
}

const notificationRows = async (bookingId: number) =>
  (await h.sql(`SELECT event_id::text, channel, event_type, recipient::int, body, sent_at FROM notification WHERE booking_id = $1
                ORDER BY event_id, channel`, [bookingId])).rows;

describe('notifications', () => {
  it('sms and push once per notified event of a booking, matching what the gateway received', async () => {
    const b = await fullLifecycle();
    const expected = [
      'booking.cancelled/push', 'booking.cancelled/sms', 'booking.confirmed/push', 'booking.confirmed/sms',
      'refund.succeeded/push', 'refund.succeeded/sms',
    ];
    expect(await notificationsOf(h, b.id)).toEqual(expected);
    expect(sentFor(b.id)).toEqual(expected);
    const rows = await notificationRows(b.id);
    expect(rows.every((r) => r.recipient === b.customerId)).toBe(true);
    // One row per (event, channel), and the events are the outbox's own.
    const events = await outboxOf(h, b.id);
    for (const r of rows) expect(events.find((e) => e.eventId === r.event_id)?.topic).toBe(r.event_type);
  });

  it('a notification whose sender died after the gateway took it goes again with the same Idempotency-Key, and only it', async () => {
    const b = await fullLifecycle();
    const before = await notificationRows(b.id);
    const sentBefore = gateway.accepted.length;
    expect(sentFor(b.id)).toHaveLength(6);
    for (const n of gateway.accepted.filter((a) => a.bookingId === b.id)) expect(n.key).toBe(`${n.eventId}:${n.channel}`);
    // As a worker killed between the gateway's answer and its UPDATE leaves the row: unsent, lease run out.
    const [lost] = before;
    await h.sql(`UPDATE notification SET sent_at = NULL, next_attempt_at = now() WHERE event_id = $1 AND channel = $2`, [lost.event_id, lost.channel]);
    await waitFor(async () => (await notificationRows(b.id)).every((r) => r.sent_at !== null));
    await drained(h);
    expect(gateway.accepted.length).toBe(sentBefore + 1);
    // The repeat carries the first delivery's key: the gateway can tell it is the same message.
    expect(gateway.accepted.at(-1)!.key).toBe(`${lost.event_id}:${lost.channel}`);
    expect(new Set(gateway.accepted.filter((a) => a.bookingId === b.id).map((a) => a.key)).size).toBe(6);
  });

  // Review finding: the claim cast recipient (bigint) to int; a customer id over 2^31 failed every claim of the
  // notifications due with it, and, those staying first in line, every claim after: no notification for anyone.
  it('a customer id beyond 32 bits is notified, and so is everyone after', async () => {
    const carId = await newCar(h);
    const sub = 3_000_000_000 + Math.floor(Math.random() * 1_000_000);
    const token = h.token(sub, 'customer');
    const r = await h.req('POST', '/bookings', { token, body: { carId, from: inHours(240), to: inHours(244) } });
    expect(r.status, r.text).toBe(201);
    expect((await h.req('POST', `/bookings/${r.json.bookingId}/cancel`, { token, body: {} })).status).toBe(200);
    const after = await holdCar(h);
    expect((await h.req('POST', `/bookings/${after.id}/cancel`, { token: after.token, body: {} })).status).toBe(200);
    await waitFor(async () => sentFor(r.json.bookingId).length === 2 && sentFor(after.id).length === 2, 10_000);
    expect(gateway.accepted.filter((n) => n.bookingId === r.json.bookingId).map((n) => n.recipient)).toEqual([sub, sub]);
  });

  it('a gateway failure is retried and the message still goes out once', async () => {
    gateway.failNext = 2;
    const refusedBefore = gateway.refused;
    const b = await confirmed();
    await waitFor(async () => (await notificationsOf(h, b.id)).length === 2, 15_000);
    await drained(h);
    expect(gateway.refused - refusedBefore).toBe(2);
    expect(sentFor(b.id)).toEqual(['booking.confirmed/push', 'booking.confirmed/sms']);
    expect(await notificationsOf(h, b.id)).toEqual(['booking.confirmed/push', 'booking.confirmed/sms']);
  });
});
