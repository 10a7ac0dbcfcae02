// Free rooms per room type and night, in memory, for the availability search. Pure (no I/O): loaded from
// room_night and kept fresh from the inventory ledger by shared/search/indexes.ts. Nights are day numbers
// (days since 1970-01-01) of the hotel's calendar dates.

import { CityNights, NO_ROW } from './city-nights.js';
import { JsonBytes, digitCount, utf8, type Envelope } from './json-bytes.js';

/** A room type as availability answers it, plus its city. */
export interface IndexedRoomType {
  roomTypeId: number;
  hotelId: number;
  hotelName: string;
  name: string;
  depositAmount: number;
  currency: string;
  city: string;
}

export interface Availability extends Omit<IndexedRoomType, 'city'> {
  available: number;
}

const DAY_MS = 86_400_000;

/** Day number of a YYYY-MM-DD date. */
export const dayOf = (date: string): number => Math.round(Date.parse(`${date}T00:00:00Z`) / DAY_MS);

/** One room type's nights: free rooms from `base` on; NO_ROW where no night row exists. */
class Nights {
  base = 0;
  free = new Int32Array(0);

  set(day: number, free: number): void {
    if (this.free.length === 0) this.base = day;
    if (day < this.base || day >= this.base + this.free.length) this.grow(day);
    this.free[day - this.base] = free;
  }

  /** Min free over [from, to), or NO_ROW when a night has no row (the walk outside the city's matrix). */
  minFree(from: number, to: number): number {
    if (from < this.base || to > this.base + this.free.length) return NO_ROW;
    let min = Infinity;
    for (let d = from - this.base; d < to - this.base; d++) {
      const f = this.free[d]!;
      if (f === NO_ROW) return NO_ROW;
      if (f < min) min = f;
    }
    return min;
  }

  private grow(day: number): void {
    const lo = Math.min(this.base, day);
    const hi = Math.max(this.base + this.free.length, day + 1);
    // Room to grow by a month either way without copying every day.
    const from = day < this.base ? lo - 31 : lo;
    const to = day >= this.base + this.free.length ? hi + 31 : hi;
    const next = new Int32Array(to - from).fill(NO_ROW);
    next.set(this.free, this.base - from);
    this.base = from;
    this.free = next;
  }
}

/** A room type of the catalogue, in its city's list (by id): its column in the city's nights. */
interface Entry {
  rt: IndexedRoomType;
  /** Its answer as JSON (UTF-8) around `available`, the one field that varies by search (keys in Availability's order). */
  jsonHead: Uint8Array;
  jsonTail: Uint8Array;
}

function entry(rt: IndexedRoomType): Entry {
  const head = JSON.stringify({ roomTypeId: rt.roomTypeId, hotelId: rt.hotelId, hotelName: rt.hotelName, name: rt.name });
  const tail = JSON.stringify({ depositAmount: rt.depositAmount, currency: rt.currency });
  return { rt, jsonHead: utf8(`${head.slice(0, -1)},"available":`), jsonTail: utf8(`,${tail.slice(1)}`) };
}

/** A room type free for a search, with its minimum free rooms over the nights. */
interface Hit {
  e: Entry;
  available: number;
}

/**
 * `hits` (in room type id order) most available first, then by id, at most `limit`: a counting sort by `available`
 * (stable, so ids stay in order), as free rooms are small numbers; a comparison sort when they are not.
 */
function mostAvailableFirst(hits: Hit[], limit: number): Hit[] {
  let max = 0;
  let min = 0;
  for (const h of hits) {
    if (h.available > max) max = h.available;
    if (h.available < min) min = h.available;
  }
  if (min < 0 || max > 4 * hits.length + 64) return hits.sort((a, b) => b.available - a.available).slice(0, limit);
  // starts[a]: where the hits with `available` a begin in the answer (higher counts first).
  const starts = new Int32Array(max + 2);
  for (const h of hits) starts[h.available]!++;
  let at = 0;
  for (let a = max; a >= 0; a--) {
    const n = starts[a]!;
    starts[a] = at;
    at += n;
  }
  const out = new Array<Hit>(Math.max(0, Math.min(limit, hits.length)));
  for (const h of hits) {
    const k = starts[h.available]!++;
    if (k < out.length) out[k] = h;
  }
  return out;
}

export class StayCalendar {
  private readonly nights = new Map<number, Nights>();
  private roomTypes = new Map<number, IndexedRoomType>();
  private byCity = new Map<string, Entry[]>();
  /** Each room type's city and column there (its place in the city's list). */
  private place = new Map<number, { city: string; col: number }>();
  /** Each city's nights as a matrix, made at its first search after its room types changed (city-nights.ts). */
  private readonly matrices = new Map<string, CityNights>();
  /** A search's running minimum per column (the largest city's size). */
  private scratch = new Int32Array(0);
  /** The first day of every city's matrix (setWindow); until set, searches walk each room type's nights. */
  private windowStart: number | null = null;
  /** The highest room type id known (new room types are read after it). */
  maxRoomTypeId = 0;

  /** Replaces the catalogue (nights are kept by room type id, known or not yet). */
  setRoomTypes(roomTypes: readonly IndexedRoomType[]): void {
    this.roomTypes = new Map();
    this.addRoomTypes(roomTypes);
  }

  /** Adds or updates room types, keeping every other. */
  addRoomTypes(roomTypes: readonly IndexedRoomType[]): void {
    for (const rt of roomTypes) {
      this.roomTypes.set(rt.roomTypeId, rt);
      this.maxRoomTypeId = Math.max(this.maxRoomTypeId, rt.roomTypeId);
    }
    const byCity = new Map<string, Entry[]>();
    for (const rt of this.roomTypes.values()) {
      let list = byCity.get(rt.city);
      if (!list) byCity.set(rt.city, (list = []));
      list.push(entry(rt));
    }
    const place = new Map<number, { city: string; col: number }>();
    for (const [city, list] of byCity) {
      // By id: a search's hits then come in id order, the tie-break of its answer.
      list.sort((a, b) => a.rt.roomTypeId - b.rt.roomTypeId);
      list.forEach((e, col) => place.set(e.rt.roomTypeId, { city, col }));
      // A city whose room types are the same ones keeps its matrix (the catalogue is reloaded every few seconds).
      const old = this.byCity.get(city);
      if (!old || old.length !== list.length || old.some((e, k) => e.rt.roomTypeId !== list[k]!.rt.roomTypeId)) this.matrices.delete(city);
    }
    for (const city of this.matrices.keys()) if (!byCity.has(city)) this.matrices.delete(city);
    this.byCity = byCity;
    this.place = place;
  }

  /** Where the matrices start: the first day searches ask about (a change drops them, made again at next search). */
  setWindow(fromDay: number): void {
    if (fromDay === this.windowStart) return;
    this.windowStart = fromDay;
    this.matrices.clear();
  }

  /** Sets the free rooms of one night (sellable − held − confirmed). */
  setNight(roomTypeId: number, day: number, free: number): void {
    let n = this.nights.get(roomTypeId);
    if (!n) this.nights.set(roomTypeId, (n = new Nights()));
    n.set(day, free);
    const at = this.place.get(roomTypeId);
    if (at) this.matrices.get(at.city)?.set(at.col, day, free);
  }

  /**
   * Room types of `city` with at least `rooms` free on every night of [checkIn, checkOut): `available` is the
   * minimum over the nights; most available first, then by id; at most `limit`. (Hot: 3,000/s at the peak.)
   */
  search(city: string, checkIn: number, checkOut: number, rooms: number, limit: number): Availability[] {
    return this.free(city, checkIn, checkOut, rooms, limit).map(({ e: { rt }, available }) => ({
      roomTypeId: rt.roomTypeId, hotelId: rt.hotelId, hotelName: rt.hotelName, name: rt.name, available,
      depositAmount: rt.depositAmount, currency: rt.currency,
    }));
  }

  /** `search` as JSON in `env` (`{"roomTypes":[…]}`), from each room type's JSON around `available`: what the API sends. */
  searchJson(city: string, checkIn: number, checkOut: number, rooms: number, limit: number, env: Envelope): Buffer {
    const free = this.free(city, checkIn, checkOut, rooms, limit);
    const digits = free.map((h) => digitCount(h.available));
    let size = env.open.length + env.close.length + Math.max(0, free.length - 1);
    for (let k = 0; k < free.length; k++) size += free[k]!.e.jsonHead.length + digits[k]! + free[k]!.e.jsonTail.length;
    const out = new JsonBytes(size);
    out.bytes(env.open);
    for (let k = 0; k < free.length; k++) {
      if (k) out.comma();
      out.bytes(free[k]!.e.jsonHead);
      out.int(free[k]!.available, digits[k]!);
      out.bytes(free[k]!.e.jsonTail);
    }
    out.bytes(env.close);
    return out.done();
  }

  private free(city: string, checkIn: number, checkOut: number, rooms: number, limit: number): Hit[] {
    const list = this.byCity.get(city);
    if (!list || !(checkOut > checkIn)) return [];
    const hits: Hit[] = [];
    const min = this.minima(city, list, checkIn, checkOut);
    if (min) {
      for (let col = 0; col < list.length; col++) if (min[col]! >= rooms) hits.push({ e: list[col]!, available: min[col]! });
    } else {
      // No window yet, or nights outside it (years away, or past): each room type's own nights.
      for (const e of list) {
        const available = this.nights.get(e.rt.roomTypeId)?.minFree(checkIn, checkOut) ?? NO_ROW;
        if (available !== NO_ROW && available >= rooms) hits.push({ e, available });
      }
    }
    return mostAvailableFirst(hits, limit);
  }

  /** Each column's minimum free rooms over [checkIn, checkOut) from the city's matrix; null outside its window. */
  private minima(city: string, list: readonly Entry[], checkIn: number, checkOut: number): Int32Array | null {
    if (this.windowStart === null) return null;
    let m = this.matrices.get(city);
    if (!m) this.matrices.set(city, (m = CityNights.of(this.windowStart, list.map((e) => this.nights.get(e.rt.roomTypeId)))));
    if (this.scratch.length < list.length) this.scratch = new Int32Array(list.length);
    return m.minOver(checkIn, checkOut, this.scratch) ? this.scratch : null;
  }
}
