import { expect } from 'vitest';
import type { SandboxFaults, SandboxIntent, SandboxRefund, SentWebhook } from '../../sandbox/app.js';

/**
 * Tests drive the sandbox provider only over HTTP: its control routes (`/sandbox/*`) and, like any client,
 * its provider API (`/v1/*`). Never through its in-memory state. This is the one test module that imports
 * the sandbox's code (to start it, and for its types).
 */
export type { RefundFaults } from '../../sandbox/refunds.js';
import type { RefundFaults } from '../../sandbox/refunds.js';
export { createPspSandbox, defaultFaults, type PspSandbox, type SandboxFaults, type WebhookEvent } from '../../sandbox/app.js';

/** What `GET /sandbox/state` answers. */
export interface SandboxState {
  intents: SandboxIntent[];
  refunds: SandboxRefund[];
  webhooks: SentWebhook[];
  /** The last calls of the /v1 API (refused ones too): when, and which endpoint. */
  calls: { at: number; endpoint: string }[];
}

async function ok(res: Response): Promise<any> {
  expect(res.status, `${res.url}: ${await res.clone().text()}`).toBeLessThan(300);
  return res.status === 204 ? undefined : res.json();
}

/** The sandbox provider listening at `baseUrl`, seen from outside. */
export function sandboxAt(baseUrl: string, apiKey?: string) {
  /** A request to a control route, as is (for tests that check the route's own answer). */
  const control = (method: string, path: string, body?: unknown) =>
    fetch(`${baseUrl}/sandbox${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const state = async (): Promise<SandboxState> => ok(await control('GET', '/state'));
  return {
    control,
    /** POST /sandbox{path}, expecting 2xx; returns the answer (an intent or refund for the transitions). */
    post: async (path: string, body?: unknown) => ok(await control('POST', path, body)),
    setFaults: async (faults: Partial<SandboxFaults>): Promise<SandboxFaults> => ok(await control('POST', '/faults', faults)),
    resetFaults: async (): Promise<SandboxFaults> => ok(await control('DELETE', '/faults')),
    /** The faults in force now (per-endpoint answer rules drop out once used up). */
    faults: async (): Promise<SandboxFaults> => ok(await control('GET', '/faults')),
    /** The refund knobs (sandbox/refunds.ts): injected 4xx, answers lost after creating, forgotten keys, silent webhooks. */
    setRefundFaults: async (knobs: Partial<RefundFaults>): Promise<RefundFaults> => ok(await control('POST', '/refund-faults', knobs)),
    resetRefundFaults: async (): Promise<RefundFaults> => ok(await control('DELETE', '/refund-faults')),
    /** Resolves once no webhook delivery or delayed transition is pending at the sandbox. */
    idle: async (): Promise<void> => ok(await control('POST', '/idle')),
    state,
    /** GET /v1/payment_intents/{id} as an API client would (needs the API key; cheap, unlike the whole state). */
    intent: async (id: string): Promise<SandboxIntent> =>
      ok(await fetch(`${baseUrl}/v1/payment_intents/${encodeURIComponent(id)}`, { headers: { authorization: `Bearer ${apiKey}` } })),
    /** Refunds the provider holds for a booking (its reference). */
    refundsFor: async (reference: number | string) => (await state()).refunds.filter((r) => r.reference === String(reference)),
    /** Webhooks the provider sent (or tried to) about a booking. */
    webhooksFor: async (reference: number | string) =>
      (await state()).webhooks.filter((w) => w.event.data.reference === String(reference)),
    /** POST /v1/payment_intents as an API client would (needs the API key). */
    async createIntent(body: { amount: number; currency: string; reference: string }, idempotencyKey?: string): Promise<SandboxIntent> {
      const headers: Record<string, string> = { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` };
      if (idempotencyKey) headers['idempotency-key'] = idempotencyKey;
      return ok(await fetch(`${baseUrl}/v1/payment_intents`, { method: 'POST', headers, body: JSON.stringify(body) }));
    },
  };
}

export type SandboxClient = ReturnType<typeof sandboxAt>;

/** The harness's sandbox provider. */
export const sandbox = (h: { config: { pspUrl: string; PSP_API_KEY: string } }) => sandboxAt(h.config.pspUrl, h.config.PSP_API_KEY);
