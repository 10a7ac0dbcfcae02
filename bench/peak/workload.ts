/**
 * What the generator sends, drawn from the dataset it runs against (deterministic by seed):
 *  - hold: POST /bookings for a car, a fresh customer each (so the 3-per-15-min limiter never refuses); the car is
 *    one of the popular ones with probability `hotShare`, else any; the period starts on a whole hour 1 h to
 *    `holdWindowDays` ahead and lasts 1–72 h. Conflicts (409 CAR_UNAVAILABLE) are expected and reported.
 *  - hot hold (the hot-car phase): the same, on the first `hotCars` (200) popular cars only, with periods in the next
 *    `hotWindowDays` (14): the seed's "few hundred popular cars" at a peak, mostly 409 CAR_UNAVAILABLE once taken.
 *  - search: GET /cars, a random city (weighted by its share of cars), start any whole hour in the next 90 days,
 *    1–7 days long, limit 50: many keys, not one hot one.
 *  - stays: GET /hotels/availability, a random city, check-in in the next 180 days, 1–7 nights, 1 room (70 %) or 2.
 */
import { signJwt } from '../lib.js';
import { CITIES, DAY_H, HOUR_MS, float, int, isHotCar, pickWeighted, rngFor, type DatasetOptions } from '../dataset/generate.js';
import type { Req } from './loadgen.js';

export interface WorkloadOptions {
  hotShare: number;
  /** The hot-car phase's cars (the first of the popular ones) and how far ahead its periods start. */
  hotCars?: number;
  hotWindowDays?: number;
  holdWindowDays: number;
  jwtSecret: string;
  seed: number;
}

const nextHour = () => Math.ceil(Date.now() / HOUR_MS) * HOUR_MS;
const isoHour = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');

export function workload(d: DatasetOptions, w: WorkloadOptions) {
  const rng = rngFor(w.seed, 100);
  const hot: number[] = [];
  for (let id = 1; id <= d.cars; id++) if (isHotCar(d, id)) hot.push(id);
  let customer = 10_000_000 + int(rng, 0, 1_000_000) * 100;
  const few = hot.slice(0, w.hotCars ?? 200);
  const holdOn = (carId: number, windowDays: number): Req => {
    const from = nextHour() + int(rng, 1, windowDays * DAY_H) * HOUR_MS;
    const to = from + int(rng, 1, 72) * HOUR_MS;
    const token = signJwt(w.jwtSecret, { sub: String(customer++), role: 'customer' });
    return {
      method: 'POST', path: '/bookings',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ carId, from: isoHour(from), to: isoHour(to) }),
    };
  };
  return {
    hold(): Req {
      return holdOn(hot.length && float(rng) < w.hotShare ? hot[int(rng, 0, hot.length - 1)]! : int(rng, 1, d.cars), w.holdWindowDays);
    },
    hotHold(): Req {
      return holdOn(few.length ? few[int(rng, 0, few.length - 1)]! : int(rng, 1, d.cars), w.hotWindowDays ?? 14);
    },
    search(): Req {
      const city = pickWeighted(rng, CITIES).name;
      const from = nextHour() + int(rng, 0, 90 * DAY_H - 1) * HOUR_MS;
      const to = from + int(rng, 1, 7) * DAY_H * HOUR_MS;
      return { method: 'GET', path: `/cars?city=${encodeURIComponent(city)}&from=${isoHour(from)}&to=${isoHour(to)}&limit=50` };
    },
    stays(): Req {
      const city = pickWeighted(rng, CITIES).name;
      const today = Date.parse(`${new Date().toISOString().slice(0, 10)}T00:00:00Z`);
      const checkIn = today + int(rng, 1, 180) * 86_400_000;
      const checkOut = checkIn + int(rng, 1, 7) * 86_400_000;
      const date = (ms: number) => new Date(ms).toISOString().slice(0, 10);
      const rooms = float(rng) < 0.7 ? 1 : 2;
      return { method: 'GET', path: `/hotels/availability?city=${encodeURIComponent(city)}&checkIn=${date(checkIn)}&checkOut=${date(checkOut)}&rooms=${rooms}` };
    },
  };
}
