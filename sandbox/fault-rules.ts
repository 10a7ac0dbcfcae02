import { z } from 'zod';

// Per-endpoint injected answers of the sandbox provider's /v1 API: "the next N calls of this endpoint answer
// 429", "a tenth of refund creations time out". The chaos runner and tests set them through POST /sandbox/faults
// (`answers`); a rule with `times` is used up after that many calls, one with `rate` fires on that fraction.

export const ENDPOINTS = [
  'intents.create', // POST /v1/payment_intents
  'intents.get', // GET /v1/payment_intents/{id}
  'intents.list', // GET /v1/payment_intents?reference=
  'intents.cancel', // POST /v1/payment_intents/{id}/cancel
  'refunds.create', // POST /v1/refunds
  'refunds.get', // GET /v1/refunds/{id}
  'refunds.list', // GET /v1/refunds?...
  '*',
] as const;
export type Endpoint = (typeof ENDPOINTS)[number];

export const answerRuleSchema = z
  .object({
    endpoint: z.enum(ENDPOINTS),
    /**
     * An HTTP status (401, 409, 429, 5xx, ...) answered instead of doing the call, or `timeout`: the call stalls
     * `hangMs` (longer than the client's timeout) and is then carried out anyway, as a slow provider does — the
     * client cannot tell whether it happened.
     */
    answer: z.union([z.number().int().min(400).max(599), z.literal('timeout')]),
    times: z.number().int().min(1).optional(),
    rate: z.number().min(0).max(1).optional(),
    hangMs: z.number().int().min(0).max(120_000).default(3_000),
    /** With a status: the answer's Retry-After header, in seconds (a 429 that says how long to wait). */
    retryAfterS: z.number().int().min(0).max(3600).optional(),
  })
  .strict()
  .refine((r) => (r.times === undefined) !== (r.rate === undefined), { message: 'give exactly one of times or rate' });
export type AnswerRule = z.infer<typeof answerRuleSchema>;

/** Which endpoint a /v1 request is, or null for paths that are none of them. */
export function endpointOf(method: string, path: string): Exclude<Endpoint, '*'> | null {
  const p = path.replace(/\/+$/, '');
  if (p === '/v1/payment_intents') return method === 'POST' ? 'intents.create' : 'intents.list';
  if (/^\/v1\/payment_intents\/[^/]+\/cancel$/.test(p)) return 'intents.cancel';
  if (/^\/v1\/payment_intents\/[^/]+$/.test(p)) return 'intents.get';
  if (p === '/v1/refunds') return method === 'POST' ? 'refunds.create' : 'refunds.list';
  if (/^\/v1\/refunds\/[^/]+$/.test(p)) return 'refunds.get';
  return null;
}

/**
 * The first rule that fires for `endpoint`, using up one of its `times` (exhausted rules are dropped from
 * `faults.answers`, which is replaced, never mutated in place: the defaults' array is shared and frozen).
 */
export function takeAnswer(faults: { answers: AnswerRule[] }, endpoint: Exclude<Endpoint, '*'> | null, random = Math.random): AnswerRule | null {
  if (endpoint === null) return null;
  for (const rule of faults.answers) {
    if (rule.endpoint !== '*' && rule.endpoint !== endpoint) continue;
    if (rule.times !== undefined) {
      rule.times -= 1;
      if (rule.times <= 0) faults.answers = faults.answers.filter((r) => r !== rule);
      return rule;
    }
    if (random() < (rule.rate ?? 0)) return rule;
  }
  return null;
}

/** The sandbox's error code for an injected status (Stripe-like). */
export function injectedCode(status: number): string {
  if (status === 401) return 'unauthenticated';
  if (status === 409) return 'idempotency_key_in_use';
  if (status === 429) return 'rate_limited';
  return status >= 500 ? 'injected_failure' : 'invalid_request';
}
