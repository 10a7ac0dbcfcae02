import type { Actor } from '../domain/actor.js';
import type { BookingRow } from '../db/bookings.js';
import { notFound } from '../domain/errors.js';

export const isOwner = (a: Actor, b: BookingRow) => a.role === 'customer' && a.id === b.customerId;
export const isCarHost = (a: Actor, b: BookingRow) => a.role === 'host' && b.hostId !== null && a.id === b.hostId;
export const isOperator = (a: Actor) => a.role === 'operator';

/** Returns the booking when the actor may see it; otherwise NOT_FOUND, so existence never leaks. */
export function visibleTo(a: Actor, b: BookingRow | null): BookingRow {
  if (b && (isOwner(a, b) || isCarHost(a, b) || isOperator(a))) return b;
  throw notFound('booking');
}
