// What a booking's story may say. Its entries' details come from events, provider answers and error texts; none
// of it may carry a secret of this service or card data, whatever a provider echoed into an error message.

export const TIMELINE_KINDS = ['event', 'payment', 'refund', 'intent', 'notification'] as const;
export type TimelineKind = (typeof TIMELINE_KINDS)[number];

export interface TimelineEntry {
  at: string;
  kind: TimelineKind;
  type: string;
  detail: Record<string, unknown>;
}

export const REDACTED = '[redacted]';

/** Luhn's checksum, as every payment card number satisfies it. */
function luhn(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = Number(digits[digits.length - 1 - i]);
    if (i % 2 === 1) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
    sum += d;
  }
  return sum % 10 === 0;
}

// 13 to 19 digits, optionally grouped by single spaces or dashes: the shapes a card number is written in.
const CARD = /(?<![\d])\d(?:[ -]?\d){12,18}(?![\d])/g;

/** `text` with every occurrence of a secret, and every card-number-shaped digit run, replaced by [redacted]. */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (s.length >= 8) out = out.split(s).join(REDACTED);
  return out.replace(CARD, (m) => (luhn(m.replace(/[ -]/g, '')) ? REDACTED : m));
}

/** A detail object with every string in it (keys included, at any depth) redacted. */
export function scrubDetail(detail: Record<string, unknown>, secrets: readonly string[]): Record<string, unknown> {
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return redact(v, secrets);
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [redact(k, secrets), walk(x)]));
    return v;
  };
  return walk(detail) as Record<string, unknown>;
}
