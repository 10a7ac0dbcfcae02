import { expect } from 'vitest';
import type { Harness } from './harness.js';
import { sleep, waitFor } from './http.js';

/** Reading what happened to bookings: their status, events, refunds and notifications. */

export const OPERATOR_ID = 1;
export const operatorToken = (h: Harness) => h.token(OPERATOR_ID, 'operator');

/** GET /bookings/{id} as an operator. */
export async function getBooking(h: Harness, id: number) {
  const r = await h.req('GET', `/bookings/${id}`, { token: operatorToken(h) });
  expect(r.status, r.text).toBe(200);
  return r.json;
}

export async function statusOf(h: Harness, id: number): Promise<string> {
  return (await h.sql(`SELECT status FROM booking WHERE id = $1`, [id])).rows[0].status;
}

/** How many bookings exist (to show a refused request wrote nothing). */
export const bookingCount = (h: Harness) => count(h, 'SELECT 1 FROM booking');

export interface OutboxEntry {
  id: number;
  eventId: string;
  topic: string;
  key: string;
  payload: Record<string, any>;
  publishedAt: Date | null;
}

/** The outbox rows of one key (a booking), or all of them, in id order. */
export async function outboxOf(h: Harness, key?: number | string): Promise<OutboxEntry[]> {
  const { rows } = await h.sql(
    `SELECT id::int, event_id::text AS "eventId", topic, message_key AS key, payload, published_at AS "publishedAt"
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
 * Waits until no notification is unsent and no refund is PENDING (their due rows in PostgreSQL, written with their
 * events: nothing waiting, due later or running); then checks once more after a short pause so late work cannot
 * slip by.
 */
export async function drained(h: Harness, timeoutMs = 15_000): Promise<void> {
  const idle = async () => {
    if ((await count(h, `SELECT 1 FROM notification WHERE sent_at IS NULL`)) > 0) return false;
    return (await count(h, `SELECT 1 FROM refund WHERE status = 'PENDING'`)) === 0;
  };
  await waitFor(idle, timeoutMs);
  await sleep(150);
  await waitFor(idle, timeoutMs);
}

/** Notification rows of a booking as "eventType/channel", sorted. */
export async function notificationsOf(h: Harness, bookingId: number): Promise<string[]> {
  const { rows } = await h.sql(`SELECT event_type, channel FROM notification WHERE booking_id = $1 AND sent_at IS NOT NULL
                                ORDER BY event_type, channel`, [bookingId]);
  return rows.map((r) => `${r.event_type}/${r.channel}`);
}
