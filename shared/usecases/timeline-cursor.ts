import { z } from 'zod';
import { validation } from '../domain/errors.js';
import type { TimelineCursor, TimelineKey, TimelineRow } from '../db/timeline.js';

// The timeline's `cursor`: opaque to clients (base64url JSON), checked strictly when it comes back; cut and resumed
// as the audit's (ledger-cursor.ts), on the key (at, kind, id).

const AT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
const key = z.tuple([z.string().regex(AT), z.string().regex(/^[a-z]{0,20}$/), z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER)]);
const wire = z.object({ k: key, x: z.array(z.string().regex(/^\d{1,10}$/)).max(10_000), l: key.nullable() }).strict();

const toWire = (k: TimelineKey): z.infer<typeof key> => [k.at, k.kind, k.id];
const fromWire = ([at, kind, id]: z.infer<typeof key>): TimelineKey => ({ at, kind, id });
const compare = (a: TimelineKey, b: TimelineKey) => (a.at < b.at ? -1 : a.at > b.at ? 1 : a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : a.id - b.id);

export const encodeTimelineCursor = (c: TimelineCursor): string =>
  Buffer.from(JSON.stringify({ k: toWire(c.after), x: c.inFlight, l: c.lateAfter && toWire(c.lateAfter) })).toString('base64url');

/** The cursor a previous page gave; anything else is 400 VALIDATION (`cursor`). */
export function decodeTimelineCursor(text: string): TimelineCursor {
  let parsed: unknown;
  try {
    if (!/^[\w-]{1,200000}$/.test(text)) throw new Error('not base64url');
    parsed = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    parsed = undefined;
  }
  const c = wire.safeParse(parsed);
  const cursor = c.success ? { after: fromWire(c.data.k), inFlight: c.data.x, lateAfter: c.data.l && fromWire(c.data.l) } : null;
  if (!cursor || Number.isNaN(Date.parse(cursor.after.at)) || (cursor.lateAfter && compare(cursor.lateAfter, cursor.after) > 0)) {
    throw validation('cursor', 'cursor: not a cursor this API gave (use nextCursor as it came)');
  }
  return cursor;
}

const keyOfRow = (r: TimelineRow): TimelineKey => ({ at: r.at, kind: r.kind, id: r.id });

/**
 * Cuts the rows readTimelinePage returned into the page and the cursor after it: the entries still owed by
 * transactions in flight at the previous page first, then the next ones; null when nothing committed is left.
 */
export function timelinePage(rows: readonly TimelineRow[], limit: number, cursor: TimelineCursor | null): { page: TimelineRow[]; next: TimelineCursor | null } {
  const late = rows.filter((r) => r.late);
  const fresh = rows.filter((r) => !r.late);
  if (cursor && late.length >= limit && (late.length > limit || fresh.length > 0)) {
    // A page of owed entries only: the same owed transactions, past the last owed entry returned.
    const page = late.slice(0, limit);
    return { page, next: { ...cursor, lateAfter: keyOfRow(page.at(-1)!) } };
  }
  const room = limit - late.length;
  const page = [...late, ...fresh.slice(0, room)];
  if (fresh.length <= room) return { page, next: null };
  // Entries at or below the new key still owed: those of the transactions in flight at this read.
  return { page, next: { after: keyOfRow(page.at(-1)!), inFlight: rows[0]!.inFlight, lateAfter: null } };
}
