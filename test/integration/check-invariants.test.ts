import { spawn } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { waitFor } from '../helpers/http.js';
import { count, drained, operatorToken, statusOf } from '../helpers/bookings.js';
import { holdCar, newCar, requestPay } from '../helpers/cars.js';
import { changed, confirm } from '../helpers/changes.js';
import { addDays, stayApi } from '../helpers/stays.js';
import { newCustomer } from '../helpers/customers.js';
import { sandbox } from '../helpers/sandbox.js';
import { startKafkaPump } from '../helpers/kafka.js';
import { ROOT } from '../helpers/processes.js';
import { startNotifyReceiver } from '../../scripts/chaos/notify-receiver.js';
import { INVARIANTS } from '../../scripts/invariants/index.js';

// The checker of `npm run check:invariants` checked itself: a clean database (bookings held, paid, cancelled, changed;
// events in Kafka; notifications received once) passes; each invariant, broken on purpose by a direct SQL write, fails the
// run (exit 1) and is named.

const BROKERS = process.env.KAFKA_BROKERS || '127.0.0.1:9092';
const prefix = `chk${randomUUID().slice(0, 8)}.`;
let h: Harness;
let receiver: Awaited<ReturnType<typeof startNotifyReceiver>>;
let lane: ReturnType<typeof startKafkaPump>;
let dir: string;
let logPath: string;
const ids: Record<string, number> = {};

function runChecker(only?: string): Promise<{ code: number | null; out: string }> {
  const args = ['--import', 'tsx', 'scripts/check-invariants.ts', ...(only ? ['--only', only] : [])];
  const env = {
    PATH: process.env.PATH!, DATABASE_URL: h.config.DATABASE_URL, PSP_URL: h.config.pspUrl, PSP_API_KEY: h.config.PSP_API_KEY,
    KAFKA_BROKERS: BROKERS, KAFKA_TOPIC_PREFIX: prefix, NOTIFY_LOG: logPath, PAYMENT_GRACE_S: '600',
    REDIS_URL: h.config.REDIS_URL, QUEUE_PREFIX: h.config.QUEUE_PREFIX,
  };
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    child.on('exit', (code) => resolve({ code, out }));
  });
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'check-invariants-'));
  logPath = path.join(dir, 'notify.log');
  receiver = await startNotifyReceiver(logPath);
  // LEASE_S 5: a /pay create answered to a retry (a slow sandbox under load) holds its cancellation 2 × LEASE_S + the
  // client's longest call (intent-cancellations.ts); the waits below outlast that.
  h = await startHarness({ workers: true, env: { HOLD_RATE_LIMIT: '1000', NOTIFY_WEBHOOK_URL: receiver.url, LEASE_S: '5' } });
  lane = startKafkaPump(h.deps.prepared, prefix, [BROKERS]);
  // A confirmed car booking, a cancelled one (unpaid, never asked to pay), a held one, a held stay.
  const paid = await holdCar(h);
  await sandbox(h).post(`/intents/${await requestPay(h, paid)}/succeed`);
  await waitFor(async () => (await statusOf(h, paid.id)) === 'CONFIRMED');
  const cancelled = await holdCar(h);
  expect((await h.req('POST', `/bookings/${cancelled.id}/cancel`, { token: cancelled.token, body: {} })).status).toBe(200);
  ids.held = (await holdCar(h)).id;
  const api = stayApi(h);
  const hotel = await api.hotel();
  const rt = await api.roomType(hotel.id);
  const checkIn = addDays(new Date().toISOString().slice(0, 10), 20);
  await api.setInventory(rt.id, checkIn, addDays(checkIn, 3), 5);
  const stay = await api.hold(newCustomer(h).id, rt.id, checkIn, addDays(checkIn, 2), 2);
  expect(stay.status, stay.text).toBe(201);
  ids.roomType = rt.id;
  ids.paid = paid.id;
  // Changed bookings: a confirmed car moved to a car of a lower deposit (the difference refunded), a held car whose
  // deposit changed after pay was asked (its first intent superseded, then cancelled), a stay shifted by a night.
  const moved = await holdCar(h, { deposit: 2_000_000, fromHours: 24 * 30 });
  await confirm(h, moved);
  await changed(h, moved.id, moved.token, { carId: await newCar(h, { depositAmount: 1_500_000 }) });
  const repriced = await holdCar(h, { fromHours: 24 * 31 });
  await requestPay(h, repriced);
  await changed(h, repriced.id, repriced.token, { carId: await newCar(h, { depositAmount: 3_000_000 }) });
  await changed(h, stay.json.bookingId, operatorToken(h), { checkIn: addDays(checkIn, 1), checkOut: addDays(checkIn, 3) });
  ids.moved = moved.id;
  ids.freed = Date.parse(`${checkIn}T00:00:00Z`);
  await waitFor(async () => (await count(h, `SELECT 1 FROM intent_cancellation WHERE done_at IS NULL`)) === 0, 40_000);
  await sandbox(h).idle();
  await drained(h);
  await waitFor(async () => (await count(h, `SELECT 1 FROM outbox WHERE published_at IS NULL`)) === 0, 20_000);
  // Two channels each: booking.confirmed ×2, booking.cancelled, booking.changed ×3, refund.succeeded.
  await waitFor(async () => receiver.deliveries() >= 14, 15_000);
}, 120_000);

afterAll(async () => {
  await lane?.stop();
  await h?.close();
  await receiver?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('check:invariants', () => {
  it('a clean database passes: one line per invariant, exit 0', async () => {
    const { code, out } = await runChecker();
    expect(out).toContain('all invariants hold');
    for (const inv of INVARIANTS) expect(out).toMatch(new RegExp(`ok +${inv.name} +checked=\\d+ violations=0`));
    expect(out).toMatch(/car-no-overlap +checked=4 /);
    expect(out).toMatch(/deposits-balanced +checked=2 /);
    expect(out).toMatch(/intents-cancelled +checked=2 /);
    expect(out).toMatch(/notifications-once +checked=14 /);
    // The three holds (car, stay, the repriced car) and nothing else owed: each with its live job in Redis.
    expect(out).toMatch(/jobs-armed +checked=3 /);
    expect(code).toBe(0);
  }, 90_000);

  const broken: [string, () => Promise<unknown>][] = [
    // A HOLD (older than the grace) whose expiry job Redis lost, and no reconciler pass since to arm it again
    // (first: the breaks below write rows, a HOLD among them, that no job was ever added for).
    ['jobs-armed', async () => {
      await h.work!.stop();
      await h.sql(`UPDATE booking SET created_at = now() - interval '1 minute' WHERE id = $1`, [ids.held]);
      expect(await h.queues.expiry.getJob(`expire-${ids.held}-g0`)).toBeTruthy();
      await h.queues.expiry.remove(`expire-${ids.held}-g0`);
    }],
    ['car-no-overlap', async () => {
      await h.sql(`ALTER TABLE booking DROP CONSTRAINT booking_car_no_overlap`);
      await h.sql(`INSERT INTO booking (kind, status, customer_id, car_id, period, deposit_amount, currency, hold_expires_at, total_amount)
                   SELECT kind, 'HOLD', customer_id + 1, car_id, period, deposit_amount, currency, now() + interval '1 hour', total_amount FROM booking WHERE id = $1`, [ids.moved]);
    }],
    // The night the change gave up, still counted: as if the change had not freed it.
    ['stay-inventory', () => h.sql(`BEGIN; SELECT set_config('booking.actor', 'test', true), set_config('booking.reason', 'break', true);
      UPDATE room_night SET held = held + 1 WHERE room_type_id = ${ids.roomType} AND night = '${new Date(ids.freed!).toISOString().slice(0, 10)}'; COMMIT`)],
    // The deposit lowered by the change without its refund.
    ['deposits-balanced', () => h.sql(`UPDATE booking SET deposit_amount = deposit_amount - 1 WHERE id = $1`, [ids.moved])],
    ['payments-accounted', () => h.sql(`INSERT INTO payment (booking_id, provider_txn_id, payment_intent_id, amount, currency, outcome)
      VALUES ($1, 'txn_kept', 'pi_kept', 1000, 'VND', 'REFUNDED')`, [ids.paid])],
    ['refunds-settled', () => h.sql(`INSERT INTO refund (booking_id, payment_intent_id, amount, currency, status, reason, last_error)
      VALUES ($1, 'pi_x', 1000, 'VND', 'FAILED', 'test', 'rejected: 429')`, [ids.paid])],
    ['intents-cancelled', async () => {
      const b = await holdCar(h);
      await requestPay(h, b);
      await h.sql(`UPDATE booking SET status = 'EXPIRED', hold_expires_at = NULL WHERE id = $1`, [b.id]);
    }],
    ['outbox-published', () => h.sql(`INSERT INTO outbox (event_id, topic, message_key, payload, published_at)
      VALUES (gen_random_uuid(), 'booking.held', '1', '{}', now())`)],
    // A second delivery of the same event and channel under another key: the receiver cannot tell it is the same.
    ['notifications-once', async () => {
      const first = JSON.parse(readFileSync(logPath, 'utf8').split('\n')[0]!) as Record<string, unknown>;
      appendFileSync(logPath, `${JSON.stringify({ ...first, idempotencyKey: 'another-key' })}\n`);
    }],
    ['holds-expire', () => h.sql(`UPDATE booking SET hold_expires_at = now() - interval '11 minutes' WHERE id = $1`, [ids.held])],
  ];
  it.each(broken)('%s broken by a direct write: exit 1 and named', async (name, breakIt) => {
    expect((await runChecker(name)).code).toBe(0);
    await breakIt();
    const { code, out } = await runChecker(name);
    expect(out).toMatch(new RegExp(`FAIL ${name} +checked=\\d+ violations=[1-9]`));
    expect(out).toContain(`violated: ${name}`);
    expect(code).toBe(1);
  }, 60_000);

  it('every invariant was broken above', () => {
    expect(broken.map(([n]) => n).sort()).toEqual(INVARIANTS.map((i) => i.name).sort());
  });
});
