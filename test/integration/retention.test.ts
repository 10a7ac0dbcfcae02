import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { waitFor } from '../helpers/http.js';
import { purgeSettled } from '../../shared/usecases/retention.js';
import { deleteSettled } from '../../shared/db/retention.js';
import { parseConfig } from '../../shared/config.js';
import { startWork } from '../../workers/lib/worker-process.js';

// Outbox (published), webhook_inbox and notification (settled) rows are purged once older than RETENTION_DAYS, in
// batches, by the maintenance queue's retention schedule (a job scheduler the maintenance reconciler upserts, also
// after Redis lost it). An unpublished outbox row is never purged, however old.

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ env: { RETENTION_DAYS: '7' } });
});
afterAll(async () => h?.close());

const daysAgo = (d: number) => new Date(Date.now() - d * 86_400_000).toISOString();

/** Writes `n` outbox rows of this shape; returns the marker (message key) they carry. */
async function outbox(n: number, o: { ageDays: number; published: boolean }): Promise<string> {
  const key = `ret-${randomUUID().slice(0, 8)}`;
  for (let i = 0; i < n; i++) {
    await h.sql(
      `INSERT INTO outbox (event_id, topic, message_key, payload, created_at, published_at) VALUES ($1, 'booking.held', $2, '{}', $3, $4)`,
      [randomUUID(), key, daysAgo(o.ageDays), o.published ? daysAgo(o.ageDays) : null],
    );
  }
  return key;
}
async function inbox(n: number, ageDays: number): Promise<string> {
  const type = `test.${randomUUID().slice(0, 8)}`;
  for (let i = 0; i < n; i++) await h.sql(`INSERT INTO webhook_inbox (event_id, type, payload, received_at) VALUES ($1, $2, '{}', $3)`, [randomUUID(), type, daysAgo(ageDays)]);
  return type;
}
async function notifications(n: number, ageDays: number): Promise<string> {
  const type = `test.${randomUUID().slice(0, 8)}`;
  for (let i = 0; i < n; i++) {
    await h.sql(`INSERT INTO notification (event_id, channel, booking_id, event_type, recipient, body, sent_at) VALUES ($1, 'sms', 1, $2, 1, 'hi', $3)`,
      [randomUUID(), type, daysAgo(ageDays)]);
  }
  return type;
}
const left = async (table: string, column: string, value: string) =>
  (await h.sql(`SELECT count(*)::int AS n FROM ${table} WHERE ${column} = $1`, [value])).rows[0].n as number;

describe('retention purge', () => {
  it('RETENTION_DAYS defaults to 7', () => {
    expect(parseConfig({}).RETENTION_DAYS).toBe(7);
    expect(() => parseConfig({ RETENTION_DAYS: '0' })).toThrow(/RETENTION_DAYS/);
  });

  it('purges settled rows older than RETENTION_DAYS in batches, and never an unpublished outbox row', async () => {
    const oldDone = await outbox(5, { ageDays: 8, published: true });
    const oldUnpublished = await outbox(2, { ageDays: 30, published: false });
    const recentDone = await outbox(2, { ageDays: 6, published: true });
    const oldInbox = await inbox(5, 8);
    const recentInbox = await inbox(2, 1);
    const oldSent = await notifications(5, 8);
    const recentSent = await notifications(2, 6);

    // One statement deletes at most its batch (a single DELETE of everything due would hold locks on it all)...
    const cutoff = new Date(Date.now() - 7 * 86_400_000);
    expect(await deleteSettled(h.deps.db, 'outbox', cutoff, 2)).toBe(2);
    expect(await left('outbox', 'message_key', oldDone)).toBe(3);
    // ...and the purge repeats batches until one comes back short: the other 3 take two more.
    const purged = await purgeSettled(h.deps, 2);
    expect(purged.outbox).toBeGreaterThanOrEqual(3);
    expect(await left('outbox', 'message_key', oldDone)).toBe(0);
    expect(await left('outbox', 'message_key', oldUnpublished)).toBe(2);
    expect(await left('outbox', 'message_key', recentDone)).toBe(2);
    expect(await left('webhook_inbox', 'type', oldInbox)).toBe(0);
    expect(await left('webhook_inbox', 'type', recentInbox)).toBe(2);
    expect(await left('notification', 'event_type', oldSent)).toBe(0);
    expect(await left('notification', 'event_type', recentSent)).toBe(2);
  });

  it('the maintenance worker purges on its own: its reconciler upserts the schedules, whose first ticks run at once', async () => {
    const oldDone = await outbox(3, { ageDays: 9, published: true });
    const oldInbox = await inbox(3, 9);
    const m = startWork(h.deps, ['maintenance']);
    try {
      await waitFor(async () => (await left('outbox', 'message_key', oldDone)) === 0 && (await left('webhook_inbox', 'type', oldInbox)) === 0, 15_000);
      const schedulers = (await h.queues.maintenance.getJobSchedulers()).map((s) => s.key).sort();
      expect(schedulers).toEqual(['idempotency-purge', 'quote-purge', 'retention']);
    } finally {
      await m.stop();
    }
  });
});
