import { createHmac, randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import type { Harness } from './harness.js';
import { inHours, sleep, waitFor, type Reply } from './http.js';

/** Helpers shared by the payments / expiry / refunds / notifications / relay integration tests. */

const uid = () => randomUUID().replace(/-/g, '').slice(0, 16);
const nowS = () => Math.floor(Date.now() / 1000);

/** `t=<unix s>,v1=<hex HMAC-SHA256(secret, "t.body")>`, computed here, independently of shared/psp/signature.ts. */
export function pspSignature(secret: string, rawBody: string, t = nowS()): string {
  return `t=${t},v1=${createHmac('sha256', secret).update(`${t}.${rawBody}`).digest('hex')}`;
}

/** POSTs `body` (or `raw`) to the webhook, signed with the harness secret (overridable). */
export function signedWebhook(
  h: Harness,
  body: unknown,
  opts: { t?: number; secret?: string; raw?: string; signature?: string | null } = {},
): Promise<Reply> {
  const raw = opts.raw ?? JSON.stringify(body);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  const signature = opts.signature === undefined ? pspSignature(opts.secret ?? h.config.PAYMENT_WEBHOOK_SECRET, raw, opts.t) : opts.signature;
  if (signature !== null) headers['psp-signature'] = signature;
  return h.req('POST', '/payments/webhook', { raw, headers });
}

export interface SuccessOpts {
  id?: string;
  txn?: string;
  intent?: string;
  currency?: string;
  type?: string;
}

/** A provider `payment_intent.succeeded` event for booking `bookingId`. */
export function paymentSucceeded(bookingId: number | string, amount: number, o: SuccessOpts = {}) {
  return {
    id: o.id ?? `evt_${uid()}`,
    type: o.type ?? 'payment_intent.succeeded',
    created: nowS(),
    data: {
      paymentIntentId: o.intent ?? `pi_${uid()}`,
      reference: String(bookingId),
      amount,
      currency: o.currency ?? 'VND',
      providerTxnId: o.txn ?? `txn_${uid()}`,
    },
  };
}

export const HOST_ID = 900;
export const hostToken = (h: Harness) => h.token(HOST_ID, 'host');
export const operatorToken = (h: Harness) => h.token(1, 'operator');

let carSeq = 0;
export async function newCar(h: Harness, depositAmount = 2_000_000): Promise<number> {
  const r = await h.req('POST', '/cars', {
    token: hostToken(h),
    body: { plate: `P${uid().slice(0, 8)}-${carSeq++}`, model: 'Morning', city: 'HN', dailyPrice: 500_000, depositAmount },
  });
  expect(r.status, r.text).toBe(201);
  return r.json.id as number;
}

export interface Hold {
  id: number;
  carId: number;
  customerId: number;
  /** The owner's bearer token. */
  token: string;
  deposit: number;
  holdExpiresAt: Date;
}

let customerSeq = 0;
/** A HOLD on a fresh car, for a fresh customer (so the hold rate limit never interferes). */
export async function holdCar(h: Harness, o: { deposit?: number; fromHours?: number } = {}): Promise<Hold> {
  const carId = await newCar(h, o.deposit);
  const customerId = 50_000 + customerSeq++;
  const token = h.token(customerId, 'customer');
  const from = o.fromHours ?? 24 * 10;
  const r = await h.req('POST', '/bookings', { token, body: { carId, from: inHours(from), to: inHours(from + 4) } });
  expect(r.status, r.text).toBe(201);
  return { id: r.json.bookingId, carId, customerId, token, deposit: r.json.depositAmount, holdExpiresAt: new Date(r.json.holdExpiresAt) };
}

/** Runs `fn` for 0..n-1 with at most `limit` at a time. */
export async function mapLimit<T>(n: number, limit: number, fn: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = new Array(n);
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(n, limit) }, async () => {
    while (next < n) {
      const i = next++;
      out[i] = await fn(i);
    }
  }));
  return out;
}

/** GET /bookings/{id} as an operator. */
export async function getBooking(h: Harness, id: number) {
  const r = await h.req('GET', `/bookings/${id}`, { token: operatorToken(h) });
  expect(r.status, r.text).toBe(200);
  return r.json;
}

export async function statusOf(h: Harness, id: number): Promise<string> {
  return (await h.sql(`SELECT status FROM booking WHERE id = $1`, [id])).rows[0].status;
}

export interface OutboxEntry {
  id: number;
  eventId: string;
  topic: string;
  key: string;
  payload: Record<string, any>;
  publishedAt: Date | null;
  dispatchedAt: Date | null;
}

/** Outbox rows of one message key (bookingId), in id order. */
/** The outbox rows of one key (a booking), or all of them, in id order. */
export async function outboxOf(h: Harness, key?: number | string): Promise<OutboxEntry[]> {
  const { rows } = await h.sql(
    `SELECT id::int, event_id::text AS "eventId", topic, message_key AS key, payload, published_at AS "publishedAt",
            dispatched_at AS "dispatchedAt"
     FROM outbox WHERE $1::text IS NULL OR message_key = $1 ORDER BY id`,
    [key === undefined ? null : String(key)],
  );
  return rows;
}

export const topicsOf = (rows: OutboxEntry[]) => rows.map((r) => r.topic);

export async function count(h: Harness, text: string, params: unknown[] = []): Promise<number> {
  return Number((await h.sql(`SELECT count(*)::int AS n FROM (${text}) q`, params)).rows[0].n);
}

/** Waits until the booking's refunds are all settled; returns them, oldest first. */
export async function settledRefunds(h: Harness, bookingId: number, timeoutMs = 15_000) {
  return waitFor(async () => {
    const { rows } = await h.sql(`SELECT id::int, amount::int, status, payment_id::int AS "paymentId", payment_intent_id AS "paymentIntentId"
                                  FROM refund WHERE booking_id = $1 ORDER BY id`, [bookingId]);
    return rows.length > 0 && rows.every((r) => r.status !== 'PENDING') ? rows : null;
  }, timeoutMs);
}

/**
 * Waits until every outbox row is dispatched and the refund and notification queues have nothing
 * waiting, delayed or running; then checks once more after a short pause so a late job cannot slip by.
 */
export async function drained(h: Harness, timeoutMs = 15_000): Promise<void> {
  const idle = async () => {
    if ((await count(h, `SELECT 1 FROM outbox WHERE dispatched_at IS NULL`)) > 0) return false;
    for (const name of ['refunds', 'notifications']) {
      const c = await h.queues[name]!.getJobCounts('waiting', 'active', 'delayed', 'prioritized', 'waiting-children');
      if (Object.values(c).some((n) => n > 0)) return false;
    }
    return true;
  };
  await waitFor(idle, timeoutMs);
  await sleep(150);
  await waitFor(idle, timeoutMs);
}

/** Notification rows of a booking as "eventType/channel", sorted. */
export async function notificationsOf(h: Harness, bookingId: number): Promise<string[]> {
  const { rows } = await h.sql(`SELECT event_type, channel FROM notification WHERE booking_id = $1 ORDER BY event_type, channel`, [bookingId]);
  return rows.map((r) => `${r.event_type}/${r.channel}`);
}

/** POSTs to the sandbox provider's control API (`/sandbox/...`). */
export async function sandbox(h: Harness, path: string, body?: unknown) {
  const res = await fetch(`${h.config.pspUrl}/sandbox${path}`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body),
  });
  expect(res.status, await res.clone().text()).toBeLessThan(300);
  return res.json();
}

/** GET /bookings/{id}/pay as the owner: 303 to the checkout; returns the provider's intent id. */
export async function requestPay(h: Harness, b: Hold): Promise<string> {
  const r = await h.req('GET', `/bookings/${b.id}/pay`, { token: b.token });
  expect(r.status, r.text).toBe(303);
  const location = r.headers.get('location')!;
  const intentId = location.split('/').pop()!;
  expect(h.psp.state.intents.get(intentId)?.reference).toBe(String(b.id));
  return intentId;
}
