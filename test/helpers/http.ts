import { createHmac, timingSafeEqual } from 'node:crypto';

const b64url = (s: string | Buffer) => Buffer.from(s).toString('base64url');

/** An HS256 JWT signed by hand, independent of the code under test. */
export function token(secret: string, claims: Record<string, unknown>, expiresInS = 3600): string {
  const header = b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));
  const now = Math.floor(Date.now() / 1000);
  const payload = b64url(JSON.stringify({ iat: now, exp: now + expiresInS, ...claims }));
  const sig = b64url(createHmac('sha256', secret).update(`${header}.${payload}`).digest());
  return `${header}.${payload}.${sig}`;
}

/**
 * Checks an HS256 JWT by hand (header alg, signature, exp) and returns its claims; throws when it is not valid.
 * Independent of the code under test, like `token`.
 */
export function verifiedClaims(jwt: string, secret: string): Record<string, any> {
  const [header, payload, sig] = jwt.split('.');
  if (!header || !payload || !sig || JSON.parse(Buffer.from(header, 'base64url').toString()).alg !== 'HS256') throw new Error('not an HS256 JWT');
  const expected = createHmac('sha256', secret).update(`${header}.${payload}`).digest();
  const given = Buffer.from(sig, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw new Error('bad JWT signature');
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
  if (typeof claims.exp === 'number' && claims.exp <= Date.now() / 1000) throw new Error('JWT expired');
  return claims;
}

export interface Reply {
  status: number;
  headers: Headers;
  json: any;
  text: string;
}

export type Client = (
  method: string,
  path: string,
  opts?: { token?: string; body?: unknown; raw?: string | Buffer; headers?: Record<string, string> },
) => Promise<Reply>;

export function client(baseUrl: string): Client {
  return async (method, path, { token: t, body, raw, headers = {} } = {}) => {
    const h: Record<string, string> = { ...headers };
    if (t) h.authorization = `Bearer ${t}`;
    let payload: string | Buffer | undefined;
    if (raw !== undefined) payload = raw;
    else if (body !== undefined) {
      payload = JSON.stringify(body);
      h['content-type'] ??= 'application/json';
    }
    const res = await fetch(baseUrl + path, { method, headers: h, body: payload as BodyInit | undefined, redirect: 'manual' });
    const text = await res.text();
    let json: any;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    return { status: res.status, headers: res.headers, json, text };
  };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function waitFor<T>(fn: () => Promise<T | null | undefined | false>, timeoutMs = 10_000, everyMs = 50): Promise<T> {
  const start = Date.now();
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() - start > timeoutMs) throw new Error(`waitFor timed out after ${timeoutMs} ms`);
    await sleep(everyMs);
  }
}

/** An instant `hours` from now, rounded to the minute, as ISO with offset. */
export const inHours = (hours: number) => new Date(Math.floor(Date.now() / 60_000) * 60_000 + hours * 3_600_000).toISOString();

/** Runs `fn` for 0..n-1 with at most `limit` at a time. */
export async function mapLimit<T>(n: number, limit: number, fn: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = new Array(n);
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(n, limit) }, async () => {
    while (next < n) {
      const i = next++;
      out[i] = await fn(i);
    }
  }));
  return out;
}

/** A reply as "status" or "status CODE" (e.g. "409 SOLD_OUT"), for comparing outcomes. */
export const codeOf = (r: Reply) => (r.status >= 400 ? `${r.status} ${r.json?.error?.code}` : String(r.status));
/** How many replies of each codeOf. */
export const tally = (rs: Reply[]) => rs.reduce<Record<string, number>>((m, r) => ((m[codeOf(r)] = (m[codeOf(r)] ?? 0) + 1), m), {});
