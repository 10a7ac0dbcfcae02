import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allOperations } from '../../api/app.js';
import type { Operation } from '../../api/openapi/operation.js';
import { ERROR_STATUS } from '../../api/middleware/errors.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { inHours, token } from '../helpers/http.js';
import { newCar, HOST_ID } from '../helpers/cars.js';
import { OPERATOR_ID } from '../helpers/bookings.js';
import { stayApi } from '../helpers/stays.js';
import { pspSignature } from '../helpers/webhooks.js';
import {
  Entries, RawJson, hostileDate, hostileHeader, hostileInstant, hostileJson, hostileNumber, hostilePathParam, hostileString, hostileTimezone, jsonText,
} from './arbitraries.js';
import { closeAgent, send, type RawReply, type RawRequest } from './raw-http.js';

// Property-based fuzz of every route of the API and of the webhook. For each request: no 5xx, every refusal in
// the contract's error shape with its code's status, X-Request-Id on every answer, and a refused request writes
// nothing (row counts of every table unchanged). FUZZ_RUNS requests per route (default 100: `npm test` stays fast);
// FUZZ_SEED replays a run.

const RUNS = Number(process.env.FUZZ_RUNS ?? 100);
const SEED = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED);
const CUSTOMER = 500;
const OTHER_CUSTOMER = 501;
type Role = 'customer' | 'host' | 'operator';
/** What a field holds, so its hostile values are of its kind too (an instant gets impossible offsets). */
type Kind = 'instant' | 'date' | 'timezone' | 'any';

/** A valid request of an operation, which the fuzzer then breaks. */
interface Template {
  params?: Record<string, string>;
  query?: Record<string, string>;
  body?: Record<string, unknown>;
  kinds?: Record<string, Kind>;
  /** The caller (default: the first role of the operation). */
  sub?: number;
}

interface Fixtures {
  carId: number;
  bookingId: number;
  hotelId: number;
  roomTypeId: number;
  ratePlanId: number;
  quoteId: number;
  deposit: number;
}

const day = (n: number) => new Date(Date.now() + n * 86_400_000).toISOString().slice(0, 10);
const instantKinds = { from: 'instant', to: 'instant' } as const;
const dateKinds = { from: 'date', to: 'date', checkIn: 'date', checkOut: 'date' } as const;

/** One template per operation; an operation without one fails the coverage test, so a new route cannot be forgotten. */
const TEMPLATES: Record<string, (f: Fixtures, seed: number) => Template> = {
  health: () => ({}),
  ready: () => ({}),
  metrics: () => ({}),
  openapi: () => ({}),
  docs: () => ({}),
  docsAsset: () => ({ params: { asset: 'init.js' } }),
  createCar: (_f, seed) => ({
    body: { plate: `F-${seed.toString(36)}`, model: 'Morning', city: 'HN', dailyPrice: 500_000, depositAmount: 1_000_000, currency: 'VND', turnaroundMinutes: 60 },
  }),
  searchCars: () => ({ query: { city: 'HN', from: inHours(48), to: inHours(72), limit: '10' }, kinds: instantKinds }),
  holdBooking: (f, seed) => (seed % 2 === 0
    ? { body: { carId: f.carId, from: inHours(24 * 40), to: inHours(24 * 40 + 4) }, kinds: instantKinds }
    : { body: { roomTypeId: f.roomTypeId, checkIn: day(20), checkOut: day(22), rooms: 1, guests: 1, ratePlanId: f.ratePlanId }, kinds: dateKinds }),
  getBooking: (f) => ({ params: { id: String(f.bookingId) } }),
  payBooking: (f) => ({ params: { id: String(f.bookingId) } }),
  cancelBooking: (f) => ({ params: { id: String(f.bookingId) }, body: { reason: 'changed my mind' }, sub: OTHER_CUSTOMER }),
  changeBooking: (f, seed) => ({
    params: { id: String(f.bookingId) }, kinds: instantKinds,
    body: seed % 3 === 0 ? { to: inHours(24 * 10 + 5 + (seed % 7)) } : seed % 3 === 1 ? { from: inHours(24 * 10 + 1 + (seed % 2)), to: inHours(24 * 10 + 6) }
      : { carId: f.carId, to: inHours(24 * 10 + 3 + (seed % 5)) },
  }),
  pickupBooking: (f) => ({ params: { id: String(f.bookingId) } }),
  returnBooking: (f) => ({ params: { id: String(f.bookingId) } }),
  paymentWebhook: () => ({}),
  searchStays: () => ({ query: { city: 'HCM', checkIn: day(20), checkOut: day(22), rooms: '1' }, kinds: dateKinds }),
  createHotel: () => ({ body: { name: 'Fuzz Hotel', city: 'HCM', timezone: 'Asia/Ho_Chi_Minh', checkInTime: '14:00' }, kinds: { timezone: 'timezone' } }),
  createRoomType: (f) => ({ params: { hotelId: String(f.hotelId) }, body: { name: 'Twin', depositAmount: 300_000, currency: 'VND', maxGuests: 2 } }),
  setInventory: (f) => ({ params: { roomTypeId: String(f.roomTypeId) }, body: { from: day(30), to: day(32), sellable: 5, reason: 'fuzz' }, kinds: dateKinds }),
  getInventory: (f) => ({ params: { roomTypeId: String(f.roomTypeId) }, query: { from: day(1), to: day(30) }, kinds: dateKinds }),
  getInventoryAudit: (f) => ({ params: { roomTypeId: String(f.roomTypeId) }, query: { from: day(1), to: day(30), limit: '10', cursor: Buffer.from('{"a":0,"x":[],"l":0}').toString('base64url') }, kinds: dateKinds }),
  createRatePlan: (f) => ({ params: { roomTypeId: String(f.roomTypeId) }, body: { name: 'Fuzz plan' } }),
  setCalendar: (f) => ({ params: { ratePlanId: String(f.ratePlanId) }, body: { from: day(40), to: day(42), reason: 'fuzz', price: 700_000, minStay: 1 }, kinds: dateKinds }),
  getCalendar: (f) => ({ params: { ratePlanId: String(f.ratePlanId) }, query: { from: day(1), to: day(30) }, kinds: dateKinds }),
  createQuote: (f) => ({ body: { roomTypeId: f.roomTypeId, ratePlanId: f.ratePlanId, checkIn: day(20), checkOut: day(22), rooms: 1, guests: 1 }, kinds: dateKinds }),
  getQuote: (f) => ({ params: { quoteId: String(f.quoteId) } }),
};

const DELETE = Symbol('delete');
const valueOf = (kind: Kind): fc.Arbitrary<unknown> => {
  const own = kind === 'instant' ? hostileInstant : kind === 'date' ? hostileDate : kind === 'timezone' ? hostileTimezone : hostileString;
  return fc.oneof({ weight: kind === 'any' ? 1 : 4, arbitrary: own }, { weight: 3, arbitrary: hostileJson }, { weight: 1, arbitrary: fc.constant(DELETE) });
};
const queryValueOf = (kind: Kind): fc.Arbitrary<string | string[] | typeof DELETE> => fc.oneof(
  kind === 'instant' ? hostileInstant : kind === 'date' ? hostileDate : hostileString,
  hostileNumber.map((n) => (n instanceof RawJson ? n.text : String(n))),
  fc.array(hostileString, { minLength: 2, maxLength: 3 }),
  fc.constant(DELETE),
);

const enc = (s: string) => encodeURIComponent(s.replace(/[\ud800-\udfff]/g, '\ufffd'));

/** `a` once in `n` requests, else null. */
const sometimes = <T>(a: fc.Arbitrary<T>, n: number) => fc.oneof({ weight: n - 1, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: a });

/** How one request is broken (each part independent; "keep" leaves that part valid, so deeper code is reached). */
const mutationArb = fc.record({
  pathParam: sometimes(hostilePathParam, 4),
  queryEdits: fc.array(fc.tuple(fc.nat(), fc.boolean(), fc.constantFrom<Kind>('instant', 'date', 'any')), { maxLength: 3 }),
  queryRaw: sometimes(fc.constantFrom('%', '%zz=1', 'from=%E0%A4%A', '&&&', 'a[b]=1&a[c]=2', 'from[]=x', '__proto__[x]=1', '=', `x=${'y'.repeat(3_000)}`), 8),
  bodyEdits: fc.array(fc.tuple(fc.nat(), fc.boolean()), { maxLength: 3 }),
  bodyMode: fc.constantFrom('edit', 'edit', 'edit', 'edit', 'whole', 'badJson', 'duplicateKeys', 'huge', 'empty'),
  contentType: fc.constantFrom('application/json', 'application/json', 'application/json', 'text/plain', 'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x', 'application/json; charset=utf-16', '', 'application/json; charset=latin1'),
  auth: fc.oneof({ weight: 14, arbitrary: fc.constant('right') },
    fc.constantFrom('none', 'wrongRole', 'expired', 'tampered', 'algNone', 'hostile', 'otherTenant')),
  authHeader: hostileHeader,
  idempotencyKey: sometimes(hostileHeader, 2),
  traceparent: sometimes(hostileHeader, 3),
  requestId: sometimes(hostileHeader, 3),
  seed: fc.nat(),
});
type Mutation = typeof mutationArb extends fc.Arbitrary<infer M> ? M : never;

let h: Harness;
let fx: Fixtures;
let countSql: string;

const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
function authFor(op: Operation, tpl: Template, m: Mutation): string | undefined {
  if (op.auth === 'public') return m.auth === 'hostile' ? m.authHeader : undefined;
  const role = op.auth[0]! as Role;
  const sub = tpl.sub ?? (role === 'customer' ? (op.operationId === 'holdBooking' ? 200_000 + (m.seed % 100_000) : CUSTOMER) : role === 'host' ? HOST_ID : OPERATOR_ID);
  const secret = h.config.JWT_SECRET;
  switch (m.auth) {
    case 'none': return undefined;
    case 'hostile': return m.authHeader;
    case 'wrongRole': return `Bearer ${h.token(sub, (['customer', 'host', 'operator'] as const).find((r) => !op.auth.includes(r)) ?? role)}`;
    case 'expired': return `Bearer ${token(secret, { sub: String(sub), role }, -60)}`;
    case 'tampered': return `Bearer ${h.token(sub, role).slice(0, -2)}xx`;
    case 'algNone': return `Bearer ${b64({ alg: 'none', typ: 'JWT' })}.${b64({ sub: String(sub), role: 'operator' })}.`;
    case 'otherTenant': return `Bearer ${h.token(role === 'host' ? HOST_ID + 1 : sub + 7, role)}`;
    default: return `Bearer ${h.token(sub, role)}`;
  }
}

function pathOf(op: Operation, tpl: Template, m: Mutation): string {
  let path = op.path;
  const names = [...op.path.matchAll(/\{(\w+)\}/g)].map((x) => x[1]!);
  names.forEach((name, i) => {
    const hostile = m.pathParam !== null && i === m.seed % names.length;
    path = path.replace(`{${name}}`, hostile ? m.pathParam! : tpl.params?.[name] ?? '1');
  });
  return path;
}

type QueryValue = string | string[] | typeof DELETE;
const kindOf = (tpl: Template, key: string): Kind => tpl.kinds?.[key] ?? 'any';

function queryOf(tpl: Template, m: Mutation, picks: PerKind<QueryValue>[]): string {
  if (m.queryRaw !== null) return `?${m.queryRaw}`;
  const q: Record<string, string | string[]> = { ...tpl.query };
  const keys = Object.keys(q);
  m.queryEdits.forEach(([k, extra], i) => {
    const key = extra || keys.length === 0 ? `x${k % 3}` : keys[k % keys.length]!;
    const v = picks[i]![kindOf(tpl, key)];
    if (v === DELETE) delete q[key];
    else q[key] = v;
  });
  const parts = Object.entries(q).flatMap(([k, v]) => (Array.isArray(v) ? v : [v]).map((x) => `${enc(k)}=${enc(x)}`));
  // Node refuses headers over 16 KiB with its own 431 before the app sees them: keep the request line shorter.
  return parts.length ? `?${parts.join('&')}`.slice(0, 4_000) : '';
}

function bodyOf(tpl: Template, m: Mutation, picks: PerKind<unknown>[], whole: unknown): string | undefined {
  switch (m.bodyMode) {
    case 'whole': return jsonText(whole);
    case 'badJson': return ['{', '{"a":', '[1,]', '{"a":1,}', "{'a':1}", 'NaN', '\u0000', '{"a":"\\u00"}', '\ufeff{}', 'tru'][m.seed % 10]!;
    case 'huge': return `{"pad":"${'z'.repeat(1024 * 1024 + 10)}"}`;
    case 'empty': return '';
  }
  const body: Record<string, unknown> = { ...(tpl.body ?? {}) };
  const keys = Object.keys(body);
  m.bodyEdits.forEach(([k, extra], i) => {
    const key = extra || keys.length === 0 ? ['pad', '__proto__', 'constructor', 'extra'][k % 4]! : keys[k % keys.length]!;
    const v = picks[i]![kindOf(tpl, key)];
    if (v === DELETE) delete body[key];
    else body[key] = v;
  });
  if (m.bodyMode === 'duplicateKeys') {
    const entries: [string, unknown][] = Object.entries(body);
    const [k, v] = entries[m.seed % Math.max(1, entries.length)] ?? ['a', 1];
    return jsonText(new Entries([...entries, [k, typeof v === 'number' ? -v : null], [k, v]]));
  }
  return jsonText(body);
}

/** A hostile value of each kind, for one edit: the field edited takes the one of its own kind. */
type PerKind<T> = Record<Kind, T>;
const pickArb = <T>(of: (k: Kind) => fc.Arbitrary<T>): fc.Arbitrary<PerKind<T>> =>
  fc.record({ instant: of('instant'), date: of('date'), timezone: of('timezone'), any: of('any') });
const requestArb = fc.tuple(
  mutationArb,
  fc.array(pickArb(queryValueOf), { minLength: 3, maxLength: 3 }),
  fc.array(pickArb(valueOf), { minLength: 3, maxLength: 3 }),
  hostileJson,
).map(([m, qv, bv, whole]) => ({ m, qv, bv, whole }));

function build(op: Operation, tpl: Template, m: Mutation, qv: PerKind<QueryValue>[], bv: PerKind<unknown>[], whole: unknown): RawRequest {
  const headers: Record<string, string> = {};
  const auth = authFor(op, tpl, m);
  if (auth !== undefined) headers.authorization = auth;
  if (m.idempotencyKey !== null) headers['idempotency-key'] = m.idempotencyKey;
  if (m.traceparent !== null) headers.traceparent = m.traceparent;
  if (m.requestId !== null) headers['x-request-id'] = m.requestId;
  const hasBody = op.method !== 'get';
  let body: string | undefined;
  if (hasBody) {
    body = bodyOf(tpl, m, bv, whole);
    if (m.contentType) headers['content-type'] = m.contentType;
  }
  return { method: op.method.toUpperCase(), path: pathOf(op, tpl, m) + queryOf(tpl, m, qv), headers, body };
}

/** The webhook: validly signed hostile events (and unsigned, stale or forged ones). */
function webhookRequest(m: Mutation, bv: PerKind<unknown>[], whole: unknown): RawRequest {
  const event = {
    id: `evt_${m.seed}`, type: ['payment_intent.succeeded', 'payment_intent.processing', 'payment_intent.payment_failed', 'refund.succeeded', 'refund.failed', 'x.y'][m.seed % 6],
    created: Math.floor(Date.now() / 1000),
    data: { paymentIntentId: `pi_${m.seed}`, reference: String(fx.bookingId), amount: fx.deposit, currency: 'VND', providerTxnId: `txn_${m.seed}`, refundId: `re_${m.seed}` },
  };
  const tpl: Template = { body: event };
  const raw = m.bodyMode === 'edit' && m.seed % 2 === 0
    // Half the edits go into `data`, where the effects are.
    ? jsonText({ ...event, data: Object.fromEntries(Object.entries(event.data).map(([k, v], i) => [k, i === m.seed % 6 ? bv[0]!.any : v]).filter(([, v]) => v !== DELETE)) })
    : bodyOf(tpl, m, bv, whole)!;
  const headers: Record<string, string> = { 'content-type': m.contentType || 'application/json' };
  const t = Math.floor(Date.now() / 1000);
  const signing = m.seed % 10;
  if (signing < 6) headers['psp-signature'] = pspSignature(h.config.PAYMENT_WEBHOOK_SECRET, raw, t);
  else if (signing === 6) headers['psp-signature'] = pspSignature(h.config.PAYMENT_WEBHOOK_SECRET, raw, t - 301);
  else if (signing === 7) headers['psp-signature'] = `t=${t},v1=${createHmac('sha256', 'wrong').update(`${t}.${raw}`).digest('hex')}`;
  else if (signing === 8) headers['psp-signature'] = m.authHeader;
  if (m.requestId !== null) headers['x-request-id'] = m.requestId;
  return { method: 'POST', path: '/payments/webhook', headers, body: raw };
}

async function tableCounts(): Promise<Record<string, number>> {
  return (await h.sql(countSql)).rows[0];
}

const statusOf = (code: string) => (ERROR_STATUS as Record<string, number>)[code];

/** The per-request checks; returns a message for fast-check when one fails. */
async function check(req: RawRequest, reply: RawReply, before: Record<string, number>) {
  const where = `${req.method} ${req.path.slice(0, 200)} → ${reply.status} ${reply.text.slice(0, 300)}`;
  expect(reply.status, where).toBeLessThan(500);
  expect(reply.headers['x-request-id'], where).toBeTruthy();
  if (reply.status < 400) return;
  const body = JSON.parse(reply.text);
  expect(body, where).toMatchObject({ error: { code: expect.any(String), message: expect.any(String) } });
  expect(Object.keys(body), where).toEqual(['error']);
  expect(reply.status, where).toBe(reply.status === 413 ? 413 : statusOf(body.error.code));
  if (reply.status === 413) expect(body.error.code, where).toBe('VALIDATION');
  const after = await tableCounts();
  expect(after, `${where}: a refused request wrote rows`).toEqual(before);
}

/** Fails with the request and answer only (a counterexample's hostile values can be megabytes), and the seed to replay it. */
function briefly<T>(out: fc.RunDetails<T>): void {
  if (!out.failed) return;
  const cause = (out.errorInstance as Error | undefined)?.message ?? String(out.errorInstance);
  throw new Error(`${cause.slice(0, 1500)}\n(replay: FUZZ_SEED=${out.seed}, after ${out.numRuns} runs)`);
}

const ops = allOperations();
const tallies: Record<string, Record<string, number>> = {};

beforeAll(async () => {
  h = await startHarness();
  const stays = stayApi(h);
  const carId = await newCar(h, { depositAmount: 1_500_000 });
  const hold = await h.req('POST', '/bookings', { token: h.token(CUSTOMER, 'customer'), body: { carId, from: inHours(24 * 10), to: inHours(24 * 10 + 4) } });
  expect(hold.status, hold.text).toBe(201);
  const hotel = await stays.hotel({ city: 'HCM' });
  const rt = await stays.roomType(hotel.id, 400_000);
  await stays.setInventory(rt.id, day(1), day(60), 5);
  const plan = await h.req('POST', `/room-types/${rt.id}/rate-plans`, { token: stays.operator, body: { name: 'Base' } });
  await h.req('PUT', `/rate-plans/${plan.json.id}/calendar`, { token: stays.operator, body: { from: day(1), to: day(60), reason: 'setup', price: 800_000 } });
  const quote = await h.req('POST', '/quotes', { token: h.token(CUSTOMER, 'customer'), body: { roomTypeId: rt.id, ratePlanId: plan.json.id, checkIn: day(20), checkOut: day(22) } });
  expect(quote.status, quote.text).toBe(200);
  fx = { carId, bookingId: hold.json.bookingId, hotelId: hotel.id, roomTypeId: rt.id, ratePlanId: plan.json.id, quoteId: quote.json.quoteId, deposit: 1_500_000 };
  const tables = (await h.sql(`SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename NOT IN ('pgmigrations', 'idempotency_key') ORDER BY 1`)).rows.map((r) => r.tablename as string);
  countSql = `SELECT ${tables.map((t) => `(SELECT count(*)::int FROM "${t}") AS "${t}"`).join(', ')}`;
});

afterAll(async () => {
  closeAgent();
  const total = Object.values(tallies).reduce((n, t) => n + Object.values(t).reduce((a, b) => a + b, 0), 0);
  console.log(`fuzz: ${RUNS} runs per route, ${total} requests, 0 answers ≥ 500\n${Object.entries(tallies).map(([k, t]) => `  ${k}: ${JSON.stringify(t)}`).join('\n')}`);
  await h?.close();
});

describe('fuzz: every route', () => {
  it('has a template for every operation of the OpenAPI document (a new route cannot be forgotten)', () => {
    expect(ops.map((o) => o.operationId).filter((id) => !TEMPLATES[id])).toEqual([]);
    expect(Object.keys(TEMPLATES).filter((id) => !ops.some((o) => o.operationId === id))).toEqual([]);
  });

  for (const op of ops) {
    it(`${op.method.toUpperCase()} ${op.path} (${op.operationId})`, async () => {
      const make = TEMPLATES[op.operationId];
      if (!make) throw new Error(`no fuzz template for ${op.operationId}`);
      const tally: Record<string, number> = (tallies[op.operationId] = {});
      await fc.assert(
        fc.asyncProperty(requestArb, async ({ m, qv, bv, whole }) => {
          const req = op.operationId === 'paymentWebhook' ? webhookRequest(m, bv, whole) : build(op, make(fx, m.seed), m, qv, bv, whole);
          const before = await tableCounts();
          const reply = await send(h.baseUrl, req);
          tally[reply.status] = (tally[reply.status] ?? 0) + 1;
          await check(req, reply, before);
        }),
        { numRuns: RUNS, seed: SEED, endOnFailure: true, reporter: briefly },
      );
      // No Idempotency-Key is left claimed by a refused request.
      expect((await h.sql(`SELECT count(*)::int AS n FROM idempotency_key WHERE state = 'IN_PROGRESS'`)).rows[0].n).toBe(0);
    }, 600_000);
  }
});
