// The cars of every city in price order, each with the sorted blocked intervals of its active bookings: what
// a car search needs, in memory. Pure (no I/O): shared/search/indexes.ts loads and feeds it. A search walks the
// city's cars cheapest first, 32 at a time: the city's busy bits (busy-bits.ts) drop the cars busy somewhere
// wholly inside the period, and each car left is asked by binary search, stopping at `limit` free cars. The bits
// matter when most cheap cars are taken: without them a search asked ~430 cars to find 50 (the bench's catalogue).

/** A car as search answers it, plus what the calendar needs (city, turnaround). */
export interface IndexedCar {
  id: number;
  plate: string;
  model: string;
  city: string;
  dailyPrice: number;
  depositAmount: number;
  currency: string;
  turnaroundMinutes: number;
}

import { BusyBits, firstEndingAfter, walkFree } from './busy-bits.js';
import { joinJson, utf8, type Envelope } from './json-bytes.js';

const DAY_MS = 86_400_000;

export type PublicCar = Omit<IndexedCar, 'turnaroundMinutes'>;

/**
 * A car in the calendar. A class, not a literal: every entry then has one hidden class, so the search walk's loads
 * (`lo`, `hi`, `json`, …) stay monomorphic. Entries built by spreading a literal each got a map of their own
 * (19,992 maps for 20,000 cars) and every load in the walk went megamorphic: ~60 µs a search instead of ~8.
 */
class Entry {
  car!: IndexedCar;
  answer!: PublicCar;
  /** `answer` as JSON (UTF-8), made once per catalogue change: a search answer is these joined (json-bytes.ts). */
  json!: Uint8Array;
  /** The turnaround in ms, beside the intervals the walk reads. */
  turnaroundMs = 0;
  /** Blocked intervals [lo, hi) in epoch ms, disjoint (the exclusion constraint), sorted by lo (and so by hi). */
  lo: number[] = [];
  hi: number[] = [];
  ids: number[] = [];
  /** Its place in its city's price order, while the city has busy bits (they are dropped when places change). */
  pos = -1;

  constructor(car: IndexedCar) {
    this.setCar(car);
  }

  /** What the entry derives from its car (its answer, made once per catalogue change). */
  setCar(car: IndexedCar): void {
    const { turnaroundMinutes, ...answer } = car;
    this.car = car;
    this.answer = answer;
    this.json = utf8(JSON.stringify(answer));
    this.turnaroundMs = turnaroundMinutes * 60_000;
  }
}

const sameCar = (a: IndexedCar, b: IndexedCar) => a.plate === b.plate && a.model === b.model && a.city === b.city
  && a.dailyPrice === b.dailyPrice && a.depositAmount === b.depositAmount && a.currency === b.currency && a.turnaroundMinutes === b.turnaroundMinutes;

const byPriceThenId = (a: Entry, b: Entry) => a.car.dailyPrice - b.car.dailyPrice || a.car.id - b.car.id;

export class CarCalendar {
  private readonly cars = new Map<number, Entry>();
  private byCity = new Map<string, Entry[]>();
  /** bookingId → carId, to drop a booking that leaves the calendar (its event names only the booking). */
  private readonly bookings = new Map<number, number>();
  /** Each city's busy bits, made at its first search after its places changed (a car listed, moved or dropped). */
  private readonly busy = new Map<string, BusyBits>();
  /** Where the bits' buckets start: a day before the last rebase (searches start in the future). */
  private base: number | null = null;

  /** The highest car id known (new cars are read after it). */
  maxCarId = 0;

  /**
   * Replaces the catalogue at once (the first build, before the calendar answers): cars no longer listed go with
   * their intervals; the intervals of cars still present are kept. O(cars log cars).
   */
  setCars(cars: readonly IndexedCar[]): void {
    const seen = new Set(cars.map((c) => c.id));
    for (const id of [...this.cars.keys()]) if (!seen.has(id)) this.dropCar(id);
    for (const car of cars) {
      const e = this.cars.get(car.id);
      if (e) e.setCar(car);
      else this.cars.set(car.id, new Entry(car));
      this.maxCarId = Math.max(this.maxCarId, car.id);
    }
    const byCity = new Map<string, Entry[]>();
    for (const e of this.cars.values()) {
      let list = byCity.get(e.car.city);
      if (!list) byCity.set(e.car.city, (list = []));
      list.push(e);
    }
    for (const list of byCity.values()) list.sort(byPriceThenId);
    this.byCity = byCity;
    this.busy.clear();
  }

  /**
   * Moves the bits' first bucket to the day before `now`'s (a no-op within the same day), so that the kept buckets
   * cover the searches to come. Each city's bits are then made again at its next search (a few ms).
   */
  rebase(now: number): void {
    const base = Math.floor(now / DAY_MS) * DAY_MS - DAY_MS;
    if (base === this.base) return;
    this.base = base;
    this.busy.clear();
  }

  /**
   * Adds or updates one car, keeping every other: O(log n) to find its place in its city's price order, plus the
   * shift of one array (no re-sort of the catalogue: this runs on the API's event loop between requests).
   */
  upsertCar(car: IndexedCar): void {
    const e = this.cars.get(car.id);
    this.maxCarId = Math.max(this.maxCarId, car.id);
    // Unchanged (a rebuild reads every car again): the live objects stay, nothing new to collect.
    if (e && sameCar(e.car, car)) return;
    if (!e) {
      const n = new Entry(car);
      this.cars.set(car.id, n);
      this.place(n);
      return;
    }
    const moved = e.car.city !== car.city || e.car.dailyPrice !== car.dailyPrice;
    if (moved) this.unplace(e);
    // The city's bits know its longest turnaround.
    else if (e.car.turnaroundMinutes !== car.turnaroundMinutes) this.busy.delete(e.car.city);
    e.setCar(car);
    if (moved) this.place(e);
  }

  /** Cars not in `keep` leave the calendar with their intervals (a rebuild's catalogue). */
  retainCars(keep: ReadonlySet<number>): void {
    for (const id of [...this.cars.keys()]) if (!keep.has(id)) this.dropCar(id);
  }

  /** Every car id in the calendar. */
  carIds(): number[] {
    return [...this.cars.keys()];
  }

  /** Where `e` goes in its city's list: the first entry ordered after it. */
  private slot(list: readonly Entry[], e: Entry): number {
    let a = 0;
    let b = list.length;
    while (a < b) {
      const m = (a + b) >>> 1;
      if (byPriceThenId(list[m]!, e) < 0) a = m + 1;
      else b = m;
    }
    return a;
  }

  private place(e: Entry): void {
    let list = this.byCity.get(e.car.city);
    if (!list) this.byCity.set(e.car.city, (list = []));
    list.splice(this.slot(list, e), 0, e);
    this.busy.delete(e.car.city);
  }

  private unplace(e: Entry): void {
    const list = this.byCity.get(e.car.city);
    if (!list) return;
    this.busy.delete(e.car.city);
    const i = this.slot(list, e);
    if (list[i] === e) list.splice(i, 1);
    else {
      const j = list.indexOf(e);
      if (j >= 0) list.splice(j, 1);
    }
    if (list.length === 0) this.byCity.delete(e.car.city);
  }

  private dropCar(id: number): void {
    const e = this.cars.get(id);
    if (!e) return;
    this.unplace(e);
    for (const b of e.ids) this.bookings.delete(b);
    this.cars.delete(id);
  }

  hasCar(carId: number): boolean {
    return this.cars.has(carId);
  }

  /** The car's turnaround, to turn a booking's period into its blocked interval; null for an unknown car. */
  turnaroundMs(carId: number): number | null {
    return this.cars.get(carId)?.turnaroundMs ?? null;
  }

  /** Adds a booking's blocked interval [lo, hi) (again: a no-op). False when the car is unknown. */
  add(bookingId: number, carId: number, lo: number, hi: number): boolean {
    const e = this.cars.get(carId);
    if (!e) return false;
    if (this.bookings.has(bookingId)) return true;
    const i = firstEndingAfter(e.hi, lo);
    e.lo.splice(i, 0, lo);
    e.hi.splice(i, 0, hi);
    e.ids.splice(i, 0, bookingId);
    this.bookings.set(bookingId, carId);
    this.busy.get(e.car.city)?.mark(e.pos, lo, hi);
    return true;
  }

  /** Sets a car's intervals at once from [bookingId, lo, hi] tuples sorted by lo (a bulk load). */
  load(carId: number, intervals: readonly (readonly number[])[]): boolean {
    const e = this.cars.get(carId);
    if (!e) return false;
    // Unchanged (most cars, between two rebuilds): nothing allocated, nothing for the collector to copy.
    if (intervals.length === e.ids.length && intervals.every((t, i) => t[0] === e.ids[i] && t[1] === e.lo[i] && t[2] === e.hi[i])) return true;
    for (const b of e.ids) this.bookings.delete(b);
    // A booking is on one car at most: read by pages at different moments, a booking moved by a change may come
    // on its new car while the old one still lists it (the tail then replays the change).
    for (const t of intervals) {
      const other = this.bookings.get(t[0]!);
      if (other !== undefined && other !== carId) this.remove(t[0]!);
    }
    const bits = this.busy.get(e.car.city);
    if (bits) for (let k = 0; k < e.lo.length; k++) bits.clear(e.pos, e.lo[k]!, e.hi[k]!);
    e.ids = intervals.map((t) => t[0]!);
    e.lo = intervals.map((t) => t[1]!);
    e.hi = intervals.map((t) => t[2]!);
    for (const b of e.ids) this.bookings.set(b, carId);
    if (bits) for (let k = 0; k < e.lo.length; k++) bits.mark(e.pos, e.lo[k]!, e.hi[k]!);
    return true;
  }

  /** Removes a booking's interval (an unknown booking: a no-op). */
  remove(bookingId: number): void {
    const carId = this.bookings.get(bookingId);
    if (carId === undefined) return;
    this.bookings.delete(bookingId);
    const e = this.cars.get(carId);
    if (!e) return;
    const i = e.ids.indexOf(bookingId);
    if (i < 0) return;
    const [lo] = e.lo.splice(i, 1);
    const [hi] = e.hi.splice(i, 1);
    e.ids.splice(i, 1);
    const bits = this.busy.get(e.car.city);
    if (!bits) return;
    // Its buckets are cleared; the car's neighbouring intervals that share the end buckets mark them again.
    const [start, end] = bits.clear(e.pos, lo!, hi!);
    for (let j = firstEndingAfter(e.hi, start); j < e.lo.length && e.lo[j]! < end; j++) bits.mark(e.pos, e.lo[j]!, e.hi[j]!);
  }

  get size(): { cars: number; intervals: number } {
    return { cars: this.cars.size, intervals: this.bookings.size };
  }

  /**
   * Cars of `city` a hold for [from, to) would be accepted on — [from, to + turnaround) overlaps none of the
   * car's blocked intervals — cheapest first, then by id; at most `limit`.
   */
  search(city: string, from: number, to: number, limit: number): PublicCar[] {
    return this.free(city, from, to, limit).map((e) => e.answer);
  }

  /** `search` as JSON in `env` (`{"cars":[…]}`), joined from each car's JSON: what the API sends. */
  searchJson(city: string, from: number, to: number, limit: number, env: Envelope): Buffer {
    return joinJson(env, this.free(city, from, to, limit).map((e) => e.json));
  }

  private free(city: string, from: number, to: number, limit: number): Entry[] {
    const list = this.byCity.get(city);
    return !list || limit < 1 ? [] : walkFree(list, this.bitsOf(city, list, from), from, to, limit);
  }

  /** The city's busy bits, made from its cars' intervals when missing. */
  private bitsOf(city: string, list: readonly Entry[], from: number): BusyBits {
    let bits = this.busy.get(city);
    if (bits) return bits;
    this.base ??= Math.floor(from / DAY_MS) * DAY_MS - DAY_MS;
    let longest = 0;
    for (const e of list) longest = Math.max(longest, e.turnaroundMs);
    bits = new BusyBits(this.base, list.length, longest);
    for (let p = 0; p < list.length; p++) {
      const e = list[p]!;
      e.pos = p;
      for (let k = 0; k < e.lo.length; k++) bits.mark(p, e.lo[k]!, e.hi[k]!);
    }
    this.busy.set(city, bits);
    return bits;
  }
}
