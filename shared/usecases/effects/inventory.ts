import type { CommonQueryMethods } from '../../db/pool.js';
import type { BookingStatus } from '../../domain/booking-status.js';
import { stayCounter, type Booking } from '../../domain/booking.js';
import { attributeChanges, lockNights, moveRooms } from '../../db/inventory.js';

/** Moves a stay's rooms between counters for a status change, in the caller's transaction, with a ledger entry. */
export async function applyInventoryEffect(
  tx: CommonQueryMethods,
  b: Booking,
  from: BookingStatus,
  to: BookingStatus,
  actor: string,
): Promise<void> {
  if (b.kind !== 'stay') return;
  const take = stayCounter(from);
  const give = stayCounter(to);
  if (take === give) return;
  await lockNights(tx, b.roomTypeId, b.checkIn, b.checkOut);
  await attributeChanges(tx, { actor, reason: `${from} -> ${to}`, bookingId: b.id });
  await moveRooms(tx, { roomTypeId: b.roomTypeId, from: b.checkIn, to: b.checkOut, rooms: b.rooms, take: take ?? undefined, give: give ?? undefined });
}
