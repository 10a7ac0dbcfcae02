import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { sleep, waitFor } from '../helpers/http.js';
import { count, drained, statusOf } from '../helpers/bookings.js';
import { holdCar, requestPay, type Hold } from '../helpers/cars.js';
import { sandbox } from '../helpers/sandbox.js';
import { paymentSucceeded, signedWebhook } from '../helpers/webhooks.js';
import { claimIntentCancellation } from '../../shared/db/intent-cancellations.js';
import { cancelIntentsOf } from '../../shared/usecases/intent-cancellations.js';
import type { PspClient } from '../../shared/psp/client.js';

// Issue 8, item 4 (CONTRACT "Expiry"): a booking that leaves HOLD unpaid (EXPIRED, CANCELLED) has every payment
// intent cancelled at the provider, retried until the provider answers; an intent found already succeeded is
// refunded in full — once, whether its webhook arrives before, after, or never.

const HOLD_TTL_S = 2;
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ workers: true, env: { HOLD_TTL_S: String(HOLD_TTL_S), PAYMENT_GRACE_S: '0', HOLD_RATE_LIMIT: '100000' } });
});
afterEach(async () => {
  await sandbox(h).resetFaults();
  await sandbox(h).idle();
});
afterAll(async () => h?.close());

const intentStatus = async (id: string) => (await sandbox(h).intent(id)).status;
const obligation = async (bookingId: number) =>
  (await h.sql(`SELECT attempts, last_error, done_at FROM intent_cancellation WHERE booking_id = $1`, [bookingId])).rows[0];
const cancelHold = async (b: Hold) => {
  const r = await h.req('POST', `/bookings/${b.id}/cancel`, { token: b.token, body: {} });
  expect(r.status, r.text).toBe(200);
};
/** POST to the sandbox's checkout page, as the customer's browser would. */
const payAtCheckout = (intentId: string) => fetch(`${h.config.pspUrl}/checkout/${intentId}/pay`, { method: 'POST' });
const moneyOf = async (bookingId: number) => {
  const { rows } = await h.sql(`
    SELECT (SELECT count(*)::int FROM payment WHERE booking_id = $1) AS payments,
           (SELECT coalesce(array_agg(amount::int), '{}') FROM refund WHERE booking_id = $1) AS refunds`, [bookingId]);
  return rows[0];
};

describe('the sandbox provider cancels intents', () => {
  it('POST /v1/payment_intents/{id}/cancel → canceled (again: the same); the checkout then refuses to pay; 409 with the intent once succeeded', async () => {
    const key = { authorization: `Bearer ${h.config.PSP_API_KEY}` };
    const open = await sandbox(h).createIntent({ amount: 10, currency: 'VND', reference: 'x1' });
    for (let i = 0; i < 2; i++) {
      const r = await fetch(`${h.config.pspUrl}/v1/payment_intents/${open.id}/cancel`, { method: 'POST', headers: key });
      expect(r.status).toBe(200);
      expect(await r.json()).toMatchObject({ id: open.id, status: 'canceled' });
    }
    expect((await payAtCheckout(open.id)).status).toBe(409);
    expect(await intentStatus(open.id)).toBe('canceled');

    const paid = await sandbox(h).createIntent({ amount: 10, currency: 'VND', reference: 'x2' });
    await sandbox(h).post(`/intents/${paid.id}/succeed-silently`);
    const r = await fetch(`${h.config.pspUrl}/v1/payment_intents/${paid.id}/cancel`, { method: 'POST', headers: key });
    expect(r.status).toBe(409);
    const body = await r.json();
    expect(body.error.code).toBeTruthy();
    expect(body.intent).toMatchObject({ id: paid.id, status: 'succeeded' });
  });
});

describe('a booking that leaves HOLD unpaid has its intents cancelled', () => {
  it('expired: the intent is cancelled, the customer can no longer pay it', async () => {
    const b = await holdCar(h);
    const intentId = await requestPay(h, b);
    await waitFor(async () => (await statusOf(h, b.id)) === 'EXPIRED', 10_000);
    await waitFor(async () => (await intentStatus(intentId)) === 'canceled', 10_000);
    expect((await payAtCheckout(intentId)).status).toBe(409);
    await waitFor(async () => (await obligation(b.id))?.done_at, 5_000);
    expect(await moneyOf(b.id)).toEqual({ payments: 0, refunds: [] });
  });

  it('cancelled by the customer while HOLD: the intent is cancelled', async () => {
    const b = await holdCar(h, { fromHours: 400 });
    const intentId = await requestPay(h, b);
    await cancelHold(b);
    await waitFor(async () => (await intentStatus(intentId)) === 'canceled', 10_000);
    expect((await payAtCheckout(intentId)).status).toBe(409);
  });

  it('a hold nobody asked to pay for owes no intent cancellation', async () => {
    const b = await holdCar(h, { fromHours: 410 });
    await cancelHold(b);
    expect(await obligation(b.id)).toBeUndefined();
  });

  it('the intent had succeeded, its webhook never arrives: refunded in full, once', async () => {
    const b = await holdCar(h, { fromHours: 420 });
    const intentId = await requestPay(h, b);
    await sandbox(h).post(`/intents/${intentId}/succeed-silently`); // paid, no webhook
    await cancelHold(b); // before expiry could ask the provider
    await waitFor(async () => (await obligation(b.id))?.done_at, 10_000);
    expect(await statusOf(h, b.id)).toBe('CANCELLED');
    expect(await moneyOf(b.id)).toEqual({ payments: 1, refunds: [b.deposit] });
    const { rows } = await h.sql(`SELECT payment_intent_id, outcome FROM payment WHERE booking_id = $1`, [b.id]);
    expect(rows).toEqual([{ payment_intent_id: intentId, outcome: 'REFUNDED' }]);
    await waitFor(async () => (await sandbox(h).refundsFor(b.id)).length === 1, 10_000);

    // The webhook, arriving after all, is the same payment: nothing more is refunded.
    const intent = await sandbox(h).intent(intentId);
    const late = paymentSucceeded(b.id, b.deposit, { intent: intentId, txn: intent.providerTxnId! });
    expect((await signedWebhook(h, late)).status).toBe(200);
    await drained(h);
    expect(await moneyOf(b.id)).toEqual({ payments: 1, refunds: [b.deposit] });
    expect((await h.sql(`SELECT provider_txn_id FROM payment WHERE booking_id = $1`, [b.id])).rows[0].provider_txn_id).toBe(intent.providerTxnId);
  });

  it('the webhook of a success came first (refunded): the cancellation finds it succeeded and refunds nothing more', async () => {
    const b = await holdCar(h, { fromHours: 430 });
    const intentId = await requestPay(h, b);
    await sandbox(h).setFaults({ apiDown: true }); // the cancellation cannot reach the provider yet
    await cancelHold(b);
    const paid = await sandbox(h).post(`/intents/${intentId}/succeed-silently`);
    expect((await signedWebhook(h, paymentSucceeded(b.id, b.deposit, { intent: intentId, txn: paid.providerTxnId }))).status).toBe(200);
    expect(await moneyOf(b.id)).toEqual({ payments: 1, refunds: [b.deposit] });
    await sandbox(h).resetFaults();
    await waitFor(async () => (await obligation(b.id))?.done_at, 15_000);
    expect(await moneyOf(b.id)).toEqual({ payments: 1, refunds: [b.deposit] });
  });

  it('provider unreachable: the cancellation is retried with backoff until it answers', async () => {
    const b = await holdCar(h, { fromHours: 440 });
    const intentId = await requestPay(h, b);
    await sandbox(h).setFaults({ apiDown: true });
    await cancelHold(b);
    const pending = await waitFor(async () => {
      const o = await obligation(b.id);
      return o && o.attempts >= 2 ? o : null;
    }, 15_000);
    expect(pending.done_at).toBeNull();
    expect(pending.last_error).toMatch(/unreachable/);
    // Read from the sandbox's own state: its /v1 API refuses every call while it is down.
    const atProvider = (await sandbox(h).state()).intents.find((i) => i.id === intentId);
    expect(atProvider?.status).toBe('requires_payment');
    await sandbox(h).resetFaults();
    await waitFor(async () => (await intentStatus(intentId)) === 'canceled', 15_000);
    await waitFor(async () => (await obligation(b.id))?.done_at, 5_000);
    expect(await count(h, `SELECT 1 FROM refund WHERE booking_id = $1`, [b.id])).toBe(0);
  });
});

describe('an intent created while its booking leaves HOLD', () => {
  // Its own service without workers: the test runs each attempt at the obligation itself.
  let q: Harness;
  beforeAll(async () => {
    q = await startHarness({ env: { HOLD_RATE_LIMIT: '100000' } });
  });
  afterAll(async () => q?.close());

  it('re-opens the obligation after the cancellation ran without it; /pay answers 409; the late intent is cancelled', async () => {
    const b = await holdCar(q);
    await sandbox(q).setFaults({ apiDelayMs: 1500 }); // the provider takes its time creating the intent
    const pay = q.req('GET', `/bookings/${b.id}/pay`, { token: b.token });
    await waitFor(async () => (await q.sql(`SELECT pay_requested_at FROM booking WHERE id = $1`, [b.id])).rows[0].pay_requested_at, 5_000, 10);
    const cancelled = await q.req('POST', `/bookings/${b.id}/cancel`, { token: b.token, body: {} });
    expect(cancelled.status, cancelled.text).toBe(200);
    // The cancellation runs before the intent exists: the provider lists none for the booking, and no create of it
    // is on record (as when an API of the version before sent it, which wrote none down).
    await waitFor(async () => (await count(q, `SELECT 1 FROM intent_create WHERE booking_id = $1`, [b.id])) === 1, 5_000, 10);
    await q.sql(`DELETE FROM intent_create WHERE booking_id = $1`, [b.id]);
    const claim = await claimIntentCancellation(q.deps.db, b.id, 0, 30_000);
    expect(claim?.bookingId).toBe(b.id);
    const nothingYet = Object.create(q.deps.psp) as PspClient;
    nothingYet.listPaymentIntents = async () => [];
    expect(await cancelIntentsOf({ ...q.deps, psp: nothingYet }, claim!)).toEqual({ kind: 'done', cancelled: 0, refunded: 0 });

    const r = await pay; // the intent now exists at the provider, for a booking no longer a HOLD
    expect(r.status, r.text).toBe(409);
    const again = await q.sql(`SELECT done_at, job_gen FROM intent_cancellation WHERE booking_id = $1`, [b.id]);
    // Re-opened, as a new generation: the first job (cancel-intents-{id}-g0) has finished and stays retained.
    expect(again.rows[0]).toEqual({ done_at: null, job_gen: 1 });
    expect(await q.queues['intent-cancellations'].getJob(`cancel-intents-${b.id}-g1`)).toBeTruthy();
    await sandbox(q).resetFaults();
    const reclaim = await claimIntentCancellation(q.deps.db, b.id, 1, 30_000);
    expect(await cancelIntentsOf(q.deps, reclaim!)).toEqual({ kind: 'done', cancelled: 1, refunded: 0 });
    const intents = (await sandbox(q).state()).intents.filter((i) => i.reference === String(b.id));
    expect(intents.map((i) => i.status)).toEqual(['canceled']);
  });

  it("/pay's create is never answered while the booking is cancelled: 503, and the intent the provider makes late is cancelled", async () => {
    const b = await holdCar(q);
    // Each of /pay's 3 attempts at the create hangs past the client's timeout; the provider carries each out 15 s
    // after it came, long after /pay has given up (its attempts take about 6 s).
    const HANG_MS = 15_000;
    await sandbox(q).post('/faults/answers', { endpoint: 'intents.create', answer: 'timeout', times: 3, hangMs: HANG_MS });
    const sentAt = Date.now();
    const pay = q.req('GET', `/bookings/${b.id}/pay`, { token: b.token });
    await waitFor(async () => (await q.sql(`SELECT pay_requested_at FROM booking WHERE id = $1`, [b.id])).rows[0].pay_requested_at, 5_000, 10);
    expect((await q.req('POST', `/bookings/${b.id}/cancel`, { token: b.token, body: {} })).status).toBe(200);
    const r = await pay;
    expect(r.status, r.text).toBe(503);
    // Written before it was sent, never answered; the booking's intents are owed a cancellation.
    expect((await q.sql(`SELECT idempotency_key, amount::int, answered_at FROM intent_create WHERE booking_id = $1`, [b.id])).rows)
      .toEqual([{ idempotency_key: `deposit-${b.id}`, amount: b.deposit, answered_at: null }]);
    expect((await q.sql(`SELECT done_at FROM intent_cancellation WHERE booking_id = $1`, [b.id])).rows[0]).toEqual({ done_at: null });

    // The cancellation runs before any original has landed: the provider lists no intent, and the create sent again
    // with its key makes the intent now, which is cancelled. Not settled yet: /pay's sends may still land (a provider
    // that has forgotten the key by then makes another intent), so it looks again once they are past its lateness.
    expect((await sandbox(q).state()).intents.filter((i) => i.reference === String(b.id))).toEqual([]);
    const claim = await claimIntentCancellation(q.deps.db, b.id, 0, 30_000);
    expect(await cancelIntentsOf(q.deps, claim!)).toEqual({ kind: 'waiting', inMs: expect.any(Number), cancelled: 1, refunded: 0 });
    expect((await q.sql(`SELECT done_at, lease_token FROM intent_cancellation WHERE booking_id = $1`, [b.id])).rows[0])
      .toEqual({ done_at: null, lease_token: null });
    expect(Date.now() - sentAt).toBeLessThan(HANG_MS);
    const [{ intent_id: intentId, answered_at: answeredAt }] = (await q.sql(`SELECT intent_id, answered_at FROM intent_create WHERE booking_id = $1`, [b.id])).rows;
    expect(intentId).toBeTruthy();
    expect(answeredAt).toBeTruthy();
    // The hung originals land afterwards (the last one was sent about 6 s in) and get that intent back.
    await sleep(HANG_MS + 8_000 - (Date.now() - sentAt));
    const intents = (await sandbox(q).state()).intents.filter((i) => i.reference === String(b.id));
    expect(intents.map((i) => [i.id, i.status])).toEqual([[intentId, 'canceled']]);
    // With the doubt past the provider's lateness (here 2 × 8 s, plus the client's longest call), an attempt's listing settles it.
    const windowS = 2 * 8 + Math.ceil(q.deps.psp.longestCallMs / 1000) + 0.5;
    await waitFor(async () => (await q.sql(`SELECT doubted_at < now() - make_interval(secs => $2) AS past FROM intent_create WHERE booking_id = $1`, [b.id, windowS])).rows[0].past, 20_000);
    const last = await claimIntentCancellation(q.deps.db, b.id, 0, 30_000);
    const lateness8 = { ...q.deps, config: { ...q.deps.config, LEASE_S: 8 } };
    expect(await cancelIntentsOf(lateness8, last!)).toEqual({ kind: 'done', cancelled: 1, refunded: 0 });
  }, 60_000);

  it("/pay's create written after the cancellation ran, its answer lost to a terminated connection: the intent is still cancelled", async () => {
    // Chaos seed 677832 (pg:terminate while the provider was slow): the obligation was settled, the intent payable.
    const b = await holdCar(q);
    const locker = new pg.Client({ connectionString: q.config.DATABASE_URL });
    await locker.connect();
    const lockerPid = (await locker.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
    const blockedOn = (pattern: string) => waitFor(async () => {
      const { rows } = await q.sql(`SELECT pid FROM pg_stat_activity WHERE datname = current_database()
        AND wait_event_type = 'Lock' AND query ILIKE $2 AND pid <> $1`, [lockerPid, pattern]);
      return rows[0]?.pid as number | undefined;
    }, 10_000, 10);
    try {
      // /pay writes its create while the booking is being cancelled and the cancellation runs.
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE intent_create IN EXCLUSIVE MODE');
      await sandbox(q).post('/faults/answers', { endpoint: 'intents.create', answer: 'timeout', times: 1, hangMs: 1_500 }); // slow, answered
      const pay = q.req('GET', `/bookings/${b.id}/pay`, { token: b.token });
      await blockedOn('%intent_create%');
      const cancel = q.req('POST', `/bookings/${b.id}/cancel`, { token: b.token, body: {} });
      await sleep(300);
      // An attempt, when the obligation exists by now: the provider lists no intent yet, and no create is on record.
      const claim = await claimIntentCancellation(q.deps.db, b.id, 0, 30_000);
      if (claim) expect(await cancelIntentsOf(q.deps, claim)).toEqual({ kind: 'done', cancelled: 0, refunded: 0 });
      await locker.query('COMMIT');
      expect((await cancel).status).toBe(200);
      // The create leaves; its answer's write is held, then its connection terminated.
      await waitFor(async () => (await count(q, `SELECT 1 FROM intent_create WHERE booking_id = $1`, [b.id])) === 1, 5_000, 5);
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE intent_create IN EXCLUSIVE MODE');
      await q.sql('SELECT pg_terminate_backend($1)', [await blockedOn('%intent_create%')]);
      expect((await pay).status).toBe(503);
      await locker.query('COMMIT');
    } finally {
      await locker.end();
    }
    // The provider made the intent; the booking's intents are owed a cancellation until it is cancelled.
    const intents = async () => (await sandbox(q).state()).intents.filter((i) => i.reference === String(b.id));
    expect((await intents()).map((i) => i.status)).toEqual(['requires_payment']);
    const { rows: [owed] } = await q.sql(`SELECT job_gen, done_at FROM intent_cancellation WHERE booking_id = $1`, [b.id]);
    expect(owed.done_at).toBeNull();
    // Its answer never reached the record, so its send counts as unanswered: the obligation stays open until that
    // send is past the provider's lateness (a provider that forgot the key by then would make another intent).
    const claim = await claimIntentCancellation(q.deps.db, b.id, owed.job_gen, 30_000);
    expect(await cancelIntentsOf(q.deps, claim!)).toMatchObject({ kind: 'waiting', cancelled: 1 });
    expect((await intents()).map((i) => i.status)).toEqual(['canceled']);
  });

  it("/pay's intent answered to a retry after a timed-out attempt: the create is doubted, and the cancellation waits out that attempt", async () => {
    const b = await holdCar(q);
    await sandbox(q).post('/faults/answers', { endpoint: 'intents.create', answer: 'timeout', times: 1, hangMs: 2_500 });
    const intentId = await requestPay(q, b); // answered on the second attempt; the first lands 2.5 s after it came
    expect((await q.sql(`SELECT intent_id, answered_at IS NOT NULL AS answered, doubted_at IS NOT NULL AS doubted
                         FROM intent_create WHERE booking_id = $1`, [b.id])).rows).toEqual([{ intent_id: intentId, answered: true, doubted: true }]);
    expect((await q.req('POST', `/bookings/${b.id}/cancel`, { token: b.token, body: {} })).status).toBe(200);
    const claim = await claimIntentCancellation(q.deps.db, b.id, 0, 30_000);
    expect(await cancelIntentsOf(q.deps, claim!)).toEqual({ kind: 'waiting', inMs: expect.any(Number), cancelled: 1, refunded: 0 });
    expect((await sandbox(q).intent(intentId)).status).toBe('canceled');
  });

  it('a HOLD whose deposit changed: an intent made for an earlier deposit is cancelled though nothing recorded it superseded', async () => {
    // /pay's create for deposit v0 was answered, then its process stopped before it could record the intent superseded
    // by a change (v1, v2: the deposit back at the same amount); the current deposit's intent stays payable.
    const b = await holdCar(q);
    const old = await sandbox(q).createIntent({ amount: b.deposit, currency: 'VND', reference: String(b.id) }, `deposit-${b.id}`);
    await q.sql(`INSERT INTO intent_create (booking_id, idempotency_key, amount, currency, intent_id, answered_at)
                 VALUES ($1, $2, $3, 'VND', $4, now())`, [b.id, `deposit-${b.id}`, b.deposit, old.id]);
    await q.sql(`UPDATE booking SET deposit_version = 2, pay_requested_at = now() WHERE id = $1`, [b.id]);
    const currentIntent = await requestPay(q, b);
    expect(currentIntent).not.toBe(old.id);
    // The obligation a change of the deposit writes (reopenIntentCancellation).
    await q.sql(`INSERT INTO intent_cancellation (booking_id, next_attempt_at) VALUES ($1, now())`, [b.id]);
    const claim = await claimIntentCancellation(q.deps.db, b.id, 0, 30_000);
    expect(await cancelIntentsOf(q.deps, claim!)).toEqual({ kind: 'done', cancelled: 1, refunded: 0 });
    expect((await sandbox(q).intent(old.id)).status).toBe('canceled');
    expect((await sandbox(q).intent(currentIntent)).status).toBe('requires_payment');
  });

  it("a change and the new deposit's /pay while an attempt lists: the new deposit's intent stays payable", async () => {
    const b = await holdCar(q);
    const oldIntent = await requestPay(q, b);
    await q.sql(`INSERT INTO intent_cancellation (booking_id, next_attempt_at) VALUES ($1, now())`, [b.id]);
    const claim = await claimIntentCancellation(q.deps.db, b.id, 0, 30_000);
    // While the provider answers the attempt's list (which has only the old intent): a change replaces the deposit
    // (v1, another amount) and /pay creates and answers the intent of the new deposit.
    let fresh = '';
    const slowList = Object.create(q.deps.psp) as PspClient;
    slowList.listPaymentIntents = async (reference) => {
      const before = await q.deps.psp.listPaymentIntents(reference);
      await q.sql(`UPDATE booking SET deposit_version = 1, deposit_amount = deposit_amount + 1000 WHERE id = $1`, [b.id]);
      fresh = await requestPay(q, b);
      return before;
    };
    expect(await cancelIntentsOf({ ...q.deps, psp: slowList }, claim!)).toEqual({ kind: 'done', cancelled: 1, refunded: 0 });
    expect((await sandbox(q).intent(oldIntent)).status).toBe('canceled');
    expect((await sandbox(q).intent(fresh)).status).toBe('requires_payment');
  });

  it('a replayed create the provider refuses (4xx) does not hold up the cancellation of the listed intents, nor answers the create', async () => {
    const b = await holdCar(q);
    const listedIntent = await requestPay(q, b);
    // A second create on record that the provider never answered (say, for an older deposit), which it now refuses.
    await q.sql(`INSERT INTO intent_create (booking_id, idempotency_key, amount, currency) VALUES ($1, 'deposit-x', 1, 'VND')`, [b.id]);
    expect((await q.req('POST', `/bookings/${b.id}/cancel`, { token: b.token, body: {} })).status).toBe(200);
    await sandbox(q).post('/faults/answers', { endpoint: 'intents.create', answer: 400, times: 1 });
    const claim = await claimIntentCancellation(q.deps.db, b.id, 0, 30_000);
    expect(await cancelIntentsOf(q.deps, claim!)).toMatchObject({ kind: 'retry', error: expect.stringMatching(/400/) });
    expect((await sandbox(q).intent(listedIntent)).status).toBe('canceled');
    // The refusal speaks for that send only: the one that left the create unanswered may still be carried out, so
    // the create stays owed until the provider answers it with an intent, which is then cancelled.
    const creates = () => q.sql(`SELECT idempotency_key, intent_id, answered_at IS NOT NULL AS answered FROM intent_create
                                 WHERE booking_id = $1 ORDER BY idempotency_key COLLATE "C"`, [b.id]);
    expect((await creates()).rows).toEqual([
      { idempotency_key: `deposit-${b.id}`, intent_id: listedIntent, answered: true }, { idempotency_key: 'deposit-x', intent_id: null, answered: false },
    ]);
    // Answered now; its earlier send may still land (past the provider's lateness, an attempt settles the obligation).
    const again = await claimIntentCancellation(q.deps.db, b.id, 0, 30_000);
    expect(await cancelIntentsOf(q.deps, again!)).toEqual({ kind: 'waiting', inMs: expect.any(Number), cancelled: 2, refunded: 0 });
    const [, late] = (await creates()).rows;
    expect(late).toEqual({ idempotency_key: 'deposit-x', intent_id: expect.stringMatching(/^pi_/), answered: true });
    expect((await sandbox(q).intent(late.intent_id)).status).toBe('canceled');
  });

  it('a create the provider refuses for good, last sent longer ago than its lateness window, is settled with nothing (not retried forever)', async () => {
    const b = await holdCar(q);
    const listedIntent = await requestPay(q, b);
    // On record since an hour, never answered (its process died mid-send, say); the provider refuses it every time.
    await q.sql(`INSERT INTO intent_create (booking_id, idempotency_key, amount, currency, created_at)
                 VALUES ($1, 'deposit-old', 1, 'VND', now() - interval '1 hour')`, [b.id]);
    expect((await q.req('POST', `/bookings/${b.id}/cancel`, { token: b.token, body: {} })).status).toBe(200);
    await sandbox(q).post('/faults/answers', { endpoint: 'intents.create', answer: 400, times: 1 });
    const claim = await claimIntentCancellation(q.deps.db, b.id, 0, 30_000);
    expect(await cancelIntentsOf(q.deps, claim!)).toEqual({ kind: 'done', cancelled: 1, refunded: 0 });
    expect((await sandbox(q).intent(listedIntent)).status).toBe('canceled');
    const { rows } = await q.sql(`SELECT intent_id, answered_at IS NOT NULL AS answered, sent_at IS NOT NULL AS sent
                                  FROM intent_create WHERE booking_id = $1 AND idempotency_key = 'deposit-old'`, [b.id]);
    expect(rows).toEqual([{ intent_id: null, answered: true, sent: true }]);
  });
});
