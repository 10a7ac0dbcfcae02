// Free rooms per room type and night, in memory, for the availability search. Pure (no I/O): loaded from
// room_night and kept fresh from the inventory ledger by shared/search/indexes.ts. Nights are day numbers
// (days since 1970-01-01) of the hotel's calendar dates.

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

const MISSING = -1;
const DAY_MS = 86_400_000;

/** Day number of a YYYY-MM-DD date. */
export const dayOf = (date: string): number => Math.round(Date.parse(`${date}T00:00:00Z`) / DAY_MS);

/** One room type's nights: free rooms from `base` on; MISSING where no night row exists. */
class Nights {
  base = 0;
  free = new Int32Array(0);

  set(day: number, free: number): void {
    if (this.free.length === 0) this.base = day;
    if (day < this.base || day >= this.base + this.free.length) this.grow(day);
    this.free[day - this.base] = free;
  }

  /** Min free over [from, to), or MISSING when a night has no row. */
  minFree(from: number, to: number): number {
    if (from < this.base || to > this.base + this.free.length) return MISSING;
    let min = Infinity;
    for (let d = from - this.base; d < to - this.base; d++) {
      const f = this.free[d]!;
      if (f === MISSING) return MISSING;
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
    const next = new Int32Array(to - from).fill(MISSING);
    next.set(this.free, this.base - from);
    this.base = from;
    this.free = next;
  }
}

/** A room type of the catalogue, with its nights once known (looked up again until they exist). */
interface Entry {
  rt: IndexedRoomType;
  nights: Nights | undefined;
  /** Its answer as JSON around `available`, the one field that varies by search (the keys in Availability's order). */
  jsonHead: string;
  jsonTail: string;
}

function entry(rt: IndexedRoomType, nights: Nights | undefined): Entry {
  const head = JSON.stringify({ roomTypeId: rt.roomTypeId, hotelId: rt.hotelId, hotelName: rt.hotelName, name: rt.name });
  const tail = JSON.stringify({ depositAmount: rt.depositAmount, currency: rt.currency });
  return { rt, nights, jsonHead: `${head.slice(0, -1)},"available":`, jsonTail: `,${tail.slice(1)}` };
}

export class StayCalendar {
  private readonly nights = new Map<number, Nights>();
  private roomTypes = new Map<number, IndexedRoomType>();
  private byCity = new Map<string, Entry[]>();
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
      list.push(entry(rt, this.nights.get(rt.roomTypeId)));
    }
    this.byCity = byCity;
  }

  /** Sets the free rooms of one night (sellable − held − confirmed). */
  setNight(roomTypeId: number, day: number, free: number): void {
    let n = this.nights.get(roomTypeId);
    if (!n) this.nights.set(roomTypeId, (n = new Nights()));
    n.set(day, free);
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

  /** `search` as the JSON text of its array, from each room type's JSON around `available` (what the API sends). */
  searchJson(city: string, checkIn: number, checkOut: number, rooms: number, limit: number): string {
    const free = this.free(city, checkIn, checkOut, rooms, limit);
    let out = '[';
    for (let k = 0; k < free.length; k++) out += `${k ? ',' : ''}${free[k]!.e.jsonHead}${free[k]!.available}${free[k]!.e.jsonTail}`;
    return `${out}]`;
  }

  private free(city: string, checkIn: number, checkOut: number, rooms: number, limit: number): { e: Entry; available: number }[] {
    const hits: Entry[] = [];
    const available: number[] = [];
    for (const e of this.byCity.get(city) ?? []) {
      e.nights ??= this.nights.get(e.rt.roomTypeId);
      const a = e.nights ? e.nights.minFree(checkIn, checkOut) : MISSING;
      if (a === MISSING || a < rooms) continue;
      hits.push(e);
      available.push(a);
    }
    const order = hits.map((_, i) => i).sort((i, j) => available[j]! - available[i]! || hits[i]!.rt.roomTypeId - hits[j]!.rt.roomTypeId);
    const out: { e: Entry; available: number }[] = [];
    for (let k = 0; k < order.length && k < limit; k++) out.push({ e: hits[order[k]!]!, available: available[order[k]!]! });
    return out;
  }
}
