import { CheckIntegrityConstraintViolationError } from 'slonik';
import type { Deps } from './deps.js';
import { transact } from './transact.js';
import type { Actor } from '../domain/actor.js';
import { describeActor } from '../domain/actor.js';
import { DomainError, notFound } from '../domain/errors.js';
import { findRoomType } from '../db/hotels.js';
import { attributeChanges, listNights, lockNights, lockRoomTypeInventory, setSellable } from '../db/inventory.js';
import { writeEvent } from '../events/outbox.js';
import { requireOperator, type SearchWriteDeps } from './catalogue.js';
import { letSearchSee } from './search.js';
import { MAX_RANGE_NIGHTS, checkNightRange } from '../domain/nights.js';
import { readLedgerPage } from '../db/ledger-pages.js';
import { decodeLedgerCursor, encodeLedgerCursor, ledgerPage } from './ledger-cursor.js';

/** An operator's range of nights [from, to): 1 to 366 nights; returns how many. */
export const checkRange = (from: string, to: string) => checkNightRange(from, to, MAX_RANGE_NIGHTS, { from: 'from', to: 'to', what: 'a range' });

async function roomTypeFor(deps: Deps, actor: Actor, id: number) {
  requireOperator(actor);
  const rt = await findRoomType(deps.db, id);
  if (!rt) throw notFound('room type');
  return rt;
}

/** Sets sellable on every night of [from, to) or on none: refused when it would drop below held + confirmed. */
export async function adjustInventory(
  deps: Deps & SearchWriteDeps,
  actor: Actor,
  roomTypeId: number,
  q: { from: string; to: string; sellable: number; reason: string },
) {
  checkRange(q.from, q.to);
  await roomTypeFor(deps, actor, roomTypeId);
  try {
    const answer = await transact(deps, async (tx) => {
      await lockRoomTypeInventory(tx, roomTypeId);
      await lockNights(tx, roomTypeId, q.from, q.to);
      await attributeChanges(tx, { actor: describeActor(actor), reason: q.reason, bookingId: null });
      await setSellable(tx, roomTypeId, q.from, q.to, q.sellable);
      const nights = await listNights(tx, roomTypeId, q.from, q.to);
      await writeEvent(tx, 'inventory.adjusted', deps.clock.now(), {
        bookingId: null, roomTypeId, from: q.from, to: q.to, sellable: q.sellable, reason: q.reason, actor: describeActor(actor),
      });
      return { nights };
    });
    await letSearchSee(deps);
    return answer;
  } catch (e) {
    if (e instanceof CheckIntegrityConstraintViolationError) {
      throw new DomainError('INVENTORY_BELOW_COMMITTED', 'sellable would drop below held + confirmed on some night');
    }
    throw e;
  }
}

export async function getInventory(deps: Deps, actor: Actor, roomTypeId: number, q: { from: string; to: string }) {
  checkRange(q.from, q.to);
  await roomTypeFor(deps, actor, roomTypeId);
  return { nights: await listNights(deps.db, roomTypeId, q.from, q.to) };
}

/**
 * A page of the ledger of [from, to), oldest first: `limit` entries at most, from `cursor` (a previous page's
 * `nextCursor`); `nextCursor` is null once the page holds every entry committed so far.
 */
export async function getInventoryAudit(
  deps: Deps,
  actor: Actor,
  roomTypeId: number,
  q: { from: string; to: string; limit: number; cursor?: string },
) {
  checkRange(q.from, q.to);
  const cursor = q.cursor === undefined ? null : decodeLedgerCursor(q.cursor);
  await roomTypeFor(deps, actor, roomTypeId);
  const rows = await readLedgerPage(deps.db, { roomTypeId, from: q.from, to: q.to, limit: q.limit, cursor });
  const { page, next } = ledgerPage(rows, q.limit, cursor);
  return { entries: page.map(({ id: _id, late: _late, inFlight: _inFlight, ...e }) => e), nextCursor: next && encodeLedgerCursor(next) };
}
