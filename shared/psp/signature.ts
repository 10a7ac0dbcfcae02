import { createHmac, timingSafeEqual } from 'node:crypto';

const HEX_SHA256 = /^[0-9a-f]{64}$/i;

/** HMAC-SHA256 of `${t}.` followed by the body's bytes (a string body is its UTF-8 bytes). */
function hmacHex(secret: string, t: number, rawBody: string | Uint8Array): string {
  return createHmac('sha256', secret).update(`${t}.`).update(rawBody).digest('hex');
}

/** Value for the `Psp-Signature` header: `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "t.rawBody")>`. */
export function signWebhook(secret: string, rawBody: string | Uint8Array, tSeconds: number): string {
  const t = Math.floor(tSeconds);
  return `t=${t},v1=${hmacHex(secret, t, rawBody)}`;
}

/**
 * True when some `v1` in the header is the HMAC of `${t}.${rawBody}` and |now − t| ≤ toleranceS. The body is the bytes
 * received, never a decoding of them (a BOM or an invalid byte would change the text, not what the provider signed).
 * Parts may come in any order; unknown parts are ignored; several v1 are allowed (secret rotation).
 */
export function verifyWebhookSignature(
  secret: string,
  header: string | undefined,
  rawBody: string | Uint8Array,
  nowSeconds: number,
  toleranceS = 300,
): boolean {
  if (!header) return false;
  let t: number | undefined;
  const candidates: string[] = [];
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === 't') {
      // A second, different t makes the header ambiguous: refuse rather than pick one.
      if (!/^\d{1,15}$/.test(value) || (t !== undefined && t !== Number(value))) return false;
      t = Number(value);
    } else if (key === 'v1' && HEX_SHA256.test(value)) {
      candidates.push(value.toLowerCase());
    }
  }
  if (t === undefined || candidates.length === 0) return false;
  if (!Number.isFinite(nowSeconds) || Math.abs(nowSeconds - t) > toleranceS) return false;

  const expected = Buffer.from(hmacHex(secret, t, rawBody), 'hex');
  let ok = false;
  for (const candidate of candidates) {
    const given = Buffer.from(candidate, 'hex');
    // Check every candidate (no early exit) so timing does not reveal which one matched.
    if (given.length === expected.length && timingSafeEqual(given, expected)) ok = true;
  }
  return ok;
}
