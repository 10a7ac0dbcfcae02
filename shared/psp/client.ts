import { z } from 'zod';
import { RequestNotSent, ServerError, unansweredCause } from './unanswered.js';
import { PSP_CALLS, attemptPolicy, isTimeout, longestCallMs, type AttemptPolicy } from './attempt-policy.js';
export { RequestNotSent } from './unanswered.js';

export const paymentIntentStatuses = ['requires_payment', 'processing', 'succeeded', 'failed', 'canceled'] as const;
export const refundStatuses = ['pending', 'succeeded', 'failed'] as const;

export const paymentIntentSchema = z.object({
  id: z.string().min(1),
  status: z.enum(paymentIntentStatuses),
  amount: z.number().int(),
  currency: z.string(),
  reference: z.string(),
  checkoutUrl: z.string(),
  providerTxnId: z.string().nullable().optional(),
});
export const refundSchema = z.object({
  id: z.string().min(1),
  status: z.enum(refundStatuses),
  amount: z.number().int(),
});
const intentListSchema = z.object({ data: z.array(paymentIntentSchema) });
/** A refund as the read API lists it (GET /v1/refunds?…): with what it refunded, to match it to ours. */
export const listedRefundSchema = refundSchema.extend({ paymentIntentId: z.string(), reference: z.string() });
const refundListSchema = z.object({ data: z.array(listedRefundSchema) });
export type ListedRefund = z.infer<typeof listedRefundSchema>;
const cancelConflictSchema = z.object({ intent: paymentIntentSchema });

export type PaymentIntent = z.infer<typeof paymentIntentSchema>;
export type PaymentIntentStatus = PaymentIntent['status'];
export type Refund = z.infer<typeof refundSchema>;
export type RefundStatus = Refund['status'];

export interface PspClientOptions {
  baseUrl: string;
  apiKey: string;
  /** Per attempt, covering connect, headers and body. */
  timeoutMs?: number;
  /** Extra attempts after the first, on unreachable outcomes only. */
  retries?: number;
  /** First backoff delay; later ones grow exponentially (with jitter). */
  backoffInitialMs?: number;
  /** Told of every call once it has settled (retries included): for metrics. */
  onCall?: (call: PspCall) => void;
  /** Awaited before every request (each retry too): a rate gate toward the provider. */
  beforeCall?: () => Promise<void>;
}

/** A settled call: `operation` is the method and path template, e.g. `GET /v1/payment_intents/{id}`. */
export interface PspCall {
  operation: string;
  outcome: 'ok' | 'rejected' | 'timeout' | 'unreachable';
  seconds: number;
}

/** Ids in a path become `{id}` and the query goes, so operations are few and stable. */
const operationOf = (method: string, path: string) =>
  `${method} ${path.split('?')[0]!.replace(/\/(v1\/(?:payment_intents|refunds))\/[^/]+/, '/$1/{id}')}`;

function outcomeOf(e: unknown): PspCall['outcome'] {
  if (e instanceof ProviderRejectedError) return 'rejected';
  return e instanceof ProviderUnreachableError && isTimeout(e.cause) ? 'timeout' : 'unreachable';
}

/** Connection error, timeout, 5xx or an unreadable answer, after all retries: the outcome is unknown. */
export class ProviderUnreachableError extends Error {
  override name = 'ProviderUnreachableError';
  /** The request left and no answer came (a timeout, a connection lost): the provider may yet carry it out. */
  get unanswered(): boolean { return unansweredCause(this.cause); }
}

/** The provider answered 4xx: retrying the same request will not help. */
export class ProviderRejectedError extends Error {
  override name = 'ProviderRejectedError';
  constructor(
    readonly status: number,
    readonly body: unknown,
    /** A 429's (or 503's) Retry-After, in ms, when the provider sent one. */
    readonly retryAfterMs: number | null = null,
    /**
     * This answer came to a retry: an earlier attempt of the same call went unanswered (timed out, connection lost,
     * 5xx), and the provider may still carry that one out (a slow provider finishes what a timed-out client sent).
     */
    readonly afterUnanswered = false,
  ) {
    super(`payment provider rejected the request with ${status}${afterUnanswered ? ' (after an attempt that went unanswered)' : ''}`);
  }

  /**
   * The call was refused and nothing was or will be made by it: any 4xx but 409 (the key in flight) and 429 (not
   * now), answered to the call's only attempt. A refusal of a retry says nothing of the attempt before it, which
   * may yet be carried out: such a call is in doubt, like one never answered.
   */
  get madeNothing(): boolean {
    return !this.afterUnanswered && this.status >= 400 && this.status < 500 && this.status !== 409 && this.status !== 429;
  }
}

/** Retry-After as seconds or an HTTP date, in ms from `now`; null when absent or unreadable. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | null {
  if (!value) return null;
  const s = value.trim();
  if (/^\d+(\.\d+)?$/.test(s)) return Math.round(Number(s) * 1000);
  const at = Date.parse(s);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

export class PspClient {
  private readonly baseUrl: string;
  private readonly apiKey: string;
  private readonly policy: AttemptPolicy;
  /** The same timeout, no retry: for POSTs whose outcome the caller resolves by looking up (refunds). */
  private readonly single: AttemptPolicy;
  private readonly onCall?: (call: PspCall) => void;
  private readonly beforeCall?: () => Promise<void>;
  /** A retrying call's longest run from its first send to its last (attempt-policy.ts). */
  readonly longestCallMs: number;

  constructor({
    baseUrl, apiKey, timeoutMs = PSP_CALLS.timeoutMs, retries = PSP_CALLS.retries, backoffInitialMs = PSP_CALLS.backoffInitialMs, onCall, beforeCall,
  }: PspClientOptions) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    this.apiKey = apiKey;
    this.policy = attemptPolicy(timeoutMs, retries, backoffInitialMs);
    this.single = attemptPolicy(timeoutMs, 0, backoffInitialMs);
    this.onCall = onCall;
    this.beforeCall = beforeCall;
    this.longestCallMs = longestCallMs(timeoutMs, retries, backoffInitialMs);
  }

  /**
   * This client, every request of which first waits on `gate` (a queue's rate limit toward the provider): a view
   * of it (its prototype), so it shares its policies, and anything wrapped on it afterwards (tests count calls so).
   */
  gated(gate: () => Promise<void>): PspClient {
    const view = Object.create(this) as PspClient;
    Object.defineProperty(view, 'beforeCall', { value: gate });
    return view;
  }

  /** `o.onAnswer`: the attempts that left; more than one when the intent answered a retry (the one before may yet land). */
  createPaymentIntent(
    input: { amount: number; currency: string; reference: string }, idempotencyKey: string, o: { onAnswer?: (attempts: number) => void } = {},
  ): Promise<PaymentIntent> {
    return this.request('POST', '/v1/payment_intents', paymentIntentSchema, input, { idempotencyKey, onAnswer: o.onAnswer });
  }

  getPaymentIntent(id: string): Promise<PaymentIntent> {
    return this.request('GET', `/v1/payment_intents/${encodeURIComponent(id)}`, paymentIntentSchema);
  }

  async listPaymentIntents(reference: string): Promise<PaymentIntent[]> {
    const path = `/v1/payment_intents?reference=${encodeURIComponent(reference)}`;
    return (await this.request('GET', path, intentListSchema)).data;
  }

  /**
   * Cancels an intent: the intent, now `canceled` (also when it already was). When it has already succeeded the
   * provider answers 409 with the intent: that intent is returned (status `succeeded`) rather than thrown.
   */
  async cancelIntent(id: string): Promise<PaymentIntent> {
    try {
      return await this.request('POST', `/v1/payment_intents/${encodeURIComponent(id)}/cancel`, paymentIntentSchema, {});
    } catch (e) {
      const intent = e instanceof ProviderRejectedError && e.status === 409 ? cancelConflictSchema.safeParse(e.body) : null;
      if (intent?.success && intent.data.intent.status === 'succeeded') return intent.data.intent;
      throw e;
    }
  }

  /**
   * ONE attempt, never retried here: once the provider has forgotten the key, a retried POST whose first
   * attempt did create the refund pays it twice. The caller looks the refund up before posting again.
   * `beforeSend`, right before the request leaves (after the rate gate): the caller's last check that it may POST.
   */
  createRefund(
    input: { paymentIntentId: string; amount: number; reference: string },
    idempotencyKey: string,
    o: { beforeSend?: () => Promise<void> } = {},
  ): Promise<Refund> {
    return this.request('POST', '/v1/refunds', refundSchema, input, { idempotencyKey, policy: this.single, beforeSend: o.beforeSend });
  }

  getRefund(id: string): Promise<Refund> {
    return this.request('GET', `/v1/refunds/${encodeURIComponent(id)}`, refundSchema);
  }

  /** The provider's refunds of a payment intent (and reference): how a refund whose POST had no answer is found. */
  async listRefunds(q: { paymentIntentId: string; reference: string }): Promise<ListedRefund[]> {
    const path = `/v1/refunds?payment_intent=${encodeURIComponent(q.paymentIntentId)}&reference=${encodeURIComponent(q.reference)}`;
    return (await this.request('GET', path, refundListSchema)).data;
  }

  /** `send`, timed and reported to `onCall` with its outcome. */
  private async request<T>(
    method: 'GET' | 'POST',
    path: string,
    schema: z.ZodType<T, z.ZodTypeDef, unknown>,
    body?: unknown,
    o: SendOptions = {},
  ): Promise<T> {
    const started = performance.now();
    let outcome: PspCall['outcome'] = 'ok';
    let sent = true; // false: beforeSend stopped the request, which is then no call of the provider
    try {
      return await this.send(method, path, schema, body, o);
    } catch (e) {
      sent = !(e instanceof RequestNotSent);
      outcome = outcomeOf(e);
      throw e;
    } finally {
      if (sent) this.onCall?.({ operation: operationOf(method, path), outcome, seconds: (performance.now() - started) / 1000 });
    }
  }

  private async send<T>(
    method: 'GET' | 'POST',
    path: string,
    schema: z.ZodType<T, z.ZodTypeDef, unknown>,
    body?: unknown,
    { idempotencyKey, policy = this.policy, beforeSend, onAnswer }: SendOptions = {},
  ): Promise<T> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.apiKey}`, accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    // Every retry reuses the key: that is what makes retrying a POST safe.
    if (idempotencyKey !== undefined) headers['idempotency-key'] = idempotencyKey;
    const payload = body === undefined ? undefined : JSON.stringify(body);

    let answer: { status: number; text: string; retryAfter: string | null };
    // Attempts that left: the policy retries only an attempt that went unanswered (transient), so every one before
    // the last was unanswered.
    let attempts = 0;
    try {
      answer = await policy.execute(async ({ signal }) => {
        attempts++;
        const res = await fetch(this.baseUrl + path, { method, headers, body: payload, signal });
        const text = await res.text(); // inside the timeout: a stalled body is a timeout too
        if (res.status >= 500) throw new ServerError(res.status);
        return { status: res.status, text, retryAfter: res.headers.get('retry-after') };
      }, this.beforeCall, beforeSend);
    } catch (e) {
      if (e instanceof RequestNotSent) throw e;
      const reason = isTimeout(e) ? 'timed out' : e instanceof Error ? e.message : String(e);
      throw new ProviderUnreachableError(`payment provider unreachable: ${method} ${path}: ${reason}`, { cause: e });
    }

    if (answer.status >= 400) {
      throw new ProviderRejectedError(answer.status, parseJsonOr(answer.text), parseRetryAfter(answer.retryAfter), attempts > 1);
    }
    // An unreadable 2xx leaves the outcome unknown, like a timeout; retrying with the same key is safe.
    const parsed = schema.safeParse(parseJsonOr(answer.text));
    if (!parsed.success) {
      throw new ProviderUnreachableError(`payment provider sent an invalid answer: ${method} ${path}`, {
        cause: parsed.error,
      });
    }
    onAnswer?.(attempts);
    return parsed.data;
  }
}

/** The Idempotency-Key (every retry reuses it), the policy (default: retrying), beforeSend (unanswered.ts), onAnswer (a 2xx). */
interface SendOptions { idempotencyKey?: string; policy?: AttemptPolicy; beforeSend?: () => Promise<void>; onAnswer?: (attempts: number) => void }

function parseJsonOr(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
