import type { Deps } from './deps.js';
import { checkCarPeriod, checkStayDates, startsInFuture } from '../domain/booking.js';
import { searchAvailableCars, type CarRow } from '../db/cars.js';
import { searchAvailability } from '../db/hotels.js';

// Public search. Answers may be up to SEARCH_CACHE_TTL_S stale (the contract allows it); holds are
// always decided by the database, never by a search answer.

/** Read-through cache of search answers by (kind, query key); the API keeps it in Redis. */
export type SearchCache = <T>(kind: 'cars' | 'stays', key: string, load: () => Promise<T>) => Promise<T>;

export interface SearchDeps extends Pick<Deps, 'db' | 'clock'> {
  searchCache: SearchCache;
}

export interface CarSearch {
  city: string;
  from: Date;
  to: Date;
  limit: number;
}

export type PublicCar = Omit<CarRow, 'hostId' | 'turnaroundMinutes'>;
const publicCar = ({ hostId: _h, turnaroundMinutes: _t, ...c }: CarRow): PublicCar => c;

/** Cars a hold for [from, to) would be accepted on now, cheapest first, then by id. */
export async function searchCars(deps: SearchDeps, q: CarSearch): Promise<{ cars: PublicCar[] }> {
  checkCarPeriod(q.from, q.to);
  // No hold starts in the past, so no car is listed for such a period.
  if (!startsInFuture(q.from, deps.clock.now())) return { cars: [] };
  const key = `${q.city}|${q.from.toISOString()}|${q.to.toISOString()}|${q.limit}`;
  const cars = await deps.searchCache('cars', key, async () => (await searchAvailableCars(deps.db, q)).map(publicCar));
  return { cars };
}

export interface StaySearch {
  city: string;
  checkIn: string;
  checkOut: string;
  rooms: number;
}

/** Room types of the city with at least `rooms` free on every night of the stay, most free rooms first. */
export async function searchStays(deps: SearchDeps, q: StaySearch) {
  const nights = checkStayDates(q.checkIn, q.checkOut);
  const key = `${q.city}|${q.checkIn}|${q.checkOut}|${q.rooms}`;
  const roomTypes = await deps.searchCache('stays', key, () => searchAvailability(deps.db, { ...q, nights }));
  return { roomTypes };
}
