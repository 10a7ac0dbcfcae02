import { describe, expect, it } from 'vitest';
import {
  generateCarBookings, generateCars, generateStays, isHotCar, STATUS, type DatasetOptions,
} from '../../bench/dataset/generate.js';

const base: DatasetOptions = { seed: 7, cars: 300, bookings: 4_000, hotCars: 30, roomTypes: 12, nights: 120, anchor: '2026-06-01' };
const ACTIVE = new Set(['CONFIRMED', 'ON_TRIP']);

describe('bench dataset generator', () => {
  it('is deterministic by seed', () => {
    const a = generateCarBookings(base, generateCars(base));
    const b = generateCarBookings(base, generateCars(base));
    expect(Buffer.from(a.startH.buffer).equals(Buffer.from(b.startH.buffer))).toBe(true);
    expect(Buffer.from(a.car.buffer).equals(Buffer.from(b.car.buffer))).toBe(true);
    const c = generateCarBookings({ ...base, seed: 8 }, generateCars({ ...base, seed: 8 }));
    expect(Buffer.from(a.startH.buffer).equals(Buffer.from(c.startH.buffer))).toBe(false);
  });

  for (const bookings of [100, 4_000, 20_000]) {
    it(`writes exactly ${bookings} car bookings, in created order, without overlapping active ones`, () => {
      const o = { ...base, bookings };
      const cars = generateCars(o);
      const b = generateCarBookings(o, cars);
      expect(b.n).toBe(bookings);
      for (let i = 1; i < b.n; i++) expect(b.createdH[i]!).toBeGreaterThanOrEqual(b.createdH[i - 1]!);
      const byCar = new Map<number, [number, number][]>();
      for (let i = 0; i < b.n; i++) {
        if (!ACTIVE.has(STATUS[b.status[i]!]!)) continue;
        const turn = Math.ceil(cars[b.car[i]! - 1]!.turnaroundMinutes / 60);
        const list = byCar.get(b.car[i]!) ?? [];
        list.push([b.startH[i]!, b.startH[i]! + b.lenH[i]! + turn]);
        byCar.set(b.car[i]!, list);
      }
      for (const list of byCar.values()) {
        list.sort((x, y) => x[0] - y[0]);
        for (let i = 1; i < list.length; i++) expect(list[i]![0]).toBeGreaterThanOrEqual(list[i - 1]![1]);
      }
    });
  }

  it('marks hotCars popular cars', () => {
    const hot = generateCars(base).filter((c) => isHotCar(base, c.id));
    expect(hot).toHaveLength(base.hotCars);
  });

  it('never books more rooms than sellable on a night, and counts them', () => {
    const s = generateStays(base);
    expect(s.roomTypes).toHaveLength(base.roomTypes);
    const load = s.roomTypes.map(() => new Int32Array(base.nights));
    for (const b of s.bookings) for (let d = b.night; d < b.night + b.nights; d++) load[b.roomTypeId - 1]![d]! += b.rooms;
    s.roomTypes.forEach((rt, i) => {
      expect([...load[i]!]).toEqual([...s.confirmed[i]!]);
      expect(Math.max(...load[i]!)).toBeLessThanOrEqual(rt.sellable);
    });
  });
});
