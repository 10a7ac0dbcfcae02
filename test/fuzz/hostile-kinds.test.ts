import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { hostToken, newCar } from '../helpers/cars.js';
import { newCustomer } from '../helpers/customers.js';
import { inHours } from '../helpers/http.js';
import { paymentSucceeded } from '../helpers/webhooks.js';
import { blankHeader, boundaryAmount } from './arbitraries.js';
import { closeAgent, send, type RawReply } from './raw-http.js';

// Issue 16's kinds of defect, fuzzed by their shape with an oracle that knows the expected effect (the endpoint fuzz
// only knows the document): concurrent mixes against the hold limiter, currency codes in every case, webhook bodies
// in other bytes, headers given empty, amounts at the money bound. FUZZ_RUNS/5 cases per property (default 20).

const RUNS = Math.max(1, Math.ceil(Number(process.env.FUZZ_RUNS ?? 100) / 5));
const SEED = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED);
const MAX_MONEY = 1e15;
let h: Harness;
let slot = 0;
/** A 1-hour period no other case takes (turnaround 0 on the cars made here). */
const period = () => {
  const at = 48 + 2 * slot++;
  return { from: inHours(at), to: inHours(at + 1) };
};
const codeOf = (r: RawReply) => (r.status >= 400 ? `${r.status} ${JSON.parse(r.text).error.code}` : String(r.status));
const tally = (rs: RawReply[]) => rs.reduce<Record<string, number>>((m, r) => ((m[codeOf(r)] = (m[codeOf(r)] ?? 0) + 1), m), {});
const post = (path: string, token: string, body: string | Buffer, headers: Record<string, string> = {}) =>
  send(h.baseUrl, { method: 'POST', path, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers }, body });
const signBytes = (raw: Buffer | string, t = Math.floor(Date.now() / 1000)) =>
  `t=${t},v1=${createHmac('sha256', h.config.PAYMENT_WEBHOOK_SECRET).update(`${t}.`).update(raw).digest('hex')}`;
const webhook = (raw: Buffer | string, headers: Record<string, string> = { 'psp-signature': signBytes(raw) }) =>
  send(h.baseUrl, { method: 'POST', path: '/payments/webhook', headers: { 'content-type': 'application/json', ...headers }, body: raw });
const booking = async (id: number, token: string) => JSON.parse((await send(h.baseUrl, { method: 'GET', path: `/bookings/${id}`, headers: { authorization: `Bearer ${token}` } })).text);
const options = { numRuns: RUNS, seed: SEED, endOnFailure: true };

let carPool: number[] = [];
/** A fresh car (no turnaround) of HOST_ID. */
const car = async () => carPool.pop() ?? newCar(h, { turnaroundMinutes: 0 });

beforeAll(async () => {
  h = await startHarness();
  carPool = await Promise.all(Array.from({ length: 8 }, () => newCar(h, { turnaroundMinutes: 0 })));
});
afterAll(async () => {
  closeAgent();
  await h?.close();
});

describe('fuzz: issue 16 kinds', () => {
  it('concurrent mixes on the hold limiter: good ones are created up to the limit, refusals never cause a 429', async () => {
    await fc.assert(fc.asyncProperty(
      fc.record({
        good: fc.integer({ min: 0, max: 5 }), doomed: fc.integer({ min: 0, max: 5 }), invalid: fc.integer({ min: 0, max: 2 }),
        unknown: fc.integer({ min: 0, max: 2 }), keyed: fc.boolean(), blockMs: fc.constantFrom(0, 0, 100, 300), order: fc.array(fc.nat(), { minLength: 14, maxLength: 14 }),
      }),
      async (mix) => {
        const c = newCustomer(h);
        const taken = await car();
        const p = period();
        const kinds = [
          ...Array<string>(mix.good).fill('good'), ...Array<string>(mix.doomed).fill('doomed'),
          ...Array<string>(mix.invalid).fill('invalid'), ...Array<string>(mix.unknown).fill('unknown'),
        ].map((k, i) => ({ k, o: mix.order[i]! })).sort((a, b) => a.o - b.o).map((x) => x.k);
        const cars = await Promise.all(kinds.map((k) => (k === 'good' ? newCar(h, { turnaroundMinutes: 0 }) : Promise.resolve(taken))));
        // The taken period, held by someone else: committed now, or in an open transaction the doomed wait on.
        const blocker = new pg.Client({ connectionString: h.config.DATABASE_URL });
        await blocker.connect();
        try {
          await blocker.query('BEGIN');
          await blocker.query(`INSERT INTO booking (kind, status, customer_id, car_id, period, deposit_amount, total_amount, currency, hold_expires_at, next_expiry_check_at)
            SELECT 'car', 'HOLD', 1, c.id, tstzrange($2::timestamptz, $3::timestamptz, '[)'), c.deposit_amount, c.daily_price, c.currency, now() + interval '15 minutes',
                   now() + interval '15 minutes' FROM car c WHERE c.id = $1`, [taken, p.from, p.to]);
          if (mix.blockMs === 0) await blocker.query('COMMIT');
          const sent = kinds.map((k, i) => {
            const body = k === 'invalid' ? { carId: cars[i], from: p.to, to: p.from } : { carId: k === 'unknown' ? 999_999_999 : cars[i], ...p };
            return post('/bookings', c.token, JSON.stringify(body), mix.keyed ? { 'idempotency-key': `mix-${c.id}-${i}` } : {});
          });
          if (mix.blockMs > 0) {
            await new Promise((r) => setTimeout(r, mix.blockMs));
            await blocker.query('COMMIT');
          }
          const answers = await Promise.all(sent);
          // Good ones: min(good, 3) created, the rest 429. A refusal is its own code, or 429 once 3 holds exist (the limit
          // is judged before the database: a customer at the limit learns nothing more); invalid ones are 400 before it.
          const of = (k: string) => answers.filter((_, i) => kinds[i] === k).map(codeOf);
          const where = `${JSON.stringify(tally(answers))} for ${JSON.stringify(mix)}`;
          const good = of('good');
          expect(good.filter((x) => x === '201').length, where).toBe(Math.min(mix.good, 3));
          expect(good.filter((x) => x !== '201').every((x) => x === '429 RATE_LIMITED'), where).toBe(true);
          const atLimit = mix.good >= 3 ? ['429 RATE_LIMITED'] : [];
          expect(of('doomed').every((x) => ['409 CAR_UNAVAILABLE', ...atLimit].includes(x)), where).toBe(true);
          expect(of('unknown').every((x) => ['404 NOT_FOUND', ...atLimit].includes(x)), where).toBe(true);
          expect(of('invalid').every((x) => x === '400 VALIDATION'), where).toBe(true);
          expect((await h.sql('SELECT count(*)::int AS n FROM booking WHERE customer_id = $1', [c.id])).rows[0].n).toBe(Math.min(mix.good, 3));
        } finally {
          await blocker.end();
        }
      },
    ), options);
  }, 600_000);

  it('a payment in any case of the hold\'s currency confirms it; another currency is refunded', async () => {
    const variants = fc.oneof(
      fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }).map((up) => [...'vnd'].map((ch, i) => (up[i] ? ch.toUpperCase() : ch)).join('')),
      fc.constantFrom('usd', 'USD', 'VN', 'VNDD', 'ＶＮＤ', 'vnđ'),
    );
    await fc.assert(fc.asyncProperty(variants, async (currency) => {
      const c = newCustomer(h);
      const r = await post('/bookings', c.token, JSON.stringify({ carId: await car(), ...period() }));
      expect(r.status, r.text).toBe(201);
      const b = JSON.parse(r.text);
      const answer = await webhook(JSON.stringify(paymentSucceeded(b.bookingId, b.depositAmount, { currency })));
      expect(answer.status, answer.text).toBe(200);
      const after = await booking(b.bookingId, c.token);
      if (currency.toUpperCase() === 'VND') {
        expect({ status: after.status, refund: after.refund }, currency).toEqual({ status: 'CONFIRMED', refund: null });
      } else {
        expect({ status: after.status, refund: after.refund?.amount }, currency).toEqual({ status: 'HOLD', refund: b.depositAmount });
      }
    }), options);
  }, 600_000);

  it('webhook bodies in other bytes, signed over those bytes: applied when UTF-8, 400 when not, never 401', async () => {
    const shape = fc.record({
      bom: fc.boolean(), crlf: fc.boolean(), indent: fc.constantFrom(0, 2, '\t'), trailing: fc.constantFrom('', ' ', '\r\n', '\n\n', ' \t\r\n'),
      invalid: fc.option(fc.constantFrom([0xff], [0xc3], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80], [0x80]), { freq: 3 }),
    });
    await fc.assert(fc.asyncProperty(shape, async (s) => {
      const c = newCustomer(h);
      const r = await post('/bookings', c.token, JSON.stringify({ carId: await car(), ...period() }));
      const b = JSON.parse(r.text);
      let text = JSON.stringify(paymentSucceeded(b.bookingId, b.depositAmount), null, s.indent || undefined);
      if (s.crlf) text = text.replace(/\n/g, '\r\n');
      const parts = [s.bom ? Buffer.from([0xef, 0xbb, 0xbf]) : Buffer.alloc(0), Buffer.from(`${text}${s.trailing}`)];
      if (s.invalid) parts.push(Buffer.from(s.invalid));
      const answer = await webhook(Buffer.concat(parts));
      expect(answer.status, `${JSON.stringify(s)} ${answer.text}`).toBe(s.invalid ? 400 : 200);
      expect((await booking(b.bookingId, c.token)).status).toBe(s.invalid ? 'HOLD' : 'CONFIRMED');
    }), options);
  }, 600_000);

  it('a header given empty or of whitespace only is malformed wherever the API reads it', async () => {
    await fc.assert(fc.asyncProperty(blankHeader, fc.constantFrom('hold', 'change', 'auth', 'signature', 'requestId'), async (blank, where) => {
      const c = newCustomer(h);
      const body = JSON.stringify({ carId: await car(), ...period() });
      if (where === 'hold') {
        const r = await post('/bookings', c.token, body, { 'idempotency-key': blank });
        expect(codeOf(r)).toBe('400 VALIDATION');
        expect(JSON.parse(r.text).error.details.field).toBe('Idempotency-Key');
      } else if (where === 'change') {
        const held = JSON.parse((await post('/bookings', c.token, body)).text);
        const r = await post(`/bookings/${held.bookingId}/change`, c.token, JSON.stringify({ to: inHours(2000) }), { 'idempotency-key': blank });
        expect(codeOf(r)).toBe('400 VALIDATION');
      } else if (where === 'auth') {
        const r = await send(h.baseUrl, { method: 'POST', path: '/bookings', headers: { authorization: blank, 'content-type': 'application/json' }, body });
        expect(codeOf(r)).toBe('401 UNAUTHENTICATED');
      } else if (where === 'signature') {
        expect(codeOf(await webhook(JSON.stringify(paymentSucceeded(1, 1)), { 'psp-signature': blank }))).toBe('401 INVALID_SIGNATURE');
      } else {
        // A header the API only tolerates: an empty one is a bad value, replaced by a minted id.
        const r = await send(h.baseUrl, { method: 'GET', path: '/health', headers: { 'x-request-id': blank, traceparent: blank } });
        expect(r.status).toBe(200);
        expect(String(r.headers['x-request-id'])).toMatch(/^[0-9a-f-]{36}$/);
      }
    }), options);
  }, 600_000);

  it('amounts at the money bound: created within 10^15, refused beyond; a hold\'s total is exact or 400', async () => {
    const days = fc.integer({ min: 1, max: 30 });
    await fc.assert(fc.asyncProperty(boundaryAmount, boundaryAmount, days, async (dailyPrice, depositAmount, n) => {
      const created = await post('/cars', hostToken(h), JSON.stringify({ plate: `B-${slot++}-${Date.now() % 1e6}`, model: 'M', city: 'BND', dailyPrice, depositAmount, turnaroundMinutes: 0 }));
      if (dailyPrice > MAX_MONEY || depositAmount > MAX_MONEY) {
        expect(codeOf(created), `${dailyPrice} ${depositAmount}`).toBe('400 VALIDATION');
        return;
      }
      expect(created.status, created.text).toBe(201);
      const carId = JSON.parse(created.text).id;
      const at = 48 + 24 * 31 * (slot++ % 40);
      const r = await post('/bookings', newCustomer(h).token, JSON.stringify({ carId, from: inHours(at), to: inHours(at + 24 * n) }));
      const total = BigInt(dailyPrice) * BigInt(n);
      if (total > BigInt(MAX_MONEY)) {
        expect(codeOf(r), `${dailyPrice} × ${n}`).toBe('400 VALIDATION');
      } else {
        expect(r.status, r.text).toBe(201);
        const hold = JSON.parse(r.text);
        expect(BigInt(hold.totalAmount)).toBe(total);
        expect(hold.depositAmount).toBe(depositAmount);
      }
    }), options);
  }, 600_000);
});
