import type { Deps } from './deps.js';
import type { Actor } from '../domain/actor.js';
import { validation } from '../domain/errors.js';
import { parseIdText } from '../domain/ids.js';
import { searchBookings, type BookingSearch, type FoundBooking } from '../db/booking-search.js';
import { getBooking, type BookingView } from './bookings.js';
import { readTimeline, type TimelinePage } from './timeline.js';
import { bookingJobKeys } from '../db/obligations.js';
import type { JobRequest } from '../domain/jobs.js';

// What the operator page (dashboards/, behind the dashboard's Basic auth) reads: it acts as an operator, who
// may see every booking.

export const DASHBOARD_OPERATOR: Actor = { id: 0, role: 'operator' };
export const SEARCH_LIMIT = 50;

/** A search as typed into the page: a booking id, a customer id, a car id or a car's plate; null when nothing was asked. */
export function bookingSearchOf(q: { booking?: string; customer?: string; car?: string }): BookingSearch | null {
  const id = (text: string, field: string) => {
    const n = parseIdText(text.trim());
    if (n === null) throw validation(field, `${field}: a positive integer id`);
    return n;
  };
  if (q.booking?.trim()) return { bookingId: id(q.booking, 'booking') };
  if (q.customer?.trim()) return { customerId: id(q.customer, 'customer') };
  if (q.car?.trim()) return /^\d+$/.test(q.car.trim()) ? { carId: id(q.car, 'car') } : { plate: q.car.trim().slice(0, 100) };
  return null;
}

export const findBookings = (deps: Pick<Deps, 'db'>, q: BookingSearch): Promise<readonly FoundBooking[]> => searchBookings(deps.db, q, SEARCH_LIMIT);

/** The booking as GET /bookings/{id} shows it, and a page of its story (404 NOT_FOUND when there is no such booking). */
export async function bookingStory(deps: Deps, id: number, q: { limit: number; cursor?: string }): Promise<{ booking: BookingView; timeline: TimelinePage }> {
  const booking = await getBooking(deps, DASHBOARD_OPERATOR, id);
  return { booking, timeline: await readTimeline(deps, id, q) };
}

/** The keys of every job a booking's obligations can have had (each row's generations 0 … its job_gen). */
export const bookingJobRequests = (deps: Pick<Deps, 'db'>, bookingId: number): Promise<JobRequest[]> => bookingJobKeys(deps.db, bookingId);
