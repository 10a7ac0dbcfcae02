import { z } from 'zod';
import { validation } from '../domain/errors.js';
import type { LedgerCursor, LedgerPageRow } from '../db/ledger-pages.js';

// The audit API's `cursor`: opaque to clients (base64url JSON), checked strictly when it comes back.

const wire = z.object({
  a: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
  x: z.array(z.string().regex(/^\d{1,10}$/)).max(10_000),
  l: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER),
}).strict();

export const encodeLedgerCursor = (c: LedgerCursor): string =>
  Buffer.from(JSON.stringify({ a: c.afterId, x: c.inFlight, l: c.lateAfterId })).toString('base64url');

/** The cursor a previous page gave; anything else is 400 VALIDATION (`cursor`). */
export function decodeLedgerCursor(text: string): LedgerCursor {
  let parsed: unknown;
  try {
    if (!/^[\w-]{1,100000}$/.test(text)) throw new Error('not base64url');
    parsed = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    parsed = undefined;
  }
  const c = wire.safeParse(parsed);
  if (!c.success || c.data.l > c.data.a) throw validation('cursor', 'cursor: not a cursor this API gave (use nextCursor as it came)');
  return { afterId: c.data.a, inFlight: c.data.x, lateAfterId: c.data.l };
}

/**
 * Cuts the rows readLedgerPage returned into the page and the cursor after it: the rows still owed by transactions
 * that were in flight at the previous page first, then the next ones; null when nothing committed is left.
 */
export function ledgerPage(rows: readonly LedgerPageRow[], limit: number, cursor: LedgerCursor | null): { page: LedgerPageRow[]; next: LedgerCursor | null } {
  const c = cursor ?? { afterId: 0, inFlight: [], lateAfterId: 0 };
  const late = rows.filter((r) => r.late);
  const fresh = rows.filter((r) => !r.late);
  if (late.length >= limit && (late.length > limit || fresh.length > 0)) {
    // A page of owed rows only: the same owed transactions, past the last owed row returned.
    const page = late.slice(0, limit);
    return { page, next: { ...c, lateAfterId: page.at(-1)!.id } };
  }
  const room = limit - late.length;
  const page = [...late, ...fresh.slice(0, room)];
  if (fresh.length <= room) return { page, next: null };
  // Rows at or below the new afterId still owed: those of the transactions in flight at this read.
  return { page, next: { afterId: page.at(-1)!.id, inFlight: rows[0]!.inFlight, lateAfterId: 0 } };
}
