import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPspSandbox, sandboxAt, type PspSandbox } from '../helpers/sandbox.js';
import { sleep } from '../helpers/http.js';

// The sandbox provider's fault knobs the chaos runner steers (sandbox/control.ts, sandbox/fault-rules.ts), driven
// over HTTP: per-endpoint answers for the next N calls or a fraction, timeouts that still carry the call out,
// webhook loss, forgetting idempotency keys, and GET /sandbox/idle.

const API_KEY = 'k';
let psp: PspSandbox;
let base: string;
const sb = () => sandboxAt(base, API_KEY);
const v1 = (method: string, path: string, body?: unknown, key?: string) =>
  fetch(`${base}/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(5_000),
  });
const intentBody = { amount: 1000, currency: 'VND', reference: '42' };

beforeAll(async () => {
  // Webhooks go nowhere (a closed port): deliveries fail and give up quickly.
  psp = createPspSandbox({ apiKey: API_KEY, webhookSecret: 's', webhookUrl: 'http://127.0.0.1:1/hook', webhookAttempts: 1, webhookBackoffMs: 1 });
  base = (await psp.listen(0)).url;
});
afterAll(async () => psp?.close());

describe('sandbox fault knobs', () => {
  it('answers the next N calls of one endpoint with the status asked for, then serves again', async () => {
    await sb().post('/faults/answers', { endpoint: 'intents.create', answer: 429, times: 2 });
    expect((await v1('POST', '/payment_intents', intentBody)).status).toBe(429);
    expect((await v1('GET', '/payment_intents?reference=42')).status).toBe(200); // other endpoint untouched
    const second = await v1('POST', '/payment_intents', intentBody);
    expect(second.status).toBe(429);
    expect((await second.json()).error.code).toBe('rate_limited');
    expect((await v1('POST', '/payment_intents', intentBody)).status).toBe(200);
    expect((await sb().setFaults({})).answers).toEqual([]);
  });

  it('401, 409 and 5xx on any endpoint; a fraction of calls with `rate`', async () => {
    for (const answer of [401, 409, 503]) {
      await sb().post('/faults/answers', { endpoint: '*', answer, times: 1 });
      expect((await v1('GET', '/payment_intents?reference=1')).status).toBe(answer);
    }
    await sb().post('/faults/answers', { endpoint: 'intents.list', answer: 500, rate: 1 });
    expect((await v1('GET', '/payment_intents?reference=1')).status).toBe(500);
    await sb().resetFaults();
    expect((await v1('GET', '/payment_intents?reference=1')).status).toBe(200);
  });

  it('refuses a rule without exactly one of times / rate', async () => {
    expect((await sb().control('POST', '/faults/answers', { endpoint: '*', answer: 500 })).status).toBe(400);
    expect((await sb().control('POST', '/faults/answers', { endpoint: 'nope', answer: 500, times: 1 })).status).toBe(400);
  });

  it('a timeout hangs past the client and still carries the call out', async () => {
    await sb().post('/faults/answers', { endpoint: 'intents.create', answer: 'timeout', times: 1, hangMs: 800 });
    const body = { ...intentBody, reference: 'hang' };
    const gaveUp = await fetch(`${base}/v1/payment_intents`, {
      method: 'POST', headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json', 'idempotency-key': 'hang-1' },
      body: JSON.stringify(body), signal: AbortSignal.timeout(200),
    }).then(() => false, () => true);
    expect(gaveUp).toBe(true);
    await sleep(900);
    const list = await (await v1('GET', '/payment_intents?reference=hang')).json();
    expect(list.data).toHaveLength(1);
  });

  it('forgets idempotency keys: the same key then creates anew', async () => {
    const body = { ...intentBody, reference: 'forget' };
    const a = await (await v1('POST', '/payment_intents', body, 'same')).json();
    expect((await (await v1('POST', '/payment_intents', body, 'same')).json()).id).toBe(a.id);
    expect((await sb().post('/idempotency-keys/forget')).forgotten).toBeGreaterThanOrEqual(1);
    expect((await (await v1('POST', '/payment_intents', body, 'same')).json()).id).not.toBe(a.id);
  });

  it('loses webhooks at the rate asked for, and GET /sandbox/idle says when nothing is pending', async () => {
    await sb().setFaults({ webhookLossRate: 1 });
    const intent = await (await v1('POST', '/payment_intents', { ...intentBody, reference: 'lost' })).json();
    await sb().post(`/intents/${intent.id}/succeed`);
    await sb().idle();
    expect(await (await sb().control('GET', '/idle')).json()).toEqual({ idle: true, pending: 0 });
    const sent = (await sb().webhooksFor('lost'));
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ lost: true, attempts: 0 });
    await sb().resetFaults();
  });
});
