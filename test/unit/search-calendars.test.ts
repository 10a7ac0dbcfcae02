import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CarCalendar, type IndexedCar } from '../../shared/domain/car-calendar.js';
import { StayCalendar, dayOf } from '../../shared/domain/stay-calendar.js';
import { TailCursor } from '../../shared/search/tail-cursor.js';
import { envelope } from '../../shared/domain/json-bytes.js';
import { MATRIX_DAYS } from '../../shared/domain/city-nights.js';
import { eachPair, tuples } from '../../shared/db/search-feed.js';

const H = 3_600_000;
const CARS = envelope('cars');
const ROOM_TYPES = envelope('roomTypes');
const car = (id: number, city: string, dailyPrice: number, turnaroundMinutes = 60): IndexedCar => ({
  id, plate: `P${id}`, model: 'M', city, dailyPrice, depositAmount: 10, currency: 'VND', turnaroundMinutes,
});

describe('CarCalendar', () => {
  it('answers like the SQL rule: [from, to + turnaround) overlaps no blocked interval; cheapest first, then id', () => {
    fc.assert(fc.property(
      fc.array(fc.record({ price: fc.integer({ min: 1, max: 5 }), turn: fc.integer({ min: 0, max: 180 }), city: fc.constantFrom('A', 'B') }), { minLength: 1, maxLength: 12 }),
      fc.array(fc.record({ car: fc.nat(), start: fc.integer({ min: 0, max: 200 }), len: fc.integer({ min: 1, max: 30 }), keep: fc.boolean() }), { maxLength: 40 }),
      fc.array(fc.record({ city: fc.constantFrom('A', 'B'), start: fc.integer({ min: 0, max: 220 }), len: fc.integer({ min: 1, max: 40 }), limit: fc.integer({ min: 1, max: 6 }) }), { minLength: 1, maxLength: 10 }),
      (cars, holds, queries) => {
        const cal = new CarCalendar();
        const catalogue = cars.map((c, i) => car(i + 1, c.city, c.price, c.turn));
        cal.setCars(catalogue);
        // What the database would hold: non-overlapping blocked ranges per car (the exclusion constraint).
        const active: { id: number; carId: number; lo: number; hi: number }[] = [];
        holds.forEach((h, i) => {
          const c = catalogue[h.car % catalogue.length]!;
          const lo = h.start * H;
          const hi = (h.start + h.len) * H + c.turnaroundMinutes * 60_000;
          if (active.some((a) => a.carId === c.id && a.lo < hi && lo < a.hi)) return;
          active.push({ id: i + 1, carId: c.id, lo, hi });
          cal.add(i + 1, c.id, lo, hi);
        });
        for (const [i, h] of holds.entries()) {
          if (!h.keep && active.some((a) => a.id === i + 1)) {
            cal.remove(i + 1);
            active.splice(active.findIndex((a) => a.id === i + 1), 1);
          }
        }
        for (const q of queries) {
          const from = q.start * H;
          const to = (q.start + q.len) * H;
          const expected = catalogue
            .filter((c) => c.city === q.city)
            .filter((c) => !active.some((a) => a.carId === c.id && a.lo < to + c.turnaroundMinutes * 60_000 && from < a.hi))
            .sort((a, b) => a.dailyPrice - b.dailyPrice || a.id - b.id)
            .slice(0, q.limit)
            .map((c) => c.id);
          expect(cal.search(q.city, from, to, q.limit).map((c) => c.id)).toEqual(expected);
          // What the API sends: the same answer, byte for byte as JSON.stringify would write it.
          expect(cal.searchJson(q.city, from, to, q.limit, CARS).toString('utf8')).toBe(JSON.stringify({ cars: cal.search(q.city, from, to, q.limit) }));
        }
      },
    ));
  });

  it('adding or removing a booking twice changes nothing; answers carry no turnaround', () => {
    const cal = new CarCalendar();
    cal.setCars([car(1, 'A', 5)]);
    cal.add(7, 1, 10 * H, 12 * H);
    cal.add(7, 1, 10 * H, 12 * H);
    expect(cal.size).toEqual({ cars: 1, intervals: 1 });
    expect(cal.search('A', 9 * H, 10 * H, 5)).toEqual([]); // to + 60 min reaches into [10, 12)
    cal.remove(7);
    cal.remove(7);
    expect(cal.search('A', 9 * H, 10 * H, 5)).toEqual([{ id: 1, plate: 'P1', model: 'M', city: 'A', dailyPrice: 5, depositAmount: 10, currency: 'VND' }]);
  });
});

describe('CarCalendar catalogue, changed car by car (the catalogue feed and the in-place rebuild)', () => {
  const order = (cal: CarCalendar, city: string) => cal.search(city, 0, H, 1_000).map((c) => c.id);

  it('upserts (new cars, new prices, new cities) and drops keep the order a full sort of the catalogue gives', () => {
    fc.assert(fc.property(
      fc.array(fc.record({ id: fc.integer({ min: 1, max: 15 }), price: fc.integer({ min: 1, max: 4 }), city: fc.constantFrom('A', 'B'), drop: fc.boolean() }), { maxLength: 60 }),
      (ops) => {
        const cal = new CarCalendar();
        const truth = new Map<number, IndexedCar>();
        for (const o of ops) {
          if (o.drop && o.price === 1) {
            truth.delete(o.id);
            cal.retainCars(new Set(truth.keys()));
          } else {
            truth.set(o.id, car(o.id, o.city, o.price));
            cal.upsertCar(car(o.id, o.city, o.price));
          }
          const full = new CarCalendar();
          full.setCars([...truth.values()]);
          for (const city of ['A', 'B']) expect(order(cal, city)).toEqual(order(full, city));
        }
      },
    ));
  });

  it('keeps a car\'s intervals through an update that moves it, and a booking on one car only when a reload meets it on another', () => {
    const cal = new CarCalendar();
    cal.setCars([car(1, 'A', 5), car(2, 'A', 6)]);
    cal.add(7, 1, 10 * H, 12 * H);
    cal.upsertCar(car(1, 'A', 9)); // dearer: now after car 2
    expect(order(cal, 'A')).toEqual([2, 1]);
    expect(JSON.parse(cal.searchJson('A', 0, H, 5, CARS).toString('utf8')).cars).toEqual([car(2, 'A', 6), car(1, 'A', 9)].map(({ turnaroundMinutes: _t, ...c }) => c));
    expect(cal.search('A', 10 * H, 11 * H, 5).map((c) => c.id)).toEqual([2]);
    // A rebuild reads car 2's page after a change moved booking 7 onto it: it leaves car 1.
    cal.load(2, [[7, 20 * H, 22 * H]]);
    expect(cal.size).toEqual({ cars: 2, intervals: 1 });
    expect(cal.search('A', 10 * H, 11 * H, 5).map((c) => c.id)).toEqual([2, 1]);
    expect(cal.search('A', 20 * H, 21 * H, 5).map((c) => c.id)).toEqual([1]);
    cal.remove(7);
    expect(cal.search('A', 20 * H, 21 * H, 5).map((c) => c.id)).toEqual([2, 1]);
  });
});

describe('CarCalendar busy bits (the walk skips cars busy in a bucket wholly inside the period)', () => {
  it('answers as the plain rule through any interleaving of adds, removes, reloads, moves, turnarounds, listings, drops, catalogues, rebases and searches', () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('add' as const), car: fc.nat(), start: fc.integer({ min: 0, max: 400 }), len: fc.integer({ min: 1, max: 100 }) }),
      fc.record({ kind: fc.constant('remove' as const), pick: fc.nat() }),
      fc.record({ kind: fc.constant('load' as const), car: fc.nat(), starts: fc.array(fc.integer({ min: 0, max: 400 }), { maxLength: 4 }), len: fc.integer({ min: 1, max: 60 }) }),
      fc.record({ kind: fc.constant('move' as const), car: fc.nat(), price: fc.integer({ min: 1, max: 9 }), city: fc.constantFrom('A', 'B') }),
      fc.record({ kind: fc.constant('drop' as const), car: fc.nat() }),
      fc.record({ kind: fc.constant('turnaround' as const), car: fc.nat(), minutes: fc.integer({ min: 0, max: 600 }) }),
      fc.record({ kind: fc.constant('catalogue' as const), car: fc.nat(), price: fc.integer({ min: 1, max: 9 }) }),
      fc.record({ kind: fc.constant('list' as const), price: fc.integer({ min: 1, max: 9 }), city: fc.constantFrom('A', 'B') }),
      fc.record({ kind: fc.constant('rebase' as const), at: fc.integer({ min: 0, max: 10 * 24 }) }),
      fc.record({ kind: fc.constant('search' as const), city: fc.constantFrom('A', 'B'), start: fc.integer({ min: 0, max: 420 }), len: fc.integer({ min: 1, max: 200 }), limit: fc.integer({ min: 1, max: 80 }) }),
    );
    fc.assert(fc.property(fc.integer({ min: 1, max: 70 }), fc.array(op, { minLength: 20, maxLength: 120 }), (cars, ops) => {
      const cal = new CarCalendar();
      const truth = new Map<number, IndexedCar>();
      for (let id = 1; id <= cars; id++) truth.set(id, car(id, id % 3 ? 'A' : 'B', 1 + (id * 7) % 5, (id % 4) * 30));
      cal.setCars([...truth.values()]);
      let active: { id: number; carId: number; lo: number; hi: number }[] = [];
      let nextId = 1;
      const free = (carId: number, lo: number, hi: number) => !active.some((a) => a.carId === carId && a.lo < hi && lo < a.hi);
      const ids = () => [...truth.keys()];
      for (const o of ops) {
        if (o.kind === 'add') {
          const c = truth.get(ids()[o.car % truth.size]!);
          if (!c) continue;
          const lo = o.start * H;
          const hi = (o.start + o.len) * H + c.turnaroundMinutes * 60_000;
          if (!free(c.id, lo, hi)) continue;
          active.push({ id: nextId, carId: c.id, lo, hi });
          cal.add(nextId++, c.id, lo, hi);
        } else if (o.kind === 'remove') {
          if (!active.length) continue;
          const a = active[o.pick % active.length]!;
          active = active.filter((x) => x !== a);
          cal.remove(a.id);
        } else if (o.kind === 'load') {
          const c = truth.get(ids()[o.car % truth.size]!);
          if (!c) continue;
          active = active.filter((a) => a.carId !== c.id);
          const mine: { id: number; carId: number; lo: number; hi: number }[] = [];
          for (const st of [...new Set(o.starts)].sort((x, y) => x - y)) {
            const lo = st * H;
            const hi = (st + o.len) * H;
            if (mine.some((a) => a.lo < hi && lo < a.hi)) continue;
            mine.push({ id: nextId++, carId: c.id, lo, hi });
          }
          active.push(...mine);
          cal.load(c.id, mine.map((a) => [a.id, a.lo, a.hi]));
        } else if (o.kind === 'move') {
          const id = ids()[o.car % truth.size];
          if (id === undefined) continue;
          const c = { ...truth.get(id)!, city: o.city, dailyPrice: o.price };
          truth.set(id, c);
          cal.upsertCar(c);
        } else if (o.kind === 'turnaround') {
          // A longer turnaround, in place (no move): intervals already held keep theirs; new searches use it.
          const id = ids()[o.car % truth.size]!;
          const c = { ...truth.get(id)!, turnaroundMinutes: o.minutes };
          truth.set(id, c);
          cal.upsertCar(c);
        } else if (o.kind === 'drop') {
          if (truth.size <= 1) continue;
          const id = ids()[o.car % truth.size]!;
          truth.delete(id);
          active = active.filter((a) => a.carId !== id);
          cal.retainCars(new Set(truth.keys()));
        } else if (o.kind === 'catalogue') {
          // A whole catalogue at once, one car's price changed in it.
          const id = ids()[o.car % truth.size]!;
          truth.set(id, { ...truth.get(id)!, dailyPrice: o.price });
          cal.setCars([...truth.values()].reverse());
        } else if (o.kind === 'list') {
          const c = car(Math.max(0, ...truth.keys()) + 1, o.city, o.price, 0);
          truth.set(c.id, c);
          cal.upsertCar(c);
        } else if (o.kind === 'rebase') {
          cal.rebase(o.at * H);
        } else {
          const from = o.start * H;
          const to = (o.start + o.len) * H;
          const expected = [...truth.values()]
            .filter((c) => c.city === o.city && free(c.id, from, to + c.turnaroundMinutes * 60_000))
            .sort((a, b) => a.dailyPrice - b.dailyPrice || a.id - b.id)
            .slice(0, o.limit)
            .map((c) => c.id);
          expect(cal.search(o.city, from, to, o.limit).map((c) => c.id)).toEqual(expected);
        }
      }
    }), { numRuns: 300 });
  });
});

describe('CarCalendar busy bits, by example', () => {
  it('a longer turnaround in place reaches a booking the bits made for the old one would call idle', () => {
    const cal = new CarCalendar();
    cal.setCars([car(1, 'A', 5, 0)]);
    cal.add(7, 1, 10 * H, 12 * H);
    expect(cal.search('A', 0, 8 * H, 5).map((c) => c.id)).toEqual([1]);
    cal.upsertCar(car(1, 'A', 5, 300)); // [0, 8 h + 5 h) now reaches [10 h, 12 h)
    expect(cal.search('A', 0, 8 * H, 5)).toEqual([]);
  });

  it('skips a car busy in a bucket inside the period, and lists one whose interval ends before it', () => {
    const cal = new CarCalendar();
    cal.setCars([car(1, 'A', 5, 0), car(2, 'A', 6, 0)]);
    cal.add(7, 1, 30 * H, 31 * H);
    cal.add(8, 2, 20 * H, 24 * H);
    expect(cal.search('A', 24 * H, 48 * H, 5).map((c) => c.id)).toEqual([2]);
    cal.remove(7);
    expect(cal.search('A', 24 * H, 48 * H, 5).map((c) => c.id)).toEqual([1, 2]);
  });
});

describe('eachPair', () => {
  it('reads "a,b;c,d" as the number pairs tuples() reads, negatives included', () => {
    fc.assert(fc.property(fc.array(fc.tuple(fc.integer({ min: -1000, max: 100_000 }), fc.integer({ min: -5, max: 1_000_000 })), { maxLength: 30 }), (pairs) => {
      const text = pairs.length ? pairs.map((p) => p.join(',')).join(';') : null;
      const got: number[][] = [];
      eachPair(text, (a, b) => got.push([a, b]));
      expect(got).toEqual(tuples(text));
      expect(got).toEqual(pairs);
    }));
  });
});

describe('StayCalendar', () => {
  it('available = min free over the nights, a missing night excludes the room type; most available first', () => {
    const cal = new StayCalendar();
    const rt = (roomTypeId: number, city = 'A') => ({ roomTypeId, hotelId: 1, hotelName: 'H', name: `R${roomTypeId}`, depositAmount: 1, currency: 'VND', city });
    cal.setRoomTypes([rt(1), rt(2), rt(3), rt(4, 'B')]);
    const d = dayOf('2030-01-10');
    for (let i = 0; i < 5; i++) {
      cal.setNight(1, d + i, 3);
      cal.setNight(2, d + i, i === 2 ? 1 : 5);
      if (i !== 3) cal.setNight(3, d + i, 9);
      cal.setNight(4, d + i, 9);
    }
    expect(cal.search('A', d, d + 5, 1, 200).map((r) => [r.roomTypeId, r.available])).toEqual([[1, 3], [2, 1]]);
    expect(cal.search('A', d, d + 3, 2, 200).map((r) => r.roomTypeId)).toEqual([3, 1]);
    expect(cal.search('A', d + 3, d + 5, 1, 1).map((r) => r.roomTypeId)).toEqual([2]);
    cal.setNight(1, d - 40, 2); // grows backwards; the gap stays missing
    expect(cal.search('A', d - 40, d - 39, 1, 200).map((r) => r.roomTypeId)).toEqual([1]);
    expect(cal.search('A', d - 40, d, 1, 200)).toEqual([]);
  });

  it('answers as the plain rule (min free over the nights ≥ rooms; most available first, then id; at most limit), any catalogue order', () => {
    // Small counts make ties (the id order); large ones the comparison sort's path.
    fc.assert(fc.property(
      fc.array(fc.record({ id: fc.integer({ min: 1, max: 60 }), city: fc.constantFrom('A', 'B'), free: fc.array(fc.oneof(fc.integer({ min: -3, max: 6 }), fc.integer({ min: 0, max: 400 })), { minLength: 4, maxLength: 4 }), missing: fc.integer({ min: -1, max: 3 }) }), { maxLength: 40 }),
      fc.integer({ min: 0, max: 3 }), fc.integer({ min: 1, max: 4 }), fc.integer({ min: 0, max: 5 }), fc.integer({ min: 1, max: 8 }),
      // The matrices' window: unset, covering the nights, cutting them (searches then walk the nights), far away;
      // set before or after the nights, a search before them or not; nights stored years away (any date may be).
      fc.option(fc.integer({ min: -1000, max: 104 })), fc.boolean(), fc.boolean(), fc.boolean(),
      (types, from, len, rooms, limit, window, windowFirst, searchFirst, far) => {
        const byId = new Map(types.map((t) => [t.id, t]));
        const cal = new StayCalendar();
        if (window !== null && windowFirst) cal.setWindow(window);
        cal.setRoomTypes([...byId.values()].map((t) => ({ roomTypeId: t.id, hotelId: 1, hotelName: 'H', name: `R${t.id}`, depositAmount: 1, currency: 'VND', city: t.city })));
        if (searchFirst) cal.search('A', 100, 101, 1, 5);
        for (const t of byId.values()) t.free.forEach((f, d) => d !== t.missing && cal.setNight(t.id, 100 + d, f));
        if (far) for (const t of byId.values()) cal.setNight(t.id, 100 + 5 * MATRIX_DAYS, 5);
        if (window !== null && !windowFirst) cal.setWindow(window);
        const [a, b] = [100 + from, Math.min(104, 100 + from + len)];
        const plain = [...byId.values()]
          .filter((t) => t.city === 'A' && b > a && (t.missing < from || t.missing >= b - 100))
          .map((t) => ({ id: t.id, available: Math.min(...t.free.slice(a - 100, b - 100)) }))
          .filter((t) => t.available >= rooms)
          .sort((x, y) => y.available - x.available || x.id - y.id)
          .slice(0, limit);
        expect(cal.search('A', a, b, rooms, limit).map((r) => ({ id: r.roomTypeId, available: r.available }))).toEqual(plain);
      },
    ), { numRuns: 300 });
  });

  it('sends the answer as JSON made once per room type, byte for byte what JSON.stringify writes (names quoted and escaped)', () => {
    fc.assert(fc.property(
      fc.array(fc.record({ hotelName: fc.string(), name: fc.string({ unit: 'binary' }), depositAmount: fc.nat(), free: fc.array(fc.integer({ min: -1, max: 9 }), { minLength: 4, maxLength: 4 }) }), { minLength: 1, maxLength: 8 }),
      fc.integer({ min: 0, max: 3 }), fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 3 }),
      (types, from, len, rooms) => {
        const cal = new StayCalendar();
        cal.setRoomTypes(types.map((t, i) => ({ roomTypeId: i + 1, hotelId: 7, hotelName: t.hotelName, name: t.name, depositAmount: t.depositAmount, currency: 'VND', city: 'A' })));
        types.forEach((t, i) => t.free.forEach((f, d) => f >= 0 && cal.setNight(i + 1, 100 + d, f)));
        const [a, b] = [100 + from, Math.min(104, 100 + from + len)];
        expect(cal.searchJson('A', a, b, rooms, 5, ROOM_TYPES).toString('utf8')).toBe(JSON.stringify({ roomTypes: cal.search('A', a, b, rooms, 5) }));
      },
    ));
  });
});

describe('TailCursor', () => {
  const snap = (xmin: number, xmax: number, xip: number[] = []) => ({ xmin: BigInt(xmin), xmax: BigInt(xmax), xip: xip.map(BigInt) });

  it('moves past a read only once every transaction in progress at that read has ended', () => {
    const c = new TailCursor(10);
    c.read(15, snap(100, 105, [100, 103]));
    expect(c.cursor).toBe(10);
    c.read(16, snap(103, 110, [103, 107]));
    expect(c.cursor).toBe(10); // 103 still in progress: a row of it with an id ≤ 15 may still appear
    c.read(18, snap(107, 112, [107]));
    expect(c.cursor).toBe(15);
    c.read(18, snap(112, 112));
    expect(c.cursor).toBe(18);
  });

  it('ignores transactions of other databases once told', () => {
    const c = new TailCursor(0);
    c.read(5, snap(50, 60, [50]), 0);
    c.read(5, snap(50, 61, [50]), 2_000);
    expect(c.cursor).toBe(0);
    expect(c.waitingLongerThan(1_000, 2_000)).toEqual([50n]);
    c.ignore(new Set([50n]));
    c.read(6, snap(50, 62, [50]), 2_100);
    expect(c.cursor).toBe(5);
  });
});
