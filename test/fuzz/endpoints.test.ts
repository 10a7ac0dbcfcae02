import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allOperations } from '../../api/app.js';
import type { Operation } from '../../api/openapi/operation.js';
import { startHarness, type Harness } from '../helpers/harness.js';
import { token } from '../helpers/http.js';
import { ACCESS, ROLE_OF, allowedCallers, callersRefused, routeKey, type Caller } from '../helpers/access-matrix.js';
import {
  Entries, RawJson, blankHeader, boundaryAmount, hostileCurrency, hostileDate, hostileHeader, hostileInstant, hostileJson, hostileNumber, hostilePathParam,
  hostileString, hostileTimezone, jsonText,
} from './arbitraries.js';
import { closeAgent, send, type RawReply, type RawRequest } from './raw-http.js';
import { changedTables, contractOf, tableContents, type Contract } from './contract.js';
import { AWAITED_TEMPLATES, SUB, TEMPLATES, createFixtures, type Fixtures, type Kind, type Template } from './templates.js';

// Property-based fuzz of every route of the API and of the webhook, each request a valid one (test/fuzz/templates.ts,
// as a caller the contract lets through) with some of its facets broken: credentials, path, query, body, headers.
// Every answer is held to the contract (test/fuzz/contract.ts): no 5xx, X-Request-Id, a status the document lists;
// a success validates against its schema, and the request it accepted against the document's; a refusal is in the
// error shape with a code of that status, and writes nothing (a checksum of every table's content); GETs write
// nothing either. A request with nothing broken reaches the documented success; one whose only broken facet is its
// credential gets exactly the contract's 401, 403 or 404; and enough runs of every route get past auth and
// validation that the service's logic is what is fuzzed. FUZZ_RUNS requests per route (default 100), FUZZ_SEED
// replays a run.

const RUNS = Number(process.env.FUZZ_RUNS ?? 100);
const SEED = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED);
/** The least share of a route's runs that must get past auth and validation (a third or more do: 4 σ above this). */
const MIN_PAST_SHARE = 0.15;

/**
 * Where the code under test departs from the contract and another branch is mending it: counted and printed, not
 * failed. Remove an entry once its fix is merged (the fuzz then fails on it again).
 */
const KNOWN_DEVIATIONS: { name: string; matches: (req: RawRequest, reply: RawReply) => boolean }[] = [];
const deviationsSeen = new Map<string, number>();

/** The parts of a request the fuzz may break; "headers" are ones the service must tolerate (X-Request-Id, traceparent). */
const FACETS = ['auth', 'path', 'query', 'body', 'headers', 'idempotencyKey', 'signature'] as const;
type Facet = (typeof FACETS)[number];
const AUTH_KINDS = ['none', 'hostile', 'expired', 'tampered', 'algNone', 'wrongRole', 'otherTenant'] as const;

const DELETE = Symbol('delete');
const valueOf = (kind: Kind): fc.Arbitrary<unknown> => {
  const own = kind === 'instant' ? hostileInstant : kind === 'date' ? hostileDate : kind === 'timezone' ? hostileTimezone
    : kind === 'currency' ? hostileCurrency : kind === 'amount' ? boundaryAmount : hostileString;
  return fc.oneof({ weight: kind === 'any' ? 1 : 4, arbitrary: own }, { weight: 3, arbitrary: hostileJson }, { weight: 1, arbitrary: fc.constant(DELETE) });
};
const queryValueOf = (kind: Kind): fc.Arbitrary<string | string[] | typeof DELETE> => fc.oneof(
  kind === 'instant' ? hostileInstant : kind === 'date' ? hostileDate : hostileString,
  hostileNumber.map((n) => (n instanceof RawJson ? n.text : String(n))),
  fc.array(hostileString, { minLength: 2, maxLength: 3 }),
  fc.constant(DELETE),
);
const enc = (s: string) => encodeURIComponent(s.replace(/[\ud800-\udfff]/g, '\ufffd'));

/** Of the facets that apply to the operation: nothing broken (2 in 10), one (5 in 10), or two or three at once. */
const brokenArb = (facets: Facet[]): fc.Arbitrary<Facet[]> => fc.oneof(
  { weight: 2, arbitrary: fc.constant<Facet[]>([]) },
  { weight: 5, arbitrary: fc.constantFrom(...facets).map((f) => [f]) },
  { weight: 3, arbitrary: fc.subarray(facets, { minLength: Math.min(2, facets.length), maxLength: 3 }) },
);
/** An edit of a field: one of the template's (3 in 4) or an extra one. */
const editArb = fc.tuple(fc.nat(), fc.oneof({ weight: 3, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }));

/** How one request is broken: each facet's hostile value is drawn, and used only when the facet is broken. */
const mutationArb = (facets: Facet[]) => fc.record({
  broken: brokenArb(facets),
  caller: fc.nat(),
  pathParam: hostilePathParam,
  queryEdits: fc.array(editArb, { minLength: 1, maxLength: 3 }),
  queryRaw: fc.option(fc.constantFrom('%', '%zz=1', 'from=%E0%A4%A', '&&&', 'a[b]=1&a[c]=2', 'from[]=x', '__proto__[x]=1', '=', `x=${'y'.repeat(3_000)}`), { freq: 4 }),
  bodyEdits: fc.array(editArb, { minLength: 1, maxLength: 3 }),
  bodyMode: fc.constantFrom('edit', 'edit', 'edit', 'edit', 'whole', 'badJson', 'duplicateKeys', 'huge', 'empty', ...RAW_BYTE_MODES),
  contentType: fc.constantFrom('application/json', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x',
    'application/json; charset=utf-16', '', 'application/json; charset=latin1'),
  auth: fc.constantFrom(...AUTH_KINDS),
  authHeader: hostileHeader,
  // The contract's 1–255 characters, at and beyond both ends, or given empty / of whitespace only.
  idempotencyKey: fc.oneof(hostileHeader, fc.constantFrom('k', 'x'.repeat(255), 'x'.repeat(256), 'x'.repeat(2_000)), blankHeader),
  traceparent: fc.option(fc.oneof(hostileHeader, blankHeader)),
  requestId: fc.option(fc.oneof(hostileHeader, blankHeader)),
  /** A currency code in another case (`vnd`) on the webhook's event, a third of the time. */
  eventCurrency: fc.constantFrom('VND', 'VND', 'vnd', 'Vnd', 'vNd'),
  seed: fc.nat(),
});
type Mutation = ReturnType<typeof mutationArb> extends fc.Arbitrary<infer M> ? M : never;

/** A hostile value of each kind, for one edit: the field edited takes the one of its own kind. */
type PerKind<T> = Record<Kind, T>;
const pickArb = <T>(of: (k: Kind) => fc.Arbitrary<T>): fc.Arbitrary<PerKind<T>> =>
  fc.record({ instant: of('instant'), date: of('date'), timezone: of('timezone'), currency: of('currency'), amount: of('amount'), any: of('any') });
const requestArb = (facets: Facet[]) => fc.tuple(
  mutationArb(facets), fc.array(pickArb(queryValueOf), { minLength: 3, maxLength: 3 }), fc.array(pickArb(valueOf), { minLength: 3, maxLength: 3 }), hostileJson,
).map(([m, qv, bv, whole]) => ({ m, qv, bv, whole }));
type Draw = ReturnType<typeof requestArb> extends fc.Arbitrary<infer D> ? D : never;

let h: Harness;
let fx: Fixtures;
let contract: Contract;
let checksums: () => Promise<Record<string, string>>;

const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
const bearerOf = (c: Caller) => (c === 'anonymous' ? undefined : `Bearer ${h.token(SUB[c], ROLE_OF[c])}`);

/** The Authorization header for a broken credential (the caller's role and id where one is needed). */
function brokenAuth(key: string, caller: Caller, m: Mutation): string | undefined {
  const role = caller === 'anonymous' ? 'customer' : ROLE_OF[caller];
  const sub = caller === 'anonymous' ? SUB.owner : SUB[caller];
  const pick = (cs: Caller[]) => cs[m.seed % cs.length];
  switch (m.auth) {
    case 'none': return undefined;
    case 'hostile': return m.authHeader;
    case 'expired': return `Bearer ${token(h.config.JWT_SECRET, { sub: String(sub), role }, -60)}`;
    case 'tampered': {
      // One character of the signature's first bytes changed: its last character carries 2 unused bits, so a change
      // there (the 'xx' this was) can decode to the very same signature, a valid token (seen at FUZZ_SEED=20261202).
      const t = h.token(sub, role);
      const at = t.lastIndexOf('.') + 3;
      return `Bearer ${t.slice(0, at)}${t[at] === 'A' ? 'B' : 'A'}${t.slice(at + 1)}`;
    }
    case 'algNone': return `Bearer ${b64({ alg: 'none', typ: 'JWT' })}.${b64({ sub: String(sub), role: 'operator' })}.`;
    case 'wrongRole': return bearerOf(pick(callersRefused(key, 403)) ?? caller);
    case 'otherTenant': return bearerOf(pick(callersRefused(key, 404)) ?? caller);
  }
}

/** What a request whose only broken facet is its credential must answer, by the access matrix (null: not one answer). */
function authOnlyAnswer(key: string, m: Mutation, success: string): string | null {
  if (ACCESS[key]!.verdicts.anonymous !== 401) return success; // public: credentials are ignored
  if (m.auth === 'wrongRole') return callersRefused(key, 403).length ? '403 FORBIDDEN' : null;
  if (m.auth === 'otherTenant') return callersRefused(key, 404).length ? '404 NOT_FOUND' : null;
  return '401 UNAUTHENTICATED';
}

function pathOf(op: Operation, tpl: Template, broken: boolean, m: Mutation): string {
  const names = [...op.path.matchAll(/\{(\w+)\}/g)].map((x) => x[1]!);
  return names.reduce((path, name, i) => path.replace(`{${name}}`, broken && i === m.seed % names.length ? m.pathParam : tpl.params?.[name] ?? '1'), op.path);
}

function queryOf(tpl: Template, broken: boolean, m: Mutation, picks: PerKind<string | string[] | typeof DELETE>[]): string {
  if (broken && m.queryRaw !== null) return `?${m.queryRaw}`;
  const q: Record<string, string | string[]> = { ...tpl.query };
  const keys = Object.keys(q);
  if (broken) {
    m.queryEdits.forEach(([k, extra], i) => {
      const key = extra || keys.length === 0 ? `x${k % 3}` : keys[k % keys.length]!;
      const v = picks[i]![tpl.kinds?.[key] ?? 'any'];
      if (v === DELETE) delete q[key];
      else q[key] = v;
    });
  }
  const parts = Object.entries(q).flatMap(([k, v]) => (Array.isArray(v) ? v : [v]).map((x) => `${enc(k)}=${enc(x)}`));
  // Node refuses headers over 16 KiB with its own 431 before the app sees them: keep the request line shorter.
  return parts.length ? `?${parts.join('&')}`.slice(0, 4_000) : '';
}

function bodyOf(tpl: Template, broken: boolean, m: Mutation, picks: PerKind<unknown>[], whole: unknown): string | Buffer {
  const body: Record<string, unknown> = { ...(tpl.body ?? {}) };
  if (!broken) return jsonText(body);
  switch (m.bodyMode) {
    // The same valid body in other bytes: a UTF-8 BOM first, CRLF line breaks, trailing whitespace (all still the
    // request: it must succeed as the unbroken one does), or one byte that is not UTF-8 (malformed: 400).
    case 'bom': return Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(jsonText(body))]);
    case 'crlf': return JSON.stringify(JSON.parse(jsonText(body)), null, 2).replace(/\n/g, '\r\n');
    case 'trailing': return `${jsonText(body)} \r\n\t `;
    case 'invalidUtf8': return Buffer.concat([Buffer.from(jsonText(body).replace(/\}$/, ' ')), Buffer.from([[0xff, 0xc3, 0xed, 0x80][m.seed % 4]!]), Buffer.from('}')]);
    case 'whole': return jsonText(whole);
    case 'badJson': return ['{', '{"a":', '[1,]', '{"a":1,}', "{'a':1}", 'NaN', '\u0000', '{"a":"\\u00"}', '\ufeff{}', 'tru'][m.seed % 10]!;
    case 'huge': return `{"pad":"${'z'.repeat(1024 * 1024 + 10)}"}`;
    case 'empty': return '';
  }
  const keys = Object.keys(body);
  m.bodyEdits.forEach(([k, extra], i) => {
    const key = extra || keys.length === 0 ? ['pad', '__proto__', 'constructor', 'extra'][k % 4]! : keys[k % keys.length]!;
    const v = picks[i]![tpl.kinds?.[key] ?? 'any'];
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

/** Body modes that only change the bytes of the valid body; all but invalidUtf8 leave it the same request. */
const RAW_BYTE_MODES = ['bom', 'crlf', 'trailing', 'invalidUtf8'] as const;
/** The body is broken in a way that leaves the request valid (the same JSON in other bytes). */
const benignBody = (broken: Set<Facet>, m: Mutation) => broken.has('body') && ['bom', 'crlf', 'trailing'].includes(m.bodyMode);

/** The request: the template as `caller`, with the facets in `broken` broken (those that apply to the operation). */
function build(op: Operation, tpl: Template, caller: Caller, broken: Set<Facet>, d: Draw): RawRequest {
  const { m } = d;
  const headers: Record<string, string> = {};
  const auth = broken.has('auth') ? brokenAuth(routeKey(op.method, op.path), caller, m) : bearerOf(caller);
  if (auth !== undefined) headers.authorization = auth;
  if (broken.has('idempotencyKey')) headers['idempotency-key'] = m.idempotencyKey;
  if (broken.has('headers')) {
    if (m.traceparent !== null) headers.traceparent = m.traceparent;
    headers['x-request-id'] = m.requestId ?? m.authHeader;
  }
  let body: string | Buffer | undefined;
  if (op.method !== 'get') {
    body = bodyOf(tpl, broken.has('body'), m, d.bv, d.whole);
    const contentType = broken.has('body') && !RAW_BYTE_MODES.includes(m.bodyMode as never) ? m.contentType : 'application/json';
    if (contentType) headers['content-type'] = contentType;
  }
  return { method: op.method.toUpperCase(), path: pathOf(op, tpl, broken.has('path'), m) + queryOf(tpl, broken.has('query'), m, d.qv), headers, body };
}

/** The webhook: a well-formed event, validly signed unless its signature is broken. */
function webhookRequest(broken: Set<Facet>, d: Draw): RawRequest {
  const { m } = d;
  const event = {
    id: `evt_${m.seed}`, type: ['payment_intent.succeeded', 'payment_intent.processing', 'payment_intent.payment_failed', 'refund.succeeded', 'refund.failed', 'x.y'][m.seed % 6],
    created: Math.floor(Date.now() / 1000),
    data: { paymentIntentId: `pi_${m.seed}`, reference: String(fx.bookingId), amount: fx.deposit, currency: m.eventCurrency, providerTxnId: `txn_${m.seed}`, refundId: `re_${m.seed}` },
  };
  const raw = broken.has('body') && m.bodyMode === 'edit' && m.seed % 2 === 0
    // Half the edits go into `data`, where the effects are.
    ? jsonText({ ...event, data: Object.fromEntries(Object.entries(event.data).map(([k, v], i) => [k, i === m.seed % 6 ? d.bv[0]!.any : v]).filter(([, v]) => v !== DELETE)) })
    : bodyOf({ body: event }, broken.has('body'), m, d.bv, d.whole);
  const rawBytes = !broken.has('body') || !RAW_BYTE_MODES.includes(m.bodyMode as never);
  const headers: Record<string, string> = { 'content-type': broken.has('body') && rawBytes ? m.contentType || 'application/json' : 'application/json' };
  const t = Math.floor(Date.now() / 1000);
  // The provider signs the exact bytes it sends (CONTRACT.md "Webhook"), whatever they are.
  const sign = (secret: string, at: number) => `t=${at},v1=${createHmac('sha256', secret).update(`${at}.`).update(raw).digest('hex')}`;
  const signing = broken.has('signature') ? m.seed % 5 : -1;
  if (signing === -1) headers['psp-signature'] = sign(h.config.PAYMENT_WEBHOOK_SECRET, t);
  else if (signing === 0) headers['psp-signature'] = sign(h.config.PAYMENT_WEBHOOK_SECRET, t - 400);
  else if (signing === 1) headers['psp-signature'] = sign('wrong', t);
  else if (signing === 2) headers['psp-signature'] = m.authHeader;
  else if (signing === 3) headers['psp-signature'] = fc.sample(blankHeader, { numRuns: 1, seed: m.seed })[0]!;
  if (broken.has('headers')) headers['x-request-id'] = m.requestId ?? m.authHeader;
  return { method: 'POST', path: '/payments/webhook', headers, body: raw };
}

/** The facets that apply to an operation (a GET has no body; only the hold takes an Idempotency-Key). */
function facetsOf(op: Operation): Facet[] {
  const webhook = op.operationId === 'paymentWebhook';
  return FACETS.filter((f) => ({
    auth: !webhook, signature: webhook, path: op.path.includes('{'), query: !webhook, body: op.method !== 'get', headers: true, idempotencyKey: op.operationId === 'holdBooking',
  })[f]);
}

/** Fails with the request and answer only (a counterexample's hostile values can be megabytes), and the seed to replay it. */
function briefly<T>(out: fc.RunDetails<T>): void {
  if (!out.failed) return;
  const cause = (out.errorInstance as Error | undefined)?.message ?? String(out.errorInstance);
  throw new Error(`${cause.slice(0, 2500)}\n(replay: FUZZ_SEED=${out.seed}, after ${out.numRuns} runs)`);
}

const ops = allOperations();
const tallies: Record<string, Record<string, number>> = {};

beforeAll(async () => {
  h = await startHarness({ env: { HOLD_RATE_LIMIT: '1000000' } });
  const doc = await h.req('GET', '/openapi.json');
  expect(doc.status, doc.text).toBe(200);
  contract = contractOf(doc.json);
  fx = await createFixtures(h);
  const tables = (await h.sql(`SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'pgmigrations' ORDER BY 1`)).rows.map((r) => r.tablename as string);
  checksums = tableContents(h, tables);
});

afterAll(async () => {
  closeAgent();
  const total = Object.values(tallies).reduce((n, t) => n + Object.values(t).reduce((a, b) => a + b, 0), 0);
  const deviations = [...deviationsSeen].map(([name, n]) => `\n  known deviation, ${n}×: ${name}`).join('');
  console.log(`fuzz: ${RUNS} runs per route, ${total} requests${deviations}\n${Object.entries(tallies).map(([k, t]) => `  ${k}: ${JSON.stringify(t)}`).join('\n')}`);
  await h?.close();
});

/** Every check of one answer; `before` is every table's checksum just before the request. */
async function check(
  op: Operation, req: RawRequest, reply: RawReply, before: Record<string, string>, expected: string | null, routedElsewhere = false,
): Promise<Record<string, string>> {
  const where = `${req.method} ${req.path.slice(0, 200)} ${JSON.stringify(req.headers).slice(0, 300)} ${(req.body ?? '').slice(0, 300)}\n  → ${reply.status} ${reply.text.slice(0, 300)}`;
  const rules = contract.operation(op.method, op.path);
  const after = await checksums();
  const deviation = KNOWN_DEVIATIONS.find((k) => k.matches(req, reply));
  if (deviation) {
    deviationsSeen.set(deviation.name, (deviationsSeen.get(deviation.name) ?? 0) + 1);
    return after;
  }
  expect(reply.status, where).toBeLessThan(500);
  expect(reply.headers['x-request-id'], where).toBeTruthy();
  // A path the broken id routes to another operation (`/docs/` is the page's redirect) answers by that one's rules.
  if (!routedElsewhere) expect(rules.answerProblems(reply), where).toEqual([]);
  if (expected !== null) expect(reply.status < 400 ? String(reply.status) : `${reply.status} ${JSON.parse(reply.text).error.code}`, where).toBe(expected);
  if (reply.status < 400 && !routedElsewhere) expect(rules.requestProblems(req), `${where}\n  accepted a request the document refuses`).toEqual([]);
  // A refusal writes nothing, but for the answer a hold with an Idempotency-Key remembers for its replay (refusals
  // other than 429 are replayed, docs/decisions.md); nor does a read (but GET /bookings/{id}/pay: the intent).
  const mayWrite = reply.status < 400 ? op.method !== 'get' || op.operationId === 'payBooking' : false;
  const keyKept = [400, 404, 409, 422].includes(reply.status) && req.headers['idempotency-key'] !== undefined;
  const changed = changedTables(before, after).filter((t) => !(keyKept && t === 'idempotency_key'));
  if (!mayWrite) expect(changed, `${where}\n  wrote to these tables`).toEqual([]);
  return after;
}

describe('fuzz: every route', () => {
  it('has a template for every operation of the OpenAPI document (a new route cannot be forgotten)', () => {
    expect(ops.map((o) => o.operationId).filter((id) => !TEMPLATES[id])).toEqual([]);
    // A template ahead of its operation only for a route another branch brings, while it is not served.
    const ahead = Object.keys(TEMPLATES).filter((id) => !ops.some((o) => o.operationId === id));
    expect(ahead.filter((id) => !AWAITED_TEMPLATES[id] || !ACCESS[AWAITED_TEMPLATES[id]!]?.pending)).toEqual([]);
    expect(ops.map((o) => routeKey(o.method, o.path)).filter((k) => !ACCESS[k])).toEqual([]);
  });

  for (const op of ops) {
    it(`${op.method.toUpperCase()} ${op.path} (${op.operationId})`, async () => {
      const key = routeKey(op.method, op.path);
      const make = TEMPLATES[op.operationId]!;
      const success = String(contract.operation(op.method, op.path).success);
      const webhook = op.operationId === 'paymentWebhook';
      const callers = webhook ? (['anonymous'] as Caller[]) : allowedCallers(key);
      const draws = requestArb(facetsOf(op));
      const tally: Record<string, number> = (tallies[op.operationId] = {});
      let last = await checksums();
      let past = 0;

      // Unmutated, the template reaches the documented success as every caller the contract lets through.
      const none = fc.sample(draws, { numRuns: 1, seed: 1 })[0]!;
      for (const caller of callers) {
        const tpl = await make({ h, fx, caller });
        const before = await checksums();
        const req = webhook ? webhookRequest(new Set(), none) : build(op, tpl, caller, new Set(), none);
        last = await check(op, req, await send(h.baseUrl, req), before, success);
      }

      await fc.assert(
        fc.asyncProperty(draws, async (d) => {
          const broken = new Set(d.m.broken);
          const caller = callers[d.m.caller % callers.length]!;
          const made = make({ h, fx, caller });
          const setupWrites = made instanceof Promise; // a fresh booking for this run
          const tpl = await made;
          const before = setupWrites ? await checksums() : last;
          const req = webhook ? webhookRequest(broken, d) : build(op, tpl, caller, broken, d);
          const reply = await send(h.baseUrl, req);
          tally[reply.status] = (tally[reply.status] ?? 0) + 1;
          // Tolerated headers, and a body only re-encoded (BOM, CRLF, trailing whitespace), leave the request as valid.
          const only = [...broken].filter((f) => f !== 'headers' && !(f === 'body' && benignBody(broken, d.m)));
          const expected = only.length === 0 ? success : only.length === 1 && only[0] === 'auth' ? authOnlyAnswer(key, d.m, success) : null;
          // An empty or dot-segment path id makes the path another route's (GET /docs/ is GET /docs).
          const routedElsewhere = broken.has('path') && ['', '.', '..', '%2e', '%2e%2e'].includes(d.m.pathParam.toLowerCase());
          last = await check(op, req, reply, before, expected, routedElsewhere);
          if (![400, 401, 403, 413].includes(reply.status) && !(reply.status === 404 && broken.has('path'))) past++;
        }),
        { numRuns: RUNS, seed: SEED, endOnFailure: true, reporter: briefly },
      );
      // The fuzz explored the service, not only its gates.
      expect(past / RUNS, `${past} of ${RUNS} runs got past auth and validation: ${JSON.stringify(tally)}`).toBeGreaterThanOrEqual(MIN_PAST_SHARE);
      // No Idempotency-Key is left claimed by a refused request.
      expect((await h.sql(`SELECT count(*)::int AS n FROM idempotency_key WHERE state = 'IN_PROGRESS'`)).rows[0].n).toBe(0);
    }, 600_000);
  }
});
