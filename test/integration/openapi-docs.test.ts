import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { inHours, type Reply } from '../helpers/http.js';
import { newCustomer } from '../helpers/customers.js';
import { operatorToken } from '../helpers/bookings.js';
import { paymentSucceeded, pspSignature, signedWebhook } from '../helpers/webhooks.js';
import { addDays } from '../helpers/stays.js';

// The served document against the live service: /docs works offline (its assets come from this process),
// and real answers, successes and refusals alike, have a status the document lists for the operation and
// a body that validates against the schema it gives (answers are strict: an undocumented field fails); together the
// cases reach every operation's documented success.

let h: Harness;
let doc: any;
let ajv: Ajv2020;
const seen = new Set<string>();

beforeAll(async () => {
  h = await startHarness();
  doc = (await h.req('GET', '/openapi.json')).json;
  ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
  ajv.addSchema({ ...doc, $id: 'doc' });
});
afterAll(async () => h?.close());

const pointer = (...parts: string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

/** Calls `method template` (path ids filled from `ids`) and checks the answer against the document. */
async function call(
  method: 'GET' | 'POST' | 'PUT', template: string, opts: { ids?: Record<string, number | string>; token?: string; body?: unknown;
    raw?: string; headers?: Record<string, string>; query?: string } = {},
): Promise<Reply> {
  const path = template.replace(/\{(\w+)\}/g, (_, n) => String(opts.ids?.[n])) + (opts.query ? `?${opts.query}` : '');
  const r = await h.req(method, path, opts);
  const op = doc.paths[template]?.[method.toLowerCase()];
  expect(op, `${method} ${template} is described`).toBeDefined();
  const where = `${method} ${template} → ${r.status} ${r.text.slice(0, 300)}`;
  expect(Object.keys(op.responses), where).toContain(String(r.status));
  expect(r.headers.get('x-request-id'), where).toBeTruthy();
  const media = op.responses[r.status].content?.['application/json'];
  if (media) {
    const validate = ajv.getSchema(`doc#/${pointer('paths', template, method.toLowerCase(), 'responses', String(r.status), 'content', 'application/json', 'schema')}`)!;
    expect(validate(r.json), `${where}\n${JSON.stringify(validate.errors, null, 2)}`).toBe(true);
  }
  seen.add(`${method} ${template} ${r.status}`);
  return r;
}

describe('the OpenAPI document against the running service', () => {
  it('serves /docs, an offline page whose scripts and styles come from this process', async () => {
    const page = await call('GET', '/docs');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    const assets = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(assets.length).toBeGreaterThanOrEqual(3);
    for (const a of assets) {
      expect(a, 'no CDN').not.toMatch(/^(https?:)?\/\//);
      const r = await call('GET', '/docs/{asset}', { ids: { asset: a.replace(/^docs\//, '') } });
      expect(r.status, a).toBe(200);
      expect(r.text.length, a).toBeGreaterThan(20);
    }
    expect((await h.req('GET', '/docs/swagger-ui-bundle.js')).text).toContain('SwaggerUIBundle');
    expect((await h.req('GET', '/docs/init.js')).text).toContain("url: 'openapi.json'");
    expect((await call('GET', '/docs/{asset}', { ids: { asset: 'package.json' } })).status).toBe(404);
  });

  it('serves /docs/ (trailing slash) as a working page too: every asset it loads, and the document, resolve', async () => {
    // Regression: /docs/ answered the page, whose relative assets then resolved to /docs/docs/* (404): a blank page.
    for (const path of ['/docs', '/docs/']) {
      const page = await fetch(`${h.baseUrl}${path}`);
      expect(page.status, path).toBe(200);
      const html = await page.text();
      const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => new URL(m[1]!, page.url).href);
      const init = assets.find((a) => a.endsWith('/init.js'))!;
      const script = await (await fetch(init)).text();
      const documentUrl = new URL(script.match(/url: '([^']+)'/)![1]!, page.url).href;
      for (const a of [...assets, documentUrl]) expect((await fetch(a)).status, `${path}: ${a}`).toBe(200);
    }
  });

  it('answers the catalogue, search and inventory operations as documented', async () => {
    const host = h.token(901, 'host');
    const op = operatorToken(h);
    const plate = `OA-${Date.now()}`;
    const car = await call('POST', '/cars', { token: host, body: { plate, model: 'M', city: 'OAS', dailyPrice: 10, depositAmount: 7 } });
    expect(car.status).toBe(201);
    expect((await call('POST', '/cars', { token: host, body: { plate, model: 'M', city: 'OAS', dailyPrice: 10, depositAmount: 7 } })).status).toBe(409);
    expect((await call('POST', '/cars', { token: h.token(5, 'customer'), body: {} })).status).toBe(403);
    expect((await call('POST', '/cars', { body: {} })).status).toBe(401);
    expect((await call('POST', '/cars', { token: host, body: { plate: 1 } })).status).toBe(400);
    expect((await call('POST', '/cars', { token: host, raw: 'x'.repeat(1024 * 1024 + 1) })).status).toBe(413);
    expect((await call('GET', '/cars', { query: `city=OAS&from=${encodeURIComponent(inHours(30))}&to=${encodeURIComponent(inHours(40))}` })).json.cars).toHaveLength(1);
    expect((await call('GET', '/cars', { query: 'city=OAS' })).status).toBe(400);

    const hotel = await call('POST', '/hotels', { token: op, body: { name: 'Docs', city: 'OAS', timezone: 'Asia/Ho_Chi_Minh' } });
    const rt = await call('POST', '/hotels/{hotelId}/room-types', { token: op, ids: { hotelId: hotel.json.id }, body: { name: 'Double', depositAmount: 5 } });
    expect((await call('POST', '/hotels/{hotelId}/room-types', { token: op, ids: { hotelId: 999999 }, body: { name: 'X', depositAmount: 5 } })).status).toBe(404);
    const from = addDays(new Date().toISOString().slice(0, 10), 3);
    const range = { from, to: addDays(from, 2) };
    const ids = { roomTypeId: rt.json.id };
    expect((await call('PUT', '/room-types/{roomTypeId}/inventory', { token: op, ids, body: { ...range, sellable: 2, reason: 'open' } })).status).toBe(200);
    expect((await call('GET', '/room-types/{roomTypeId}/inventory', { token: op, ids, query: `from=${range.from}&to=${range.to}` })).json.nights).toHaveLength(2);
    const stay = await call('POST', '/bookings', { token: newCustomer(h).token, body: { roomTypeId: rt.json.id, checkIn: range.from, checkOut: range.to, rooms: 2 } });
    expect(stay.status).toBe(201);
    expect((await call('PUT', '/room-types/{roomTypeId}/inventory', { token: op, ids, body: { ...range, sellable: 1, reason: 'x' } })).status).toBe(409);
    expect((await call('GET', '/room-types/{roomTypeId}/inventory/audit', { token: op, ids, query: `from=${range.from}&to=${range.to}` })).json.entries.length).toBeGreaterThan(0);
    expect((await call('GET', '/hotels/availability', { query: `city=OAS&checkIn=${range.from}&checkOut=${range.to}` })).status).toBe(200);
    expect((await call('GET', '/bookings/{id}', { token: op, ids: { id: stay.json.bookingId } })).json.kind).toBe('stay');
  });

  it('answers the rate plan, calendar and quote operations, and priced holds, as documented', async () => {
    const op = operatorToken(h);
    const hotel = await call('POST', '/hotels', { token: op, body: { name: 'Priced', city: 'OAP', timezone: 'Asia/Ho_Chi_Minh' } });
    const rt = (await call('POST', '/hotels/{hotelId}/room-types', { token: op, ids: { hotelId: hotel.json.id }, body: { name: 'Twin', depositAmount: 5 } })).json;
    const from = addDays(new Date().toISOString().slice(0, 10), 5);
    const range = { from, to: addDays(from, 3) };
    await call('PUT', '/room-types/{roomTypeId}/inventory', { token: op, ids: { roomTypeId: rt.id }, body: { ...range, sellable: 3, reason: 'open' } });
    const plan = await call('POST', '/room-types/{roomTypeId}/rate-plans', { token: op, ids: { roomTypeId: rt.id }, body: { name: 'Flexible' } });
    expect(plan.status).toBe(201);
    const ids = { ratePlanId: plan.json.id };
    expect((await call('GET', '/rate-plans/{ratePlanId}/calendar', { token: op, ids, query: `from=${range.from}&to=${range.to}` })).json.nights[0].price).toBeNull();
    expect((await call('PUT', '/rate-plans/{ratePlanId}/calendar', { token: op, ids, body: { ...range, reason: 'prices', price: 100 } })).status).toBe(200);
    expect((await call('PUT', '/rate-plans/{ratePlanId}/calendar', { token: op, ids, body: { ...range, reason: 'x', stopsell: true } })).status).toBe(400);
    const customer = newCustomer(h);
    const stay = { roomTypeId: rt.id, ratePlanId: plan.json.id, checkIn: range.from, checkOut: addDays(range.from, 2) };
    const quote = await call('POST', '/quotes', { token: customer.token, body: stay });
    expect(quote.status, quote.text).toBe(200);
    expect((await call('GET', '/quotes/{quoteId}', { token: customer.token, ids: { quoteId: quote.json.quoteId } })).json.totalAmount).toBe(200);
    expect((await call('GET', '/quotes/{quoteId}', { token: newCustomer(h).token, ids: { quoteId: quote.json.quoteId } })).status).toBe(404);
    await call('PUT', '/rate-plans/{ratePlanId}/calendar', { token: op, ids, body: { ...range, reason: 'closed', stopSell: true } });
    expect((await call('POST', '/quotes', { token: customer.token, body: stay })).json.error.code).toBe('STAY_RESTRICTED');
    expect((await call('POST', '/bookings', { token: customer.token, body: { ...stay, quoteId: quote.json.quoteId } })).status).toBe(409);
    await call('PUT', '/rate-plans/{ratePlanId}/calendar', { token: op, ids, body: { ...range, reason: 'open again', stopSell: false } });
    const held = await call('POST', '/bookings', { token: customer.token, body: { ...stay, quoteId: quote.json.quoteId } });
    expect(held.json.totalAmount, held.text).toBe(200);
    expect((await call('GET', '/bookings/{id}', { token: customer.token, ids: { id: held.json.bookingId } })).json.ratePlanId).toBe(plan.json.id);
    // A priced stay changed: one night more, one room more (its total and deposit recomputed).
    const grown = await call('POST', '/bookings/{id}/change', { token: customer.token, ids: { id: held.json.bookingId }, body: { checkOut: range.to, rooms: 2 } });
    expect([grown.status, grown.json.totalAmount, grown.json.change?.after.rooms], grown.text).toEqual([200, 600, 2]);
    const sold = await call('POST', '/bookings/{id}/change', { token: customer.token, ids: { id: held.json.bookingId }, body: { rooms: 4 } });
    expect(sold.json.error.code).toBe('SOLD_OUT');
  });

  it('answers the booking operations, the webhook and the operational ones as documented', async () => {
    const host = h.token(902, 'host');
    const car = await call('POST', '/cars', { token: host, body: { plate: `OB-${Date.now()}`, model: 'M', city: 'OAB', dailyPrice: 10, depositAmount: 7 } });
    const customer = newCustomer(h);
    const hold = (hours: number, key?: string) => call('POST', '/bookings', {
      token: customer.token, headers: key ? { 'idempotency-key': key } : {}, body: { carId: car.json.id, from: inHours(hours), to: inHours(hours + 2) },
    });
    const first = await hold(30, 'k-1');
    expect(first.status).toBe(201);
    const replay = await hold(30, 'k-1');
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect((await hold(30)).status).toBe(409);
    expect((await call('POST', '/bookings', { token: customer.token, headers: { 'idempotency-key': 'k-1' }, body: { carId: car.json.id, from: inHours(50), to: inHours(51) } })).status).toBe(422);
    await hold(60);
    await hold(70);
    const limited = await hold(80);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);

    const ids = { id: first.json.bookingId };
    expect((await call('GET', '/bookings/{id}', { token: customer.token, ids })).json.status).toBe('HOLD');
    expect((await call('GET', '/bookings/{id}', { token: customer.token, ids: { id: 'abc' } })).status).toBe(404);
    const pay = await call('GET', '/bookings/{id}/pay', { token: customer.token, ids });
    expect(pay.status).toBe(303);
    expect(pay.headers.get('location')).toMatch(/^http/);
    const changedTo = await call('POST', '/bookings/{id}/change', { token: customer.token, ids, headers: { 'idempotency-key': 'c-1' }, body: { to: inHours(33) } });
    expect([changedTo.status, changedTo.json.change?.before.to], changedTo.text).toEqual([200, inHours(32)]);
    expect((await call('POST', '/bookings/{id}/change', { token: customer.token, ids, headers: { 'idempotency-key': 'c-1' }, body: { to: inHours(33) } })).headers.get('idempotent-replayed')).toBe('true');
    expect((await call('POST', '/bookings/{id}/change', { token: customer.token, ids, headers: { 'idempotency-key': 'c-1' }, body: { to: inHours(34) } })).status).toBe(422);
    expect((await call('POST', '/bookings/{id}/change', { token: customer.token, ids, body: { from: inHours(60), to: inHours(61) } })).json.error.code).toBe('CAR_UNAVAILABLE');
    expect((await call('POST', '/bookings/{id}/change', { token: customer.token, ids, body: {} })).status).toBe(400);
    expect((await call('POST', '/bookings/{id}/change', { token: customer.token, ids: { id: 999999 }, body: { to: inHours(33) } })).status).toBe(404);
    expect((await call('POST', '/bookings/{id}/pickup', { token: host, ids })).status).toBe(409);
    expect((await call('POST', '/bookings/{id}/pickup', { token: customer.token, ids })).status).toBe(403);
    expect((await call('POST', '/bookings/{id}/cancel', { token: customer.token, ids, body: { reason: 'docs' } })).json.status).toBe('CANCELLED');
    expect((await call('POST', '/bookings/{id}/return', { token: host, ids })).status).toBe(409);
    expect((await call('POST', '/bookings/{id}/change', { token: customer.token, ids, body: { to: inHours(35) } })).json.error.code).toBe('INVALID_STATE');
    const story = await call('GET', '/bookings/{id}/timeline', { token: customer.token, ids, query: 'limit=2' });
    expect(story.json.entries).toHaveLength(2);
    const rest = await call('GET', '/bookings/{id}/timeline', { token: host, ids, query: `cursor=${encodeURIComponent(story.json.nextCursor)}` });
    expect(rest.json.entries.map((e: { type: string }) => e.type)).toContain('booking.cancelled');
    expect((await call('GET', '/bookings/{id}/timeline', { token: customer.token, ids, query: 'limit=0' })).status).toBe(400);
    expect((await call('GET', '/bookings/{id}/timeline', { token: newCustomer(h).token, ids })).status).toBe(404);
    // A confirmed booking's trip: pickup and return answer as documented.
    const rider = newCustomer(h);
    const trip = await call('POST', '/bookings', { token: rider.token, body: { carId: car.json.id, from: inHours(100), to: inHours(102) } });
    expect((await signedWebhook(h, paymentSucceeded(trip.json.bookingId, trip.json.depositAmount))).status).toBe(200);
    expect((await call('POST', '/bookings/{id}/pickup', { token: host, ids: { id: trip.json.bookingId } })).json.status).toBe('ON_TRIP');
    expect((await call('POST', '/bookings/{id}/return', { token: host, ids: { id: trip.json.bookingId } })).json.status).toBe('COMPLETED');

    expect((await call('POST', '/payments/webhook', { body: {} })).status).toBe(401);
    const event = { id: `evt_${Date.now()}`, type: 'payment_intent.processing', created: Math.floor(Date.now() / 1000),
      data: { paymentIntentId: 'pi_x', reference: String(first.json.bookingId), amount: 7, currency: 'VND', providerTxnId: null } };
    const raw = JSON.stringify(event);
    const signed = await call('POST', '/payments/webhook', { raw, headers: { 'content-type': 'application/json', 'psp-signature': pspSignature(h.config.PAYMENT_WEBHOOK_SECRET, raw) } });
    expect(signed.status).toBe(200);
    expect(signed.json).toEqual({ received: true });

    expect((await call('GET', '/health')).json).toEqual({ status: 'ok' });
    expect((await call('GET', '/ready')).status).toBe(200);
    expect((await call('GET', '/metrics')).text).toContain('http_request_duration_seconds');
    expect((await call('GET', '/openapi.json')).json.openapi).toBe('3.1.0');
  });

  // Runs last: the cases above together reach every operation's documented success.
  it('reached every operation of the document with its documented success', () => {
    const missing: string[] = [];
    for (const [path, methods] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(methods)) {
        const ok = Object.keys(op.responses).find((s) => s.startsWith('2') || s.startsWith('3'))!;
        if (!seen.has(`${method.toUpperCase()} ${path} ${ok}`)) missing.push(`${method.toUpperCase()} ${path} ${ok}`);
      }
    }
    expect(missing).toEqual([]);
  });
});
