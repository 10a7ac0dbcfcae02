import type { CheckContext } from './types.js';

// The checker's reads of the provider: the contract's API (GET /v1/payment_intents?reference=), and the
// sandbox provider's state when it is the sandbox (for cross-checks no contract endpoint offers).

export interface ProviderIntent {
  id: string;
  status: string;
  amount: number;
  reference: string;
}

async function getJson(url: string, headers: Record<string, string>): Promise<unknown> {
  let last: unknown;
  for (let attempt = 0; attempt < 4; attempt++) {
    try {
      const res = await fetch(url, { headers, signal: AbortSignal.timeout(5_000) });
      if (res.ok) return await res.json();
      last = new Error(`${res.status} from ${url}`);
      if (res.status < 500 && res.status !== 429) break;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, 200 * 2 ** attempt));
  }
  throw last;
}

export async function intentsOf(psp: NonNullable<CheckContext['psp']>, reference: string): Promise<ProviderIntent[]> {
  const url = `${psp.url.replace(/\/+$/, '')}/v1/payment_intents?reference=${encodeURIComponent(reference)}`;
  return ((await getJson(url, { authorization: `Bearer ${psp.apiKey}` })) as { data: ProviderIntent[] }).data;
}

/** The sandbox's refunds, or null when the provider is not the sandbox (no /sandbox/state). */
export async function sandboxRefunds(psp: NonNullable<CheckContext['psp']>) {
  try {
    const state = (await getJson(`${psp.url.replace(/\/+$/, '')}/sandbox/state`, {})) as {
      intents: ProviderIntent[];
      refunds: { id: string; status: string; amount: number; paymentIntentId: string; reference: string }[];
    };
    return state;
  } catch {
    return null;
  }
}
