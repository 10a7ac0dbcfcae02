import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { ProviderRejectedError, ProviderUnreachableError, PspClient } from '../../shared/psp/client.js';
import { verifyWebhookSignature } from '../../shared/psp/signature.js';
import { createPspSandbox, defaultFaults, sandboxAt, type PspSandbox, type SandboxClient, type WebhookEvent } from '../helpers/sandbox.js';

const apiKey = 'test-key';
const secret = 'test-webhook-secret';

interface Received {
  signature: string | undefined;
  rawBody: string;
  event: WebhookEvent;
}
const received: Received[] = [];
let failNextWebhooks = 0;
let receiver: Server;
let sandbox: PspSandbox;
let baseUrl: string;
/** The sandbox driven from outside, over its control routes: never through `sandbox`'s in-memory state. */
let driver: SandboxClient;
let client: PspClient;
let seq = 0;
const ref = () => `booking-${Date.now()}-${++seq}`;

async function waitFor<T>(probe: () => T | undefined, timeoutMs = 3000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 10));
  }
}
const eventsFor = (reference: string) => received.filter((r) => r.event.data.reference === reference);
const control = (path: string, body?: unknown) => driver.control('POST', path, body);

beforeAll(async () => {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (failNextWebhooks > 0) {
        failNextWebhooks--;
        res.writeHead(500).end();
        return;
      }
      const rawBody = Buffer.concat(chunks).toString('utf8');
      const signature = req.headers['psp-signature'] as string | undefined;
      received.push({ signature, rawBody, event: JSON.parse(rawBody) as WebhookEvent });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"received":true}');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const webhookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/payments/webhook`;
  sandbox = createPspSandbox({ apiKey, webhookSecret: secret, webhookUrl, webhookBackoffMs: 20, logger: pino({ level: 'silent' }) });
  ({ url: baseUrl } = await sandbox.listen());
  driver = sandboxAt(baseUrl, apiKey);
  client = new PspClient({ baseUrl, apiKey, timeoutMs: 200, retries: 2, backoffInitialMs: 10 });
});

afterEach(async () => {
  await driver.resetFaults();
  failNextWebhooks = 0;
  await driver.idle();
});

afterAll(async () => {
  await sandbox?.close();
  await new Promise((r) => receiver?.close(r));
});

describe('PspClient against the sandbox provider', () => {
  it('creates an intent idempotently and lists it by reference', async () => {
    const reference = ref();
    const input = { amount: 2_000_000, currency: 'VND', reference };
    const a = await client.createPaymentIntent(input, `deposit-${reference}`);
    const b = await client.createPaymentIntent(input, `deposit-${reference}`);
    expect(b).toEqual(a);
    expect(a).toMatchObject({ status: 'requires_payment', amount: 2_000_000, currency: 'VND', reference });
    expect(a.id).toMatch(/^pi_/);
    expect(a.checkoutUrl).toBe(`${baseUrl}/checkout/${a.id}`);

    const other = await client.createPaymentIntent(input, `other-${reference}`);
    expect(other.id).not.toBe(a.id);
    const listed = await client.listPaymentIntents(reference);
    expect(listed.map((i) => i.id)).toEqual([a.id, other.id]);
    expect(await client.listPaymentIntents('no-such-reference')).toEqual([]);
    expect(await client.getPaymentIntent(a.id)).toEqual(a);
  });

  it('refuses an Idempotency-Key reused with a different body (422)', async () => {
    const reference = ref();
    await client.createPaymentIntent({ amount: 100, currency: 'VND', reference }, `k-${reference}`);
    const err = await client
      .createPaymentIntent({ amount: 200, currency: 'VND', reference }, `k-${reference}`)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProviderRejectedError);
    expect((err as ProviderRejectedError).status).toBe(422);
  });

  it('maps 4xx to ProviderRejectedError with status and body', async () => {
    const notFound = await client.getPaymentIntent('pi_nope').catch((e: unknown) => e);
    expect(notFound).toBeInstanceOf(ProviderRejectedError);
    expect((notFound as ProviderRejectedError).status).toBe(404);
    expect((notFound as ProviderRejectedError).body).toMatchObject({ error: { code: 'not_found' } });

    const badKey = new PspClient({ baseUrl, apiKey: 'wrong' });
    const unauth = await badKey.listPaymentIntents('x').catch((e: unknown) => e);
    expect((unauth as ProviderRejectedError).status).toBe(401);

    const bad = await client
      .createPaymentIntent({ amount: -1, currency: 'VND', reference: 'r' }, 'bad-body')
      .catch((e: unknown) => e);
    expect((bad as ProviderRejectedError).status).toBe(400);
  });

  it('pays via the control endpoint and sends a signed payment_intent.succeeded webhook', async () => {
    const reference = ref();
    const intent = await client.createPaymentIntent({ amount: 500, currency: 'VND', reference }, `deposit-${reference}`);
    expect((await control(`/intents/${intent.id}/succeed`)).status).toBe(200);

    const [hook] = await waitFor(() => (eventsFor(reference).length ? eventsFor(reference) : undefined));
    expect(verifyWebhookSignature(secret, hook!.signature, hook!.rawBody, Math.floor(Date.now() / 1000))).toBe(true);
    expect(verifyWebhookSignature('wrong', hook!.signature, hook!.rawBody, Math.floor(Date.now() / 1000))).toBe(false);

    const paid = await client.getPaymentIntent(intent.id);
    expect(paid.status).toBe('succeeded');
    expect(paid.providerTxnId).toMatch(/^txn_/);
    expect(hook!.event).toEqual({
      id: expect.stringMatching(/^evt_/),
      type: 'payment_intent.succeeded',
      created: expect.any(Number),
      data: { paymentIntentId: intent.id, reference, amount: 500, currency: 'VND', providerTxnId: paid.providerTxnId },
    });
  });

  it('overrides the webhook amount, fails payments, and replays events', async () => {
    const reference = ref();
    const intent = await client.createPaymentIntent({ amount: 500, currency: 'VND', reference }, `deposit-${reference}`);
    await control(`/intents/${intent.id}/fail`);
    await control(`/intents/${intent.id}/succeed`, { amount: 499 });
    await waitFor(() => (eventsFor(reference).length === 2 ? true : undefined));
    await driver.idle();
    const [failed, succeeded] = eventsFor(reference);
    expect(failed!.event).toMatchObject({ type: 'payment_intent.payment_failed', data: { amount: 500, providerTxnId: null } });
    expect(succeeded!.event).toMatchObject({ type: 'payment_intent.succeeded', data: { amount: 499 } });

    expect((await control(`/webhooks/replay/${succeeded!.event.id}`)).status).toBe(202);
    await waitFor(() => (eventsFor(reference).length === 3 ? true : undefined));
    expect(eventsFor(reference)[2]!.rawBody).toBe(succeeded!.rawBody);
  });

  it('succeeds silently without any webhook', async () => {
    const reference = ref();
    const intent = await client.createPaymentIntent({ amount: 500, currency: 'VND', reference }, `deposit-${reference}`);
    await control(`/intents/${intent.id}/succeed-silently`);
    await driver.idle();
    expect(eventsFor(reference)).toEqual([]);
    expect((await client.getPaymentIntent(intent.id)).status).toBe('succeeded');
  });

  it('marks an intent processing silently: no webhook', async () => {
    const reference = ref();
    const intent = await client.createPaymentIntent({ amount: 500, currency: 'VND', reference }, `deposit-${reference}`);
    expect((await control(`/intents/${intent.id}/processing-silently`)).status).toBe(200);
    expect((await client.getPaymentIntent(intent.id)).status).toBe('processing');
    await driver.idle();
    expect(eventsFor(reference)).toEqual([]);
    expect(await driver.webhooksFor(reference)).toEqual([]);
  });

  it('POST /sandbox/idle answers only once delayed transitions and their webhooks are done', async () => {
    await driver.setFaults({ processingFirstMs: 200 });
    const reference = ref();
    const intent = await client.createPaymentIntent({ amount: 500, currency: 'VND', reference }, `deposit-${reference}`);
    await control(`/intents/${intent.id}/succeed`);
    expect((await control('/idle')).status).toBe(204);
    expect(eventsFor(reference).map((h) => h.event.type)).toEqual(['payment_intent.processing', 'payment_intent.succeeded']);
    expect((await client.getPaymentIntent(intent.id)).status).toBe('succeeded');
  });

  it('delivers duplicate copies with the same event id when asked to', async () => {
    const res = await control('/faults', { duplicateDeliveries: 2 });
    expect(await res.json()).toMatchObject({ ...defaultFaults, duplicateDeliveries: 2 });

    const reference = ref();
    const intent = await client.createPaymentIntent({ amount: 500, currency: 'VND', reference }, `deposit-${reference}`);
    await control(`/intents/${intent.id}/succeed`);
    await waitFor(() => (eventsFor(reference).length === 3 ? true : undefined));
    await driver.idle();
    const hooks = eventsFor(reference);
    expect(hooks).toHaveLength(3);
    expect(new Set(hooks.map((h) => h.event.id)).size).toBe(1);
  });

  it('sends processing after succeeded when processingFirstMs and outOfOrder are on', async () => {
    // A window far wider than the one read below takes (it was 50 ms: a loaded machine read it late, after the success).
    await driver.setFaults({ processingFirstMs: 1_500, outOfOrder: true });
    const reference = ref();
    const intent = await client.createPaymentIntent({ amount: 500, currency: 'VND', reference }, `deposit-${reference}`);
    await control(`/intents/${intent.id}/succeed`);
    expect((await client.getPaymentIntent(intent.id)).status).toBe('processing');
    expect(eventsFor(reference)).toEqual([]); // the processing event is held back behind the success
    await waitFor(() => (eventsFor(reference).length === 2 ? true : undefined), 8_000);
    expect(eventsFor(reference).map((h) => h.event.type)).toEqual(['payment_intent.succeeded', 'payment_intent.processing']);
  });

  it('retries webhook delivery after a non-2xx answer', async () => {
    failNextWebhooks = 2;
    const reference = ref();
    const intent = await client.createPaymentIntent({ amount: 500, currency: 'VND', reference }, `deposit-${reference}`);
    await control(`/intents/${intent.id}/succeed`);
    await waitFor(() => (eventsFor(reference).length === 1 ? true : undefined));
    await driver.idle();
    const [sent] = await driver.webhooksFor(reference);
    expect(sent).toMatchObject({ attempts: 3, delivered: 1 });
  });

  it('refunds an intent it never created, idempotently, and sends refund.succeeded', async () => {
    const reference = ref();
    const input = { paymentIntentId: 'pi_from_elsewhere', amount: 300, reference };
    const refund = await client.createRefund(input, `refund-${reference}`);
    expect(refund).toEqual({ id: expect.stringMatching(/^re_/), status: 'succeeded', amount: 300 });
    expect(await client.createRefund(input, `refund-${reference}`)).toEqual(refund);
    const [hook] = await waitFor(() => (eventsFor(reference).length ? eventsFor(reference) : undefined));
    expect(hook!.event).toMatchObject({
      type: 'refund.succeeded',
      data: { paymentIntentId: 'pi_from_elsewhere', amount: 300, refundId: refund.id, providerTxnId: null },
    });
  });

  it('answers pending refunds and settles them later by webhook', async () => {
    await driver.setFaults({ refundOutcome: 'pending', refundSettleMs: 30 });
    const reference = ref();
    const input = { paymentIntentId: 'pi_x', amount: 300, reference };
    const refund = await client.createRefund(input, `refund-${reference}`);
    expect(refund.status).toBe('pending');
    const [hook] = await waitFor(() => (eventsFor(reference).length ? eventsFor(reference) : undefined));
    expect(hook!.event).toMatchObject({ type: 'refund.succeeded', data: { refundId: refund.id } });
    expect((await client.createRefund(input, `refund-${reference}`)).status).toBe('succeeded');
  });

  it('throws ProviderUnreachableError when every attempt times out, reusing the Idempotency-Key', async () => {
    await driver.setFaults({ apiDelayMs: 400 }); // > client timeout of 200 ms
    const reference = ref();
    const started = Date.now();
    const err = await client
      .createPaymentIntent({ amount: 500, currency: 'VND', reference }, `deposit-${reference}`)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProviderUnreachableError);
    expect(Date.now() - started).toBeGreaterThanOrEqual(3 * 200);

    // The slow attempts still land at the provider, but share one key: exactly one intent exists.
    await new Promise((r) => setTimeout(r, 500));
    await driver.setFaults({ apiDelayMs: 0 });
    expect(await client.listPaymentIntents(reference)).toHaveLength(1);
  });

  it('a 4xx answered to a retry after a timed-out attempt is no "made nothing": that attempt lands later', async () => {
    const reference = ref();
    await driver.post('/faults/answers', { endpoint: 'intents.create', answer: 'timeout', times: 1, hangMs: 400 }); // > 200 ms
    await driver.post('/faults/answers', { endpoint: 'intents.create', answer: 401, times: 1 });
    const err = await client.createPaymentIntent({ amount: 500, currency: 'VND', reference }, `deposit-${reference}`).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProviderRejectedError);
    expect(err).toMatchObject({ status: 401, afterUnanswered: true, madeNothing: false });
    await new Promise((r) => setTimeout(r, 500));
    expect((await client.listPaymentIntents(reference)).map((i) => i.status)).toEqual(['requires_payment']);

    // Refused on the call's only attempt: that one did make nothing.
    await driver.post('/faults/answers', { endpoint: 'intents.create', answer: 401, times: 1 });
    const only = await client.createPaymentIntent({ amount: 500, currency: 'VND', reference: ref() }, `deposit-x-${reference}`).catch((e: unknown) => e);
    expect(only).toMatchObject({ status: 401, afterUnanswered: false, madeNothing: true });
  });

  it('an intent answered to a retry after a timed-out attempt says so (onAnswer: 2 attempts): that attempt may land later', async () => {
    const reference = ref();
    const attempts: number[] = [];
    await driver.post('/faults/answers', { endpoint: 'intents.create', answer: 'timeout', times: 1, hangMs: 400 }); // > 200 ms
    const intent = await client.createPaymentIntent({ amount: 500, currency: 'VND', reference }, `deposit-${reference}`, { onAnswer: (n) => attempts.push(n) });
    expect(attempts).toEqual([2]);
    // The key gives the hung attempt the same intent when it lands (a provider that forgot the key would make another).
    await new Promise((r) => setTimeout(r, 500));
    expect((await client.listPaymentIntents(reference)).map((i) => i.id)).toEqual([intent.id]);
    await client.createPaymentIntent({ amount: 500, currency: 'VND', reference: ref() }, `deposit-y-${reference}`, { onAnswer: (n) => attempts.push(n) });
    expect(attempts).toEqual([2, 1]);
  });

  it('throws ProviderUnreachableError on persistent 5xx and when the API is down', async () => {
    await driver.setFaults({ apiFailRate: 1 });
    await expect(client.listPaymentIntents('x')).rejects.toBeInstanceOf(ProviderUnreachableError);
    await driver.setFaults({ apiFailRate: 0, apiDown: true });
    await expect(client.getPaymentIntent('pi_x')).rejects.toBeInstanceOf(ProviderUnreachableError);
  });

  it('resets faults with DELETE /sandbox/faults and rejects unknown knobs', async () => {
    await driver.setFaults({ apiDelayMs: 10 });
    const reset = await driver.control('DELETE', '/faults');
    expect(await reset.json()).toEqual(defaultFaults);
    expect((await control('/faults', { noSuchKnob: true })).status).toBe(400);
    expect((await control('/faults', { apiFailRate: 2 })).status).toBe(400);
  });

  it('serves a checkout page whose Pay form succeeds the intent', async () => {
    const reference = ref();
    const intent = await client.createPaymentIntent({ amount: 777, currency: 'VND', reference }, `deposit-${reference}`);
    const html = await (await fetch(intent.checkoutUrl)).text();
    expect(html).toContain('777 VND');
    expect(html).toContain(`action="/checkout/${intent.id}/pay"`);
    expect(html).toContain(`action="/checkout/${intent.id}/fail"`);
    const paid = await fetch(`${intent.checkoutUrl}/pay`, { method: 'POST' });
    expect(paid.status).toBe(200);
    await waitFor(() => (eventsFor(reference).length ? true : undefined));
    expect((await fetch(`${intent.checkoutUrl}/pay`, { method: 'POST' })).status).toBe(409);
  });
});
