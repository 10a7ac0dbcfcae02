import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { sleep, waitFor } from '../helpers/http.js';
import { count } from '../helpers/bookings.js';
import { holdCar, requestPay, type Hold } from '../helpers/cars.js';
import { sandbox } from '../helpers/sandbox.js';
import { paymentSucceeded, signedWebhook } from '../helpers/webhooks.js';
import { processExpiry, type ExpiryOutcome } from '../../shared/usecases/expiry.js';

// Expiry and confirmation race on the booking's version: exactly one wins, and a losing payment is refunded.
const HOLD_TTL_S = 2;
const sleepUntil = (t: number) => sleep(Math.max(0, t - Date.now()));

describe('expiry racing confirmation', () => {
  // Its own service, so the provider sandbox's state below belongs to this test alone.
  let race: Harness;
  beforeAll(async () => {
    race = await startHarness({ workers: true, env: { HOLD_TTL_S: String(HOLD_TTL_S), HOLD_RATE_LIMIT: '100000' } });
  });
  afterAll(async () => race?.close());

  it('200 holds, each paid at the instant it expires: CONFIRMED without refund xor EXPIRED with a full refund', async () => {
    const h = race;
    const N = 200;
    const SPACING_MS = 30; // holds (so expiries) spaced out: each race is decided by its own timing, not a pile-up
    const holds: (Hold & { intentId?: string })[] = [];
    // At each hold's expiry instant, three racers: the expiry worker's delayed job, a direct processExpiry,
    // and the payment (a few ms either side, so both orders occur besides the true ties). Even: a provider
    // webhook we send ourselves. Odd: pay was requested and the sandbox settles the intent (and sends its
    // webhook) at that instant, so the expiry's own question to the provider races too.
    const outcomes: ExpiryOutcome['kind'][] = await Promise.all(Array.from({ length: N }, async (_, i) => {
      await sleep(i * SPACING_MS);
      const hold = await holdCar(h);
      const b: Hold & { intentId?: string } = i % 2 ? { ...hold, intentId: await requestPay(h, hold) } : hold;
      holds.push(b);
      const at = b.holdExpiresAt.getTime() + 2;
      const expire = (async () => {
        await sleepUntil(at + Math.random() * 3);
        return (await processExpiry(h.deps, b.id)).kind;
      })();
      const pay = (async () => {
        await sleepUntil(at - 10 + Math.random() * 30);
        if (b.intentId) await sandbox(h).post(`/intents/${b.intentId}/succeed`);
        else expect((await signedWebhook(h, paymentSucceeded(b.id, b.deposit))).status).toBe(200);
      })();
      const [kind] = await Promise.all([expire, pay]);
      return kind;
    }));
    await sandbox(h).idle(); // every sandbox webhook delivered (and answered 200)
    const { webhooks } = await sandbox(h).state();
    expect(webhooks.filter((w) => w.event.type === 'payment_intent.succeeded').every((w) => w.delivered >= 1)).toBe(true);

    const ids = holds.map((b) => b.id);
    const { rows } = await h.sql(`
      SELECT b.id::int, b.status, b.deposit_amount::int AS deposit,
        (SELECT count(*)::int FROM payment p WHERE p.booking_id = b.id) AS payments,
        (SELECT count(*)::int FROM payment p WHERE p.booking_id = b.id AND p.outcome = 'CONFIRMED') AS confirming,
        (SELECT coalesce(array_agg(r.amount::int), '{}') FROM refund r WHERE r.booking_id = b.id) AS refunds,
        (SELECT coalesce(array_agg(o.topic ORDER BY o.id), '{}') FROM outbox o WHERE o.message_key = b.id::text
                                                            AND o.topic <> 'refund.succeeded') AS topics
      FROM booking b WHERE b.id = ANY($1::bigint[]) ORDER BY b.id`, [ids]);
    expect(rows).toHaveLength(N);
    let confirmed = 0;
    let expired = 0;
    for (const r of rows) {
      const where = `booking ${r.id}: ${JSON.stringify(r)}`;
      if (r.status === 'CONFIRMED') {
        confirmed++;
        expect({ payments: r.payments, confirming: r.confirming, refunds: r.refunds, topics: r.topics }, where).toEqual({
          payments: 1, confirming: 1, refunds: [], topics: ['booking.held', 'booking.confirmed'],
        });
      } else if (r.status === 'EXPIRED') {
        expired++;
        expect({ payments: r.payments, confirming: r.confirming, refunds: r.refunds, topics: r.topics }, where).toEqual({
          payments: 1, confirming: 0, refunds: [r.deposit], topics: ['booking.held', 'booking.expired', 'refund.requested'],
        });
      } else {
        expect.fail(`${where}: neither CONFIRMED nor EXPIRED`);
      }
    }
    // The race really was one: confirmation won some, and expiry either won some or read a due HOLD and then
    // lost it at the row lock (lost_race). Which side wins how often depends on the machine's load.
    const tally: Record<string, number> = Object.fromEntries([...new Set(outcomes)].map((k) => [k, outcomes.filter((o) => o === k).length]));
    console.info(`race: ${confirmed} CONFIRMED, ${expired} EXPIRED; direct processExpiry calls: ${JSON.stringify(tally)}`);
    expect(confirmed).toBeGreaterThan(0);
    expect(expired + (tally.lost_race ?? 0)).toBeGreaterThan(0);

    // Every refund is then paid by the refund worker, once.
    await waitFor(async () => (await count(h, `SELECT 1 FROM refund WHERE booking_id = ANY($1::bigint[]) AND status = 'SUCCEEDED'`, [ids])) === expired, 20_000);
    expect(await count(h, `SELECT 1 FROM outbox WHERE topic = 'refund.succeeded' AND message_key = ANY($1::text[])`, [ids.map(String)])).toBe(expired);
    expect((await sandbox(h).state()).refunds).toHaveLength(expired);
    expect(await count(h, `SELECT 1 FROM booking WHERE id = ANY($1::bigint[]) AND status = 'HOLD'`, [ids])).toBe(0);
  });
});
