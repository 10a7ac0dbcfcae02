// The cars of every city in price order, each with the sorted blocked intervals of its active bookings: what
// a car search needs, in memory. Pure (no I/O): shared/search/indexes.ts loads and feeds it. A search walks the
// city's cars cheapest first and asks each one binary search, stopping at `limit` free cars — a few µs to a
// few hundred µs, whatever the number of bookings or the planner's statistics.

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

export type PublicCar = Omit<IndexedCar, 'turnaroundMinutes'>;

interface Entry {
  car: IndexedCar;
  answer: PublicCar;
  /** Blocked intervals [lo, hi) in epoch ms, disjoint (the exclusion constraint), sorted by lo (and so by hi). */
  lo: number[];
  hi: number[];
  ids: number[];
}

const byPriceThenId = (a: Entry, b: Entry) => a.car.dailyPrice - b.car.dailyPrice || a.car.id - b.car.id;

/** Index of the first interval whose end is after `t` (intervals sorted, disjoint). */
function firstEndingAfter(hi: readonly number[], t: number): number {
  let a = 0;
  let b = hi.length;
  while (a < b) {
    const m = (a + b) >>> 1;
    if (hi[m]! > t) b = m;
    else a = m + 1;
  }
  return a;
}

export class CarCalendar {
  private readonly cars = new Map<number, Entry>();
  private byCity = new Map<string, Entry[]>();
  /** bookingId → carId, to drop a booking that leaves the calendar (its event names only the booking). */
  private readonly bookings = new Map<number, number>();

  /** The highest car id known (new cars are read after it). */
  maxCarId = 0;

  /** Replaces the catalogue; the intervals of cars still present are kept. */
  setCars(cars: readonly IndexedCar[]): void {
    const seen = new Set(cars.map((c) => c.id));
    for (const [id, e] of this.cars) {
      if (seen.has(id)) continue;
      for (const b of e.ids) this.bookings.delete(b);
      this.cars.delete(id);
    }
    this.addCars(cars);
  }

  /** Adds or updates cars, keeping every other. */
  addCars(cars: readonly IndexedCar[]): void {
    for (const car of cars) {
      const e = this.cars.get(car.id);
      const { turnaroundMinutes: _t, ...answer } = car;
      if (e) {
        e.car = car;
        e.answer = answer;
      } else this.cars.set(car.id, { car, answer, lo: [], hi: [], ids: [] });
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
  }

  hasCar(carId: number): boolean {
    return this.cars.has(carId);
  }

  /** The car's turnaround, to turn a booking's period into its blocked interval; null for an unknown car. */
  turnaroundMs(carId: number): number | null {
    const e = this.cars.get(carId);
    return e ? e.car.turnaroundMinutes * 60_000 : null;
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
    return true;
  }

  /** Sets a car's intervals at once from [bookingId, lo, hi] tuples sorted by lo (a bulk load). */
  load(carId: number, intervals: readonly (readonly number[])[]): boolean {
    const e = this.cars.get(carId);
    if (!e) return false;
    for (const b of e.ids) this.bookings.delete(b);
    e.ids = intervals.map((t) => t[0]!);
    e.lo = intervals.map((t) => t[1]!);
    e.hi = intervals.map((t) => t[2]!);
    for (const b of e.ids) this.bookings.set(b, carId);
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
    e.lo.splice(i, 1);
    e.hi.splice(i, 1);
    e.ids.splice(i, 1);
  }

  get size(): { cars: number; intervals: number } {
    return { cars: this.cars.size, intervals: this.bookings.size };
  }

  /**
   * Cars of `city` a hold for [from, to) would be accepted on — [from, to + turnaround) overlaps none of the
   * car's blocked intervals — cheapest first, then by id; at most `limit`.
   */
  search(city: string, from: number, to: number, limit: number): PublicCar[] {
    const out: PublicCar[] = [];
    for (const e of this.byCity.get(city) ?? []) {
      const end = to + e.car.turnaroundMinutes * 60_000;
      const i = firstEndingAfter(e.hi, from);
      if (i < e.lo.length && e.lo[i]! < end) continue;
      out.push(e.answer);
      if (out.length >= limit) break;
    }
    return out;
  }
}
