import type { Deps } from './deps.js';
import { checkCarPeriod, checkStayDates, isCarPeriod, isStayLength, startsInFuture } from '../domain/booking.js';
import { nightsBetween } from '../domain/nights.js';
import type { CarCalendar } from '../domain/car-calendar.js';
import { dayOf, type StayCalendar } from '../domain/stay-calendar.js';
import { envelope } from '../domain/json-bytes.js';
import { searchAvailableCars, type CarRow } from '../db/cars.js';
import { searchAvailability } from '../db/hotels.js';
import { staleRead } from './stale-read.js';

// Public search. Answers may be up to SEARCH_CACHE_TTL_S stale (the contract allows it); holds are
// always decided by the database, never by a search answer. Answered from the in-memory indexes while
// they are fresh (shared/search/indexes.ts), else from SQL through the cache, on the read replica when there is one
// (staleRead; the cache then keeps answers the replica's lag budget less long).

/** Read-through cache of search answers by (kind, query key); the API keeps it in Redis. */
export type SearchCache = <T>(kind: 'cars' | 'stays', key: string, load: () => Promise<T>) => Promise<T>;

/** In-memory calendars, each null while missing or too old to answer from. */
export interface SearchIndex {
  cars(): CarCalendar | null;
  /** The stay calendar when it holds the night `fromDay` (days since 1970-01-01). */
  stays(fromDay: number): StayCalendar | null;
  /** Resolves once the calendars have read what was committed before the call (waiting a bounded time). */
  catchUp(): Promise<void>;
  /**
   * Both calendars have had their first load (searches read PostgreSQL before), or it has taken longer than `maxMs`:
   * a load that cannot end (a lock, a failing query) must not keep the process out of rotation for good.
   */
  builtOrGaveUp(maxMs: number): boolean;
}

/**
 * After a catalogue write (a car listed, nights opened or closed), before answering: this API process's searches
 * then show it at once (other API processes within a poll, 200 ms). Holds never wait for it: their hot path
 * stays as it is, and a search may lag them within the contract's staleness.
 */
export async function letSearchSee(deps: { searchIndex?: SearchIndex | null }): Promise<void> {
  await deps.searchIndex?.catchUp();
}

/**
 * An answer already serialised (UTF-8 JSON): the indexes keep each car's and room type's JSON and join them, so that
 * the busiest answers (50 cars, 200 room types, ≈ 30 KB) are not stringified field by field on every request.
 */
export class SerializedAnswer {
  constructor(readonly json: Buffer) {}
}

const CARS = envelope('cars');
const ROOM_TYPES = envelope('roomTypes');

/** Room types an availability search lists at most. */
export const MAX_ROOM_TYPES = 200;

export interface SearchDeps extends Pick<Deps, 'db' | 'clock' | 'replica'> {
  searchCache: SearchCache;
  searchIndex?: SearchIndex | null;
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
export async function searchCars(deps: SearchDeps, q: CarSearch): Promise<{ cars: PublicCar[] } | SerializedAnswer> {
  checkCarPeriod(q.from, q.to);
  // No hold starts in the past, so no car is listed for such a period.
  if (!startsInFuture(q.from, deps.clock.now())) return { cars: [] };
  return searchCarsInIndex(deps, q) ?? searchCarsInSql(deps, q);
}

/**
 * The answer from the in-memory index, synchronously (the API answers it beside Koa: api/fast-reads.ts): a period
 * searchCars would accept, starting in the future, and the index fresh; null otherwise (searchCars then refuses,
 * answers an empty list, or reads SQL). The checks are checkCarPeriod's and startsInFuture's, without a throw.
 */
export function searchCarsInIndex(deps: Pick<SearchDeps, 'clock' | 'searchIndex'>, q: CarSearch): SerializedAnswer | null {
  if (!isCarPeriod(q.from, q.to) || !startsInFuture(q.from, deps.clock.now())) return null;
  const index = deps.searchIndex?.cars();
  return index ? new SerializedAnswer(index.searchJson(q.city, q.from.getTime(), q.to.getTime(), q.limit, CARS)) : null;
}

async function searchCarsInSql(deps: SearchDeps, q: CarSearch): Promise<{ cars: PublicCar[] }> {
  const key = `${q.city}|${q.from.toISOString()}|${q.to.toISOString()}|${q.limit}`;
  const cars = await deps.searchCache('cars', key, async () => (await staleRead(deps, (db) => searchAvailableCars(db, q))).map(publicCar));
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
  return searchStaysInIndex(deps, q) ?? searchStaysInSql(deps, q, nights);
}

/** The answer from the in-memory index, synchronously: checkStayDates's range without a throw, the index fresh and holding the nights; else null. */
export function searchStaysInIndex(deps: Pick<SearchDeps, 'searchIndex'>, q: StaySearch): SerializedAnswer | null {
  const nights = nightsBetween(q.checkIn, q.checkOut);
  if (!isStayLength(nights)) return null;
  const from = dayOf(q.checkIn);
  const index = deps.searchIndex?.stays(from);
  return index ? new SerializedAnswer(index.searchJson(q.city, from, from + nights, q.rooms, MAX_ROOM_TYPES, ROOM_TYPES)) : null;
}

async function searchStaysInSql(deps: SearchDeps, q: StaySearch, nights: number) {
  const key = `${q.city}|${q.checkIn}|${q.checkOut}|${q.rooms}`;
  const roomTypes = await deps.searchCache('stays', key, () => staleRead(deps, (db) => searchAvailability(db, { ...q, nights })));
  return { roomTypes };
}
