import type { CommonQueryMethods } from '../db/pool.js';
import type { BookingRow } from '../db/bookings.js';
import type { BookingStatus } from '../domain/booking-status.js';
import { attributeChanges, lockNights, moveRooms } from '../db/inventory.js';

type Counter = 'held' | 'confirmed';

// Which room-night counter a stay occupies in each status; cars occupy through the exclusion constraint alone.
const counterOf: Partial<Record<BookingStatus, Counter>> = { HOLD: 'held', CONFIRMED: 'confirmed', ON_TRIP: 'confirmed' };

/** Moves a stay's rooms between counters for a status change, in the caller's transaction, with a ledger entry. */
export async function applyInventoryEffect(
  tx: CommonQueryMethods,
  b: BookingRow,
  from: BookingStatus,
  to: BookingStatus,
  actor: string,
): Promise<void> {
  if (b.kind !== 'stay') return;
  const take = counterOf[from];
  const give = counterOf[to];
  if (take === give) return;
  await lockNights(tx, b.roomTypeId!, b.checkIn!, b.checkOut!);
  await attributeChanges(tx, { actor, reason: `${from} -> ${to}`, bookingId: b.id });
  await moveRooms(tx, { roomTypeId: b.roomTypeId!, from: b.checkIn!, to: b.checkOut!, rooms: b.rooms!, take, give });
}
