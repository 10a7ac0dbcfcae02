/**
 * Deterministic rows for the benchmark catalogue: the same options and seed give the same rows, byte for byte.
 *
 * Cars: spread over CITIES by weight, 1 in `cars / hotCars` is "popular" (the seed's few hundred cars the holds
 * go to). Car bookings: every car's calendar over the window [anchor − 7 d, anchor + 127 d) is filled up to an
 * occupancy (popular 85 %, others 55 %: the next 90 days of searches, each up to 30 days long, meet a realistic
 * calendar); when `bookings` is smaller, every car gets proportionally fewer; bookings beyond the window's
 * capacity become history (COMPLETED / CANCELLED / EXPIRED, walking back in time from the window), as a
 * catalogue that has been in business for years has. Periods start on whole hours and last 1–7 days plus 0–6 h.
 * Rows are emitted in created_at order (ids grow with time), so one car's bookings are spread over the heap as
 * they are in production, not clustered.
 * Stays: hotels of 5 room types, `nights` nights from the anchor date, 3–20 rooms sellable; CONFIRMED stay
 * bookings fill 50 % of the first 30 nights, tapering to 10 % by night 180; room_night.confirmed is their sum.
 */
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';
import { uniformInt } from 'pure-rand/distribution/uniformInt';
import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64';

export interface DatasetOptions {
  seed: number;
  cars: number;
  bookings: number;
  hotCars: number;
  roomTypes: number;
  nights: number;
  /** UTC date the calendars are laid around, YYYY-MM-DD (today by default). */
  anchor: string;
}

/** Bumped whenever the generated rows change, so cached templates are rebuilt. */
export const GENERATOR_VERSION = 1;

export const CITIES: readonly { name: string; weight: number }[] = [
  { name: 'Ho Chi Minh City', weight: 30 }, { name: 'Hanoi', weight: 25 }, { name: 'Da Nang', weight: 12 },
  { name: 'Nha Trang', weight: 8 }, { name: 'Da Lat', weight: 6 }, { name: 'Hue', weight: 5 },
  { name: 'Hai Phong', weight: 5 }, { name: 'Can Tho', weight: 4 }, { name: 'Vung Tau', weight: 3 }, { name: 'Phu Quoc', weight: 2 },
];

export const HOUR_MS = 3_600_000;
export const DAY_H = 24;
const WINDOW_BEFORE_H = 7 * DAY_H;
export const WINDOW_AFTER_H = 127 * DAY_H;
const OCC_HOT = 0.85;
const OCC_OTHER = 0.55;
const MEAN_LEN_H = 4 * DAY_H + 3;
const TURNAROUNDS = [60, 120, 120, 120, 180];
const MODELS = ['Toyota Vios', 'Toyota Innova', 'Toyota Fortuner', 'Honda City', 'Honda CR-V', 'Hyundai Accent', 'Hyundai Creta',
  'Kia Morning', 'Kia Seltos', 'Mazda 2', 'Mazda CX-5', 'Mitsubishi Xpander', 'Ford Ranger', 'Ford Everest', 'VinFast VF5',
  'VinFast VF8', 'Suzuki Ertiga', 'Peugeot 2008', 'Nissan Almera', 'Mercedes C200'];

export type Rng = ReturnType<typeof xoroshiro128plus>;
export const rngFor = (seed: number, stream: number): Rng => xoroshiro128plus((seed * 1_000_003 + stream) | 0);
export const int = (rng: Rng, from: number, to: number) => uniformInt(rng, from, to);
export const float = (rng: Rng) => uniformFloat64(rng);

export function pickWeighted<T extends { weight: number }>(rng: Rng, items: readonly T[]): T {
  const total = items.reduce((s, i) => s + i.weight, 0);
  let x = float(rng) * total;
  for (const i of items) if ((x -= i.weight) < 0) return i;
  return items[items.length - 1]!;
}

export const anchorMs = (o: DatasetOptions) => Date.parse(`${o.anchor}T00:00:00Z`);
export const hotStep = (o: DatasetOptions) => Math.max(1, Math.floor(o.cars / Math.max(1, o.hotCars)));
/** Popular cars: ids 1, 1 + step, 1 + 2·step, … (hotCars of them). */
export const isHotCar = (o: DatasetOptions, id: number) => (id - 1) % hotStep(o) === 0 && (id - 1) / hotStep(o) < o.hotCars;

export interface Car {
  id: number; hostId: number; plate: string; model: string; city: string;
  dailyPrice: number; depositAmount: number; turnaroundMinutes: number;
}

export function generateCars(o: DatasetOptions): Car[] {
  const rng = rngFor(o.seed, 1);
  const cars: Car[] = [];
  for (let id = 1; id <= o.cars; id++) {
    const m = int(rng, 0, MODELS.length - 1);
    cars.push({
      id, hostId: 1 + int(rng, 0, 1999), plate: `BX-${String(id).padStart(6, '0')}`, model: MODELS[m]!,
      city: pickWeighted(rng, CITIES).name,
      dailyPrice: 400_000 + m * 60_000 + int(rng, 0, 80) * 10_000,
      depositAmount: 2_000_000 + int(rng, 0, 8) * 1_000_000,
      turnaroundMinutes: TURNAROUNDS[int(rng, 0, TURNAROUNDS.length - 1)]!,
    });
  }
  return cars;
}

export const STATUS = ['CONFIRMED', 'ON_TRIP', 'COMPLETED', 'CANCELLED', 'EXPIRED'] as const;

/** Car bookings as columns (hours since the epoch), in created order. */
export interface CarBookings {
  n: number;
  car: Int32Array;
  startH: Int32Array;
  lenH: Int32Array;
  createdH: Int32Array;
  status: Uint8Array;
  customer: Int32Array;
}

/** Spreads `total` over weights so the integer shares add up exactly (error diffusion). */
function shares(weights: Float64Array, total: number): Int32Array {
  const sum = weights.reduce((s, w) => s + w, 0);
  const out = new Int32Array(weights.length);
  let acc = 0;
  let given = 0;
  for (let i = 0; i < weights.length; i++) {
    acc += (weights[i]! * total) / (sum || 1);
    const upto = i === weights.length - 1 ? total : Math.floor(acc + 1e-9);
    out[i] = upto - given;
    given = upto;
  }
  return out;
}

export function generateCarBookings(o: DatasetOptions, cars: readonly Car[]): CarBookings {
  const rng = rngFor(o.seed, 2);
  const a = anchorMs(o) / HOUR_MS;
  const w0 = a - WINDOW_BEFORE_H;
  const wH = WINDOW_BEFORE_H + WINDOW_AFTER_H;
  const capacity = new Float64Array(cars.length);
  cars.forEach((c, i) => {
    capacity[i] = Math.floor((wH * (isHotCar(o, c.id) ? OCC_HOT : OCC_OTHER)) / (MEAN_LEN_H + c.turnaroundMinutes / 60));
  });
  const fullWindow = capacity.reduce((s, k) => s + k, 0);
  const inWindow = o.bookings <= fullWindow ? shares(capacity, o.bookings) : Int32Array.from(capacity);
  const history = shares(new Float64Array(cars.length).fill(1), Math.max(0, o.bookings - fullWindow));
  const n = o.bookings;
  const b: CarBookings = {
    n, car: new Int32Array(n), startH: new Int32Array(n), lenH: new Int32Array(n), createdH: new Int32Array(n),
    status: new Uint8Array(n), customer: new Int32Array(n),
  };
  let j = 0;
  const add = (car: number, start: number, len: number, created: number, status: number) => {
    b.car[j] = car; b.startH[j] = start; b.lenH[j] = len; b.createdH[j] = Math.min(created, a - 1); b.status[j] = status;
    b.customer[j] = int(rng, 1, 5_000_000);
    j++;
  };
  const randomLen = () => int(rng, 1, 7) * DAY_H + int(rng, 0, 6);
  cars.forEach((c, i) => {
    const turn = Math.ceil(c.turnaroundMinutes / 60);
    const k = inWindow[i]!;
    // k slots over the window, one booking inside each: blocked ranges never overlap.
    for (let s = 0; s < k; s++) {
      const slotStart = w0 + Math.floor((s * wH) / k);
      const slotLen = w0 + Math.floor(((s + 1) * wH) / k) - slotStart;
      const len = Math.max(1, Math.min(randomLen(), slotLen - turn - 1));
      const start = slotStart + int(rng, 0, Math.max(0, slotLen - len - turn - 1));
      const status = float(rng) < 0.07 ? 3 : start + len <= a ? 2 : start <= a ? 1 : 0;
      add(c.id, start, len, start - int(rng, 1, 60 * DAY_H), status);
    }
    let t = w0;
    for (let h = 0; h < history[i]!; h++) {
      const len = randomLen();
      const start = t - int(rng, 0, MEAN_LEN_H) - turn - len;
      const r = float(rng);
      add(c.id, start, len, start - int(rng, 1, 30 * DAY_H), r < 0.85 ? 2 : r < 0.95 ? 3 : 4);
      t = start;
    }
  });
  return sortByCreated(b);
}

/** Counting sort on createdH: ids follow creation time, as they would in production. */
function sortByCreated(b: CarBookings): CarBookings {
  let min = Infinity;
  let max = -Infinity;
  for (let i = 0; i < b.n; i++) { min = Math.min(min, b.createdH[i]!); max = Math.max(max, b.createdH[i]!); }
  if (b.n === 0) return b;
  const counts = new Int32Array(max - min + 2);
  for (let i = 0; i < b.n; i++) counts[b.createdH[i]! - min + 1]!++;
  for (let i = 1; i < counts.length; i++) counts[i]! += counts[i - 1]!;
  const order = new Int32Array(b.n);
  for (let i = 0; i < b.n; i++) order[counts[b.createdH[i]! - min]!++] = i;
  const pick = <T extends Int32Array | Uint8Array>(src: T): T => {
    const out = new (src.constructor as new (n: number) => T)(b.n);
    for (let i = 0; i < b.n; i++) out[i] = src[order[i]!]!;
    return out;
  };
  return { n: b.n, car: pick(b.car), startH: pick(b.startH), lenH: pick(b.lenH), createdH: pick(b.createdH), status: pick(b.status), customer: pick(b.customer) };
}

export interface Hotel { id: number; name: string; city: string }
export interface RoomType { id: number; hotelId: number; name: string; depositAmount: number; sellable: number }
export interface StayBooking { roomTypeId: number; night: number; nights: number; rooms: number; deposit: number; createdDaysBefore: number; customer: number }

const ROOM_NAMES = ['Standard', 'Superior', 'Deluxe', 'Family', 'Suite'];

export function generateStays(o: DatasetOptions) {
  const rng = rngFor(o.seed, 3);
  const hotels: Hotel[] = [];
  const roomTypes: RoomType[] = [];
  for (let id = 1; roomTypes.length < o.roomTypes; id++) {
    const city = pickWeighted(rng, CITIES).name;
    hotels.push({ id, name: `${city} Hotel ${id}`, city });
    for (let r = 0; r < ROOM_NAMES.length && roomTypes.length < o.roomTypes; r++) {
      roomTypes.push({ id: roomTypes.length + 1, hotelId: id, name: ROOM_NAMES[r]!, depositAmount: 500_000 * (r + 1), sellable: int(rng, 3, 20) });
    }
  }
  const confirmed: Int32Array[] = [];
  const bookings: StayBooking[] = [];
  for (const rt of roomTypes) {
    const load = new Int32Array(o.nights);
    for (let d = 0; d < o.nights; d++) {
      const occ = d < 30 ? 0.5 : Math.max(0.1, 0.5 - (0.4 * (d - 30)) / 150);
      const target = Math.floor(rt.sellable * occ);
      while (load[d]! < target) {
        const nights = Math.min(int(rng, 1, 5), o.nights - d);
        let rooms = int(rng, 1, 2);
        const fits = (r: number) => load.subarray(d, d + nights).every((l) => l + r <= rt.sellable);
        if (!fits(rooms)) rooms = 1;
        if (!fits(rooms)) break;
        for (let i = d; i < d + nights; i++) load[i]! += rooms;
        bookings.push({ roomTypeId: rt.id, night: d, nights, rooms, deposit: rt.depositAmount * rooms, createdDaysBefore: int(rng, 1, 60), customer: int(rng, 1, 5_000_000) });
      }
    }
    confirmed.push(load);
  }
  return { hotels, roomTypes, confirmed, bookings };
}
