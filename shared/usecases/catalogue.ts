import { UniqueIntegrityConstraintViolationError } from 'slonik';
import type { Deps } from './deps.js';
import type { Actor } from '../domain/actor.js';
import { DomainError, forbidden, notFound, validation } from '../domain/errors.js';
import { insertCar, type CarRow } from '../db/cars.js';
import { findHotel, insertHotel, insertRoomType, type HotelRow, type RoomTypeRow } from '../db/hotels.js';
import { isValidTimeZone } from '../domain/zoned-time.js';
import { letSearchSee, type SearchIndex } from './search.js';

/** Catalogue writes let this process's search indexes read them before answering (letSearchSee). */
export interface SearchWriteDeps {
  searchIndex?: SearchIndex | null;
}

export interface CarInput {
  plate: string;
  model: string;
  city: string;
  dailyPrice: number;
  depositAmount: number;
  currency: string;
  turnaroundMinutes: number;
  hostId?: number;
}

/** Hosts list their own cars; operators list a car for a host they name. */
export async function createCar(deps: Deps & SearchWriteDeps, actor: Actor, input: CarInput): Promise<CarRow> {
  if (actor.role === 'customer') throw forbidden();
  let hostId = actor.id;
  if (actor.role === 'operator') {
    if (input.hostId === undefined) throw validation('hostId', 'an operator must give hostId');
    hostId = input.hostId;
  } else if (input.hostId !== undefined && input.hostId !== actor.id) {
    throw forbidden();
  }
  let car: CarRow;
  try {
    car = await insertCar(deps.db, { ...input, hostId });
  } catch (e) {
    if (e instanceof UniqueIntegrityConstraintViolationError) {
      throw new DomainError('ALREADY_EXISTS', 'a car with this plate exists', { field: 'plate' });
    }
    throw e;
  }
  await letSearchSee(deps);
  return car;
}

export const requireOperator = (actor: Actor) => {
  if (actor.role !== 'operator') throw forbidden();
};

export async function createHotel(deps: Deps, actor: Actor, h: Omit<HotelRow, 'id'>): Promise<HotelRow> {
  requireOperator(actor);
  if (!isValidTimeZone(h.timezone)) throw validation('timezone', 'timezone must be an IANA time zone name');
  return insertHotel(deps.db, h);
}

export async function createRoomType(deps: Deps, actor: Actor, r: Omit<RoomTypeRow, 'id'>): Promise<RoomTypeRow> {
  requireOperator(actor);
  if (!(await findHotel(deps.db, r.hotelId))) throw notFound('hotel');
  return insertRoomType(deps.db, r);
}
