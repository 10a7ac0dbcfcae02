import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  applyChange, CALENDAR_DEFAULTS, judgeStay, nightOrDefault, priceStay, RESTRICTION_REASONS, stayRestriction,
  type CalendarNight, type RestrictionReason,
} from '../../shared/domain/rates.js';
import { addDays, datesFrom, hotelToday } from '../../shared/domain/hotel-dates.js';
import { checkGuests, checkQuoteForHold, type StayRequest } from '../../shared/domain/quotes.js';
import { quoteFingerprint } from '../../shared/usecases/stay-pricing.js';
import { zonedWallTimeToInstant } from '../../shared/domain/zoned-time.js';
import { DomainError } from '../../shared/domain/errors.js';

const night = (date: string, o: Partial<CalendarNight> = {}): CalendarNight => ({ ...nightOrDefault(date, undefined), price: 100, ...o });

const arbNight = (date: string) =>
  fc.record({
    price: fc.option(fc.integer({ min: 0, max: 1_000_000_000_000 }), { freq: 8 }),
    minStay: fc.integer({ min: 1, max: 8 }),
    maxStay: fc.integer({ min: 1, max: 8 }),
    closedToArrival: fc.boolean(),
    closedToDeparture: fc.boolean(),
    stopSell: fc.boolean(),
  }).map((f): CalendarNight => ({ date, ...f }));

/** A stay of 1–8 nights with its departure date's entry; flags are rare so that every reason gets its turn. */
const arbStay = fc.integer({ min: 1, max: 8 }).chain((n) => {
  const dates = datesFrom('2027-03-25', n + 1);
  const rare = (a: fc.Arbitrary<CalendarNight>) =>
    fc.tuple(a, fc.integer({ min: 0, max: 9 })).map(([x, k]) => (k < 7 ? { ...x, closedToArrival: false, closedToDeparture: false, stopSell: false } : x));
  return fc.tuple(...dates.map((d) => rare(arbNight(d)))).map((all) => ({ nights: all.slice(0, n), departure: all[n]! }));
});

/** The contract's order, written out here rather than taken from the code under test. */
const CONTRACT_ORDER: RestrictionReason[] = ['no_price', 'stop_sell', 'closed_to_arrival', 'closed_to_departure', 'min_stay', 'max_stay'];

/** Each reason as the contract words it, one predicate per sentence. */
const applies: Record<RestrictionReason, (nights: CalendarNight[], dep: CalendarNight) => string | null> = {
  no_price: (ns) => ns.find((x) => x.price === null)?.date ?? null,
  stop_sell: (ns) => ns.find((x) => x.stopSell)?.date ?? null,
  closed_to_arrival: (ns) => (ns[0]!.closedToArrival ? ns[0]!.date : null),
  closed_to_departure: (_, dep) => (dep.closedToDeparture ? dep.date : null),
  min_stay: (ns) => (ns.length < ns[0]!.minStay ? ns[0]!.date : null),
  max_stay: (ns) => (ns.length > ns[0]!.maxStay ? ns[0]!.date : null),
};

describe('stay restrictions', () => {
  it('property: the first reason of the contract\'s order that applies wins, naming its date; none applies → null', () => {
    const seen = new Set<string>();
    fc.assert(fc.property(arbStay, ({ nights, departure }) => {
      const expected = CONTRACT_ORDER.map((reason) => ({ reason, date: applies[reason](nights, departure) })).find((x) => x.date !== null);
      const got = stayRestriction(nights, departure);
      seen.add(got?.reason ?? 'none');
      expect(got).toEqual(expected ?? null);
    }), { numRuns: 3000 });
    // The generator reaches every outcome, so the property covers each step of the order.
    expect([...seen].sort()).toEqual([...CONTRACT_ORDER, 'none'].sort());
    expect(RESTRICTION_REASONS).toEqual(CONTRACT_ORDER);
  });

  it('examples: departure uses the checkOut date\'s own entry; min/max stay use the arrival night only', () => {
    const d = datesFrom('2027-06-01', 4);
    const ok = [night(d[0]!), night(d[1]!)];
    expect(stayRestriction(ok, night(d[2]!, { closedToArrival: true, stopSell: true, price: null }))).toBeNull();
    expect(stayRestriction(ok, night(d[2]!, { closedToDeparture: true }))).toEqual({ reason: 'closed_to_departure', date: d[2] });
    // A closed-to-departure on a night inside the stay does not matter.
    expect(stayRestriction([night(d[0]!), night(d[1]!, { closedToDeparture: true, closedToArrival: true })], night(d[2]!))).toBeNull();
    // minStay 3 on night 2 does not bind an arrival on night 1.
    expect(stayRestriction([night(d[0]!), night(d[1]!, { minStay: 3, maxStay: 1 })], night(d[2]!))).toBeNull();
    expect(stayRestriction([night(d[0]!, { minStay: 3 }), night(d[1]!)], night(d[2]!))).toEqual({ reason: 'min_stay', date: d[0] });
    expect(stayRestriction([night(d[0]!, { maxStay: 1 }), night(d[1]!)], night(d[2]!))).toEqual({ reason: 'max_stay', date: d[0] });
    // The earliest unpriced night is named, ahead of an earlier stopped one.
    expect(stayRestriction([night(d[0]!, { stopSell: true }), night(d[1]!, { price: null }), night(d[2]!, { price: null })], night(d[3]!)))
      .toEqual({ reason: 'no_price', date: d[1] });
    // Defaults: a night never set has no price.
    expect(CALENDAR_DEFAULTS).toEqual({ price: null, minStay: 1, maxStay: 30, closedToArrival: false, closedToDeparture: false, stopSell: false });
    expect(stayRestriction([nightOrDefault(d[0]!, undefined)], nightOrDefault(d[1]!, undefined))).toEqual({ reason: 'no_price', date: d[0] });
    // Default maxStay 30: 30 nights pass, 31 would not.
    const thirty = datesFrom('2027-06-01', 31).map((x) => night(x));
    expect(stayRestriction(thirty.slice(0, 30), thirty[30]!)).toBeNull();
  });

  it('applyChange sets exactly the fields given', () => {
    fc.assert(fc.property(arbNight('2027-01-01'), fc.record({
      price: fc.option(fc.nat(), { nil: undefined }), minStay: fc.option(fc.integer({ min: 1, max: 30 }), { nil: undefined }),
      stopSell: fc.option(fc.boolean(), { nil: undefined }),
    }, { requiredKeys: [] }), (n, change) => {
      const out = applyChange(n, change);
      for (const [k, v] of Object.entries(out)) expect(v, k).toBe((change as Record<string, unknown>)[k] ?? (n as unknown as Record<string, unknown>)[k]);
    }));
  });
});

describe('stay totals', () => {
  it('property: total = Σ nightly price × rooms, an exact integer up to the largest price, rooms and nights', () => {
    const arb = fc.tuple(fc.array(fc.integer({ min: 0, max: 1_000_000_000_000 }), { minLength: 1, maxLength: 30 }), fc.integer({ min: 1, max: 100 }));
    fc.assert(fc.property(arb, ([prices, rooms]) => {
      const nights = prices.map((p, i) => night(addDays('2027-01-01', i), { price: p }));
      const s = priceStay(nights, rooms);
      expect(s.nights).toEqual(nights.map((n) => ({ date: n.date, price: n.price })));
      const exact = prices.reduce((a, p) => a + BigInt(p) * BigInt(rooms), 0n);
      expect(BigInt(s.totalAmount)).toBe(exact);
      expect(Number.isSafeInteger(s.totalAmount)).toBe(true);
    }));
    const worst = priceStay(datesFrom('2027-01-01', 30).map((d) => night(d, { price: 1_000_000_000_000 })), 100);
    expect(worst.totalAmount).toBe(3_000_000_000_000_000);
  });

  it('judgeStay: STAY_RESTRICTED before SOLD_OUT before PRICE_CHANGED; details as the contract says', () => {
    const d = datesFrom('2027-06-01', 3);
    const rate = { nights: [night(d[0]!, { price: 100 }), night(d[1]!, { price: 250 })], departure: night(d[2]!) };
    const view = { roomNights: [{ available: 2 }, { available: 2 }], nightCount: 2, rooms: 2, rate, quotedTotal: 700 };
    const code = (v: Parameters<typeof judgeStay>[0]) => {
      try {
        judgeStay(v);
        return 'ok';
      } catch (e) {
        return `${(e as DomainError).code} ${JSON.stringify((e as DomainError).details ?? null)}`;
      }
    };
    expect(judgeStay(view)).toEqual({ nights: [{ date: d[0], price: 100 }, { date: d[1], price: 250 }], totalAmount: 700 });
    expect(code({ ...view, quotedTotal: 600 })).toBe('PRICE_CHANGED {"quotedTotal":600,"currentTotal":700}');
    expect(code({ ...view, quotedTotal: 600, roomNights: [{ available: 2 }, { available: 1 }] })).toBe('SOLD_OUT null');
    expect(code({ ...view, roomNights: [{ available: 2 }] })).toBe('SOLD_OUT null'); // a night without inventory
    expect(code({ ...view, quotedTotal: 600, roomNights: [], rate: { ...rate, departure: night(d[2]!, { closedToDeparture: true }) } }))
      .toBe(`STAY_RESTRICTED {"reason":"closed_to_departure","date":"${d[2]}"}`);
    // Without a rate plan: availability only, no price.
    expect(judgeStay({ ...view, rate: null, quotedTotal: null })).toBeNull();
  });
});

describe('hotel dates (DST-proof)', () => {
  it('hotelToday is the wall-clock date in the zone, across spring-forward and fall-back', () => {
    // Berlin 2027-03-28: 02:00 CET → 03:00 CEST. 23:30Z on the 27th is 00:30 CET on the 28th.
    expect(hotelToday(new Date('2027-03-27T22:59:59Z'), 'Europe/Berlin')).toBe('2027-03-27');
    expect(hotelToday(new Date('2027-03-27T23:00:00Z'), 'Europe/Berlin')).toBe('2027-03-28');
    expect(hotelToday(new Date('2027-03-28T21:59:59Z'), 'Europe/Berlin')).toBe('2027-03-28');
    expect(hotelToday(new Date('2027-03-28T22:00:00Z'), 'Europe/Berlin')).toBe('2027-03-29');
    // Fall-back 2027-10-31 (03:00 CEST → 02:00 CET): that day lasts 25 h.
    expect(hotelToday(new Date('2027-10-30T22:00:00Z'), 'Europe/Berlin')).toBe('2027-10-31');
    expect(hotelToday(new Date('2027-10-31T22:59:59Z'), 'Europe/Berlin')).toBe('2027-10-31');
    expect(hotelToday(new Date('2027-10-31T23:00:00Z'), 'Europe/Berlin')).toBe('2027-11-01');
    // Either side of the date line, one instant, two dates.
    expect(hotelToday(new Date('2027-01-01T11:00:00Z'), 'Pacific/Kiritimati')).toBe('2027-01-02');
    expect(hotelToday(new Date('2027-01-01T10:00:00Z'), 'Pacific/Pago_Pago')).toBe('2026-12-31');
    expect(hotelToday(new Date('2027-01-01T16:59:59Z'), 'Asia/Ho_Chi_Minh')).toBe('2027-01-01');
    expect(hotelToday(new Date('2027-01-01T17:00:00Z'), 'Asia/Ho_Chi_Minh')).toBe('2027-01-02');
  });

  it('property: hotelToday (one answer per zone and UTC second) equals the zone\'s date computed afresh, instant after instant', () => {
    const zones = ['Europe/Berlin', 'America/St_Johns', 'Asia/Kathmandu', 'Australia/Lord_Howe', 'Pacific/Chatham', 'Asia/Ho_Chi_Minh', 'UTC'];
    const afresh = (t: number, timeZone: string) =>
      new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(new Date(t));
    // Walks of instants from just before a local midnight (where the date changes), a few milliseconds to an hour apart.
    const date = fc.integer({ min: 0, max: 3 * 366 }).map((i) => addDays('2026-01-01', i));
    const steps = fc.array(fc.oneof(fc.integer({ min: 0, max: 999 }), fc.integer({ min: 0, max: 3_600_000 })), { minLength: 1, maxLength: 40 });
    fc.assert(fc.property(date, fc.integer({ min: 1, max: 3_000 }), steps, fc.constantFrom(...zones), (d, before, ds, zone) => {
      let t = zonedWallTimeToInstant(d, '00:00', zone).getTime() - before;
      for (const step of ds) {
        t += step;
        expect(hotelToday(new Date(t), zone), `${new Date(t).toISOString()} ${zone}`).toBe(afresh(t, zone));
      }
    }), { numRuns: 300 });
  });

  it('property: local midnight and 23:59 of a date both read back as that date; addDays walks the calendar', () => {
    const zones = ['Europe/Berlin', 'America/New_York', 'Asia/Ho_Chi_Minh', 'Australia/Lord_Howe', 'Asia/Kolkata', 'America/Sao_Paulo', 'UTC'];
    const arbDate = fc.integer({ min: 0, max: 3 * 366 }).map((i) => addDays('2026-01-01', i));
    fc.assert(fc.property(arbDate, fc.constantFrom(...zones), (date, tz) => {
      expect(hotelToday(zonedWallTimeToInstant(date, '23:59', tz), tz)).toBe(date);
      expect(hotelToday(zonedWallTimeToInstant(date, '12:00', tz), tz)).toBe(date);
      expect(addDays(addDays(date, 1), -1)).toBe(date);
      expect(new Date(`${addDays(date, 1)}T00:00:00Z`).getTime() - new Date(`${date}T00:00:00Z`).getTime()).toBe(86_400_000);
    }), { numRuns: 500 });
    expect(datesFrom('2027-03-27', 3)).toEqual(['2027-03-27', '2027-03-28', '2027-03-29']);
    expect(datesFrom('2028-02-28', 2)).toEqual(['2028-02-28', '2028-02-29']);
  });
});

describe('quotes', () => {
  const req: StayRequest = { customerId: 7, roomTypeId: 3, ratePlanId: 9, checkIn: '2027-06-01', checkOut: '2027-06-03', rooms: 1, guests: 2 };

  it('property: the fingerprint changes with every field', () => {
    const fp = quoteFingerprint(req);
    expect(quoteFingerprint({ ...req })).toBe(fp);
    fc.assert(fc.property(fc.constantFrom(...(Object.keys(req) as (keyof StayRequest)[])), fc.integer({ min: 1, max: 50 }), (k, n) => {
      const other = { ...req, [k]: typeof req[k] === 'string' ? addDays(req[k] as string, n) : (req[k] as number) + n };
      expect(quoteFingerprint(other)).not.toBe(fp);
    }));
  });

  it('a hold\'s quote must match the body and not be past validUntil (valid at the instant itself)', () => {
    const q = { id: 1, customerId: 7, fingerprint: quoteFingerprint(req), totalAmount: 500, validUntil: '2027-05-01T10:15:00.000Z' };
    expect(() => checkQuoteForHold(q, quoteFingerprint(req), new Date('2027-05-01T10:15:00.000Z'))).not.toThrow();
    expect(() => checkQuoteForHold(q, quoteFingerprint(req), new Date('2027-05-01T10:15:00.001Z'))).toThrow(expect.objectContaining({ code: 'QUOTE_EXPIRED' }));
    expect(() => checkQuoteForHold(q, quoteFingerprint({ ...req, guests: 1 }), new Date('2027-05-01T10:00:00Z')))
      .toThrow(expect.objectContaining({ code: 'VALIDATION', details: { field: 'quoteId' } }));
  });

  it('guests up to maxGuests × rooms', () => {
    expect(() => checkGuests(4, 2, 2)).not.toThrow();
    expect(() => checkGuests(5, 2, 2)).toThrow(expect.objectContaining({ code: 'VALIDATION', details: { field: 'guests' } }));
  });
});
