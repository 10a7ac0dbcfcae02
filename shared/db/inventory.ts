import { z } from 'zod';
import { sql, type CommonQueryMethods } from './pool.js';

export const nightRow = z.object({
  date: z.string(),
  sellable: z.number(),
  held: z.number(),
  confirmed: z.number(),
  available: z.number(),
});
export type NightRow = z.infer<typeof nightRow>;

const nightColumns = sql.fragment`night::text AS date, sellable, held, confirmed, (sellable - held - confirmed) AS available`;

/** Attributes every count change of this transaction in the ledger (read by the room_night trigger). */
export async function attributeChanges(
  db: CommonQueryMethods,
  a: { actor: string; reason: string; bookingId: number | null },
): Promise<void> {
  await db.query(sql.type(z.object({ actor: z.string(), reason: z.string(), bookingId: z.string() }))`
    SELECT set_config('booking.actor', ${a.actor}, true) AS actor, set_config('booking.reason', ${a.reason}, true) AS reason,
           set_config('booking.booking_id', ${a.bookingId === null ? '' : String(a.bookingId)}, true) AS "bookingId"`);
}

export async function listNights(db: CommonQueryMethods, roomTypeId: number, from: string, to: string) {
  return db.any(sql.type(nightRow)`
    SELECT ${nightColumns} FROM room_night
    WHERE room_type_id = ${roomTypeId} AND night >= ${from}::date AND night < ${to}::date ORDER BY night`);
}

/** Locks the nights in date order: every writer takes the same order, so multi-night writers never deadlock. */
export async function lockNights(db: CommonQueryMethods, roomTypeId: number, from: string, to: string) {
  return db.any(sql.type(nightRow)`
    SELECT ${nightColumns} FROM room_night
    WHERE room_type_id = ${roomTypeId} AND night >= ${from}::date AND night < ${to}::date
    ORDER BY night FOR UPDATE`);
}

/**
 * Serialises the inventory adjustments of one room type. Adjustments are the only writers that create nights,
 * and lockNights can lock only the nights that exist: without this, adjustment A locks the existing nights of its
 * range, B (seeing a night that C created meanwhile) locks that night and waits on A's, and A's insert of the
 * night it saw missing waits on B — a deadlock (PostgreSQL aborts one after deadlock_timeout; slonik retries it
 * silently, so it showed up as 1 s stalls and, after 5 in a row, a 500). Holding this lock, an adjustment sees
 * every night and takes its locks in date order like every other writer. NO KEY UPDATE leaves the bookings'
 * and nights' foreign-key checks (KEY SHARE) unblocked.
 */
export async function lockRoomTypeInventory(db: CommonQueryMethods, roomTypeId: number): Promise<void> {
  await db.query(sql.type(z.object({ locked: z.boolean() }))`SELECT true AS locked FROM room_type WHERE id = ${roomTypeId} FOR NO KEY UPDATE`);
}

type Column = 'held' | 'confirmed';

/** Moves `rooms` between the held / confirmed counters (or releases them) on every night of the range. */
export async function moveRooms(
  db: CommonQueryMethods,
  q: { roomTypeId: number; from: string; to: string; rooms: number; take?: Column; give?: Column },
): Promise<number> {
  const held = q.give === 'held' ? q.rooms : 0;
  const confirmed = q.give === 'confirmed' ? q.rooms : 0;
  const minusHeld = q.take === 'held' ? q.rooms : 0;
  const minusConfirmed = q.take === 'confirmed' ? q.rooms : 0;
  const r = await db.query(sql.typeAlias('void')`
    UPDATE room_night SET held = held + ${held - minusHeld}, confirmed = confirmed + ${confirmed - minusConfirmed}
    WHERE room_type_id = ${q.roomTypeId} AND night >= ${q.from}::date AND night < ${q.to}::date`);
  return r.rowCount;
}

/** Sets sellable on every night of [from, to), creating missing nights; the CHECK refuses dropping below held + confirmed. */
export async function setSellable(db: CommonQueryMethods, roomTypeId: number, from: string, to: string, sellable: number) {
  await db.query(sql.typeAlias('void')`
    INSERT INTO room_night (room_type_id, night, sellable)
    SELECT ${roomTypeId}, d::date, ${sellable}
    FROM generate_series(${from}::date, ${to}::date - 1, interval '1 day') d
    ORDER BY d
    ON CONFLICT (room_type_id, night) DO UPDATE SET sellable = EXCLUDED.sellable`);
}
