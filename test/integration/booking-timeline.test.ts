import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { waitFor } from '../helpers/http.js';
import { holdCar, hostToken, requestPay, type Hold } from '../helpers/cars.js';
import { drained, operatorToken, statusOf } from '../helpers/bookings.js';
import { newCustomer } from '../helpers/customers.js';
import { sandbox } from '../helpers/sandbox.js';
import { SECRET_NAMES } from '../../shared/local-secrets.js';

// GET /bookings/{id}/timeline: a booking's whole story, oldest first and paged like the audit, for whom the
// booking is visible. Written by database triggers in the transactions that make each change (migration 020).

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ workers: true });
});
afterAll(async () => h?.close());

interface Entry {
  at: string;
  kind: string;
  type: string;
  detail: Record<string, any>;
}

async function page(b: { id: number }, token: string, q = '') {
  const r = await h.req('GET', `/bookings/${b.id}/timeline${q}`, { token });
  expect(r.status, r.text).toBe(200);
  return r.json as { entries: Entry[]; nextCursor: string | null };
}

async function allPages(b: { id: number }, token: string, limit: number): Promise<{ entries: Entry[]; pages: number }> {
  const entries: Entry[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const p = await page(b, token, `?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    expect(p.entries.length).toBeLessThanOrEqual(limit);
    entries.push(...p.entries);
    cursor = p.nextCursor;
    pages += 1;
  } while (cursor);
  return { entries, pages };
}

const labels = (entries: Entry[]) => entries.map((e) => `${e.kind}:${e.type}`);

/** A car hold paid at the sandbox and confirmed by its webhook. */
async function confirmedHold(): Promise<Hold> {
  const b = await holdCar(h, { fromHours: 24 * 10 });
  const intent = await requestPay(h, b);
  await sandbox(h).post(`/intents/${intent}/succeed`);
  await waitFor(async () => (await statusOf(h, b.id)) === 'CONFIRMED', 10_000);
  return b;
}

describe('GET /bookings/{id}/timeline', () => {
  let story: Hold;
  beforeAll(async () => {
    // Held, paid, confirmed, cancelled by its owner ≥ 72 h ahead (100 % back), refunded; every notification sent.
    story = await confirmedHold();
    const c = await h.req('POST', `/bookings/${story.id}/cancel`, { token: story.token, body: { reason: 'plans changed' } });
    expect(c.status, c.text).toBe(200);
    await waitFor(async () => (await h.sql(`SELECT 1 FROM refund WHERE booking_id = $1 AND status = 'SUCCEEDED'`, [story.id])).rowCount === 1, 15_000);
    await drained(h);
  }, 60_000);

  it('tells the whole story oldest first: events, the payment, the refund with its attempts, every notification sent', async () => {
    const { entries, nextCursor } = await page(story, story.token);
    expect(nextCursor).toBeNull();
    const seen = labels(entries);
    for (const l of ['event:booking.held', 'payment:received', 'event:booking.confirmed', 'event:booking.cancelled', 'refund:requested',
      'event:refund.requested', 'event:refund.succeeded', 'notification:sms', 'notification:push']) expect(seen, l).toContain(l);
    expect(seen.indexOf('event:booking.held')).toBe(0);
    expect(seen.indexOf('event:booking.confirmed')).toBeLessThan(seen.indexOf('event:booking.cancelled'));
    expect(seen.indexOf('event:booking.cancelled')).toBeLessThan(seen.indexOf('event:refund.succeeded'));
    // Oldest first by at, ties by kind; `at` to the microsecond.
    const keys = entries.map((e) => `${e.at} ${e.kind}`);
    expect(keys).toEqual([...keys].sort());
    for (const e of entries) expect(e.at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);

    const payment = entries.find((e) => e.kind === 'payment')!;
    expect(payment.detail).toMatchObject({ amount: story.deposit, currency: 'VND', outcome: 'CONFIRMED' });
    const refund = entries.find((e) => e.kind === 'refund')!;
    expect(refund.detail).toMatchObject({ amount: story.deposit, status: 'SUCCEEDED', reason: 'cancellation', lastError: null });
    expect(refund.detail.attempts).toBeGreaterThanOrEqual(1);
    const held = entries.find((e) => e.type === 'booking.held')!;
    expect(held.detail).toMatchObject({ carId: story.carId, customerId: story.customerId, kind: 'car' });
    expect(held.detail.eventId).toMatch(/^[0-9a-f-]{36}$/);
    // Two notifications (sms, push) for each notified event: confirmed, cancelled, refund.succeeded.
    const notes = entries.filter((e) => e.kind === 'notification');
    expect(notes.map((n) => `${n.detail.eventType}/${n.type}`).sort()).toEqual(
      ['booking.cancelled/push', 'booking.cancelled/sms', 'booking.confirmed/push', 'booking.confirmed/sms', 'refund.succeeded/push', 'refund.succeeded/sms']);
    for (const n of notes) expect(n.detail.status).toBe('sent');

    // Never a secret of this service.
    const text = JSON.stringify(entries);
    for (const n of SECRET_NAMES) expect(text, n).not.toContain(h.config[n]);
  });

  it('shows a hold cancelled after pay was asked with the cancellation of its intents, and how it went', async () => {
    const b = await holdCar(h);
    await requestPay(h, b);
    expect((await h.req('POST', `/bookings/${b.id}/cancel`, { token: b.token, body: {} })).status).toBe(200);
    await waitFor(async () => (await page(b, b.token)).entries.some((e) => e.kind === 'intent' && e.detail.status === 'done'), 15_000);
    const { entries } = await page(b, b.token);
    const cancellation = entries.find((e) => e.kind === 'intent')!;
    expect(cancellation).toMatchObject({ type: 'cancellation', detail: { status: 'done', lastError: null } });
    expect(cancellation.detail.attempts).toBeGreaterThanOrEqual(1);
    // Owed in the cancel's own transaction, before its event was written.
    expect(labels(entries)).toContain('event:booking.cancelled');
  });

  it('is visible to the owner, the car\'s host and operators; anyone else hears 404, nobody 401', async () => {
    const others = [newCustomer(h).token, h.token(777_001, 'host')];
    for (const token of [story.token, hostToken(h), operatorToken(h)]) expect((await page(story, token)).entries.length).toBeGreaterThan(5);
    for (const token of others) {
      const r = await h.req('GET', `/bookings/${story.id}/timeline`, { token });
      expect([r.status, r.json.error.code]).toEqual([404, 'NOT_FOUND']);
    }
    const anonymous = await h.req('GET', `/bookings/${story.id}/timeline`);
    expect([anonymous.status, anonymous.json.error.code]).toEqual([401, 'UNAUTHENTICATED']);
    for (const id of ['0', '-1', 'x', '1.5', '99999999']) {
      const r = await h.req('GET', `/bookings/${id}/timeline`, { token: operatorToken(h) });
      expect([r.status, r.json.error.code], id).toEqual([404, 'NOT_FOUND']);
    }
  });

  it('pages of `limit` entries read back the whole story; a bad limit or a cursor it did not give is 400', async () => {
    const whole = (await page(story, story.token)).entries;
    for (const limit of [1, 4, whole.length, whole.length + 1]) {
      const { entries, pages } = await allPages(story, story.token, limit);
      expect(entries).toEqual(whole);
      expect(pages).toBe(Math.ceil(whole.length / limit));
    }
    const bad = ['?limit=0', '?limit=1001', '?limit=1.5', '?limit=x', '?cursor=abc', '?cursor=%00',
      `?cursor=${Buffer.from('{"k":["2030-01-01T00:00:00.000000Z","event",1],"x":[],"l":null,"extra":1}').toString('base64url')}`];
    for (const q of bad) {
      const r = await h.req('GET', `/bookings/${story.id}/timeline${q}`, { token: story.token });
      expect([r.status, r.json.error.code], q).toEqual([400, 'VALIDATION']);
    }
    expect((await page(story, story.token, '?limit=1000')).entries).toEqual(whole);
  });

  it('no gap: an entry whose transaction commits after a page past it was read comes on a later page, once', async () => {
    const b = await confirmedHold();
    await drained(h); // booking.confirmed's notifications settled: nothing else arrives meanwhile
    const before = (await page(b, b.token)).entries.length;
    // An event in flight: its entry draws `at` now, and commits only after the next page is read.
    const slow = new pg.Client({ connectionString: h.config.DATABASE_URL });
    await slow.connect();
    try {
      await slow.query('BEGIN');
      const event = (id: string) => [id, String(b.id), JSON.stringify({ eventId: id, type: 'booking.started', occurredAt: new Date().toISOString(), bookingId: b.id, customerId: b.customerId, by: 'test' })];
      const insert = `INSERT INTO outbox (event_id, topic, message_key, payload) VALUES ($1, 'booking.started', $2, $3::jsonb)`;
      await slow.query(insert, event('00000000-0000-4000-8000-000000000001'));
      // Two more, committed, with later `at`s.
      await h.sql(insert, event('00000000-0000-4000-8000-000000000002'));
      await h.sql(insert, event('00000000-0000-4000-8000-000000000003'));
      const first = await page(b, b.token, `?limit=${before + 1}`);
      expect(first.entries.map((e) => e.detail.eventId)).not.toContain('00000000-0000-4000-8000-000000000001');
      expect(first.entries.at(-1)!.detail.eventId).toBe('00000000-0000-4000-8000-000000000002');
      expect(first.nextCursor).not.toBeNull();
      await slow.query('COMMIT');
      const rest = await allPagesFrom(b, b.token, first.nextCursor!, 1);
      const all = [...first.entries, ...rest];
      expect(all).toHaveLength(before + 3);
      expect(all.filter((e) => e.detail.eventId === '00000000-0000-4000-8000-000000000001')).toHaveLength(1);
      expect(new Set(all.map((e) => JSON.stringify(e))).size).toBe(all.length);
    } finally {
      await slow.end();
    }
  });

  it('keeps the story after the outbox and the notifications are purged (RETENTION_DAYS), and is append-only', async () => {
    const whole = (await page(story, story.token)).entries;
    await h.sql(`DELETE FROM outbox WHERE payload->>'bookingId' = $1`, [String(story.id)]);
    await h.sql(`DELETE FROM notification WHERE booking_id = $1`, [story.id]);
    expect((await page(story, story.token)).entries).toEqual(whole);
    await expect(h.sql(`UPDATE booking_timeline SET type = 'x' WHERE booking_id = $1`, [story.id])).rejects.toThrow(/append-only/);
    await expect(h.sql(`DELETE FROM booking_timeline WHERE booking_id = $1`, [story.id])).rejects.toThrow(/append-only/);
  });
});

async function allPagesFrom(b: { id: number }, token: string, cursor: string, limit: number): Promise<Entry[]> {
  const out: Entry[] = [];
  let next: string | null = cursor;
  while (next) {
    const p = await page(b, token, `?limit=${limit}&cursor=${encodeURIComponent(next)}`);
    out.push(...p.entries);
    next = p.nextCursor;
  }
  return out;
}
