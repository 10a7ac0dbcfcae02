import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  depositEffect, depositIntentKey, freeForChange, isEarlierDepositKey, nightDeltas, planChange, type StayTerms,
} from '../../shared/domain/changes.js';
import type { CarBooking, StayBooking } from '../../shared/domain/booking.js';
import { DomainError } from '../../shared/domain/errors.js';
import { addDays } from '../../shared/domain/hotel-dates.js';

const base = {
  id: 7, version: 3, customerId: 5, depositAmount: 1000, totalAmount: 500, currency: 'VND', holdExpiresAt: null, nextExpiryCheckAt: null,
  payRequestedAt: null, paymentIntentId: null, depositVersion: 0, jobGen: 0,
};
const car = (o: Partial<CarBooking> = {}): CarBooking => ({
  ...base, kind: 'car', status: 'CONFIRMED', carId: 1, hostId: 9, from: new Date('2030-01-01T10:00:00Z'), to: new Date('2030-01-02T10:00:00Z'), ...o,
});
const stay = (o: Partial<StayBooking> = {}): StayBooking => ({
  ...base, kind: 'stay', status: 'CONFIRMED', roomTypeId: 2, checkIn: '2030-01-01', checkOut: '2030-01-03', rooms: 1, guests: 1, ratePlanId: 4,
  hotel: { timezone: 'Asia/Ho_Chi_Minh', checkInTime: '14:00' }, ...o,
});
const now = new Date('2029-12-01T00:00:00Z');
const refusal = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    return e instanceof DomainError ? [e.code, (e.details as { field?: string } | undefined)?.field] : ['thrown', String(e)];
  }
  return ['accepted'];
};

describe('planChange: what a request asks of a booking', () => {
  it('the fields given replace the booking\'s; unchanged fields count as no change', () => {
    const p = planChange(car(), { to: new Date('2030-01-03T10:00:00Z'), carId: 1 }, now);
    expect(p).toMatchObject({ kind: 'car', changed: ['to'], after: { carId: 1, to: new Date('2030-01-03T10:00:00Z') } });
  });

  it('refuses, in order: a field of the other kind (400), a status that allows no change (409), nothing changing (400)', () => {
    expect(refusal(() => planChange(car({ status: 'CANCELLED' }), { rooms: 2 }, now))).toEqual(['VALIDATION', 'rooms']);
    expect(refusal(() => planChange(stay(), { from: now }, now))).toEqual(['VALIDATION', 'from']);
    for (const status of ['EXPIRED', 'CANCELLED', 'COMPLETED'] as const) {
      expect(refusal(() => planChange(car({ status }), { to: new Date('2030-01-05T00:00:00Z') }, now))).toEqual(['INVALID_STATE', undefined]);
    }
    expect(refusal(() => planChange(car(), {}, now))).toEqual(['VALIDATION', 'body']);
    expect(refusal(() => planChange(stay(), { checkIn: '2030-01-01', quoteId: 3 }, now))).toEqual(['VALIDATION', 'body']);
  });

  it('a HOLD past its holdExpiresAt is expiring: no change', () => {
    const hold = car({ status: 'HOLD', holdExpiresAt: new Date(now.getTime() - 1) });
    expect(refusal(() => planChange(hold, { to: new Date('2030-01-05T00:00:00Z') }, now))).toEqual(['INVALID_STATE', undefined]);
    expect(planChange({ ...hold, holdExpiresAt: new Date(now.getTime() + 1) }, { to: new Date('2030-01-05T00:00:00Z') }, now).changed).toEqual(['to']);
  });

  it('ON_TRIP changes only its return (to; a stay\'s checkOut): anything else, a quote included, is 409 naming it', () => {
    expect(planChange(car({ status: 'ON_TRIP' }), { to: new Date('2030-01-05T00:00:00Z'), from: car().from }, now).changed).toEqual(['to']);
    expect(refusal(() => planChange(car({ status: 'ON_TRIP' }), { from: new Date('2030-01-01T11:00:00Z') }, now))).toEqual(['INVALID_STATE', 'from']);
    expect(refusal(() => planChange(car({ status: 'ON_TRIP' }), { carId: 2 }, now))).toEqual(['INVALID_STATE', 'carId']);
    expect(planChange(stay({ status: 'ON_TRIP' }), { checkOut: '2030-01-05' }, now).changed).toEqual(['checkOut']);
    for (const r of [{ checkIn: '2029-12-31' }, { rooms: 2 }, { checkOut: '2030-01-05', quoteId: 1 }]) {
      expect(refusal(() => planChange(stay({ status: 'ON_TRIP' }), r, now))[0]).toBe('INVALID_STATE');
    }
  });

  it('a new room type keeps no rate plan of the old one: the ratePlanId given, or none', () => {
    expect(planChange(stay(), { roomTypeId: 3 }, now)).toMatchObject({ after: { roomTypeId: 3, ratePlanId: null }, changed: ['roomTypeId', 'ratePlanId'] });
    expect(planChange(stay(), { roomTypeId: 3, ratePlanId: 8 }, now).after).toMatchObject({ ratePlanId: 8 });
    expect(planChange(stay(), { rooms: 2 }, now).after).toMatchObject({ ratePlanId: 4 });
  });
});

describe('depositEffect', () => {
  it('HOLD: a new deposit reprices; CONFIRMED: lower refunds the difference, higher is DEPOSIT_INCREASE; ON_TRIP: none', () => {
    expect(depositEffect('HOLD', 100, 100)).toEqual({ kind: 'none' });
    expect(depositEffect('HOLD', 100, 300)).toEqual({ kind: 'reprice' });
    expect(depositEffect('HOLD', 300, 100)).toEqual({ kind: 'reprice' });
    expect(depositEffect('CONFIRMED', 300, 100)).toEqual({ kind: 'refund', amount: 200 });
    expect(refusal(() => depositEffect('CONFIRMED', 100, 300))).toEqual(['DEPOSIT_INCREASE', undefined]);
    expect(() => depositEffect('CONFIRMED', 100, 300)).toThrow(expect.objectContaining({ details: { depositAmount: 100, newDepositAmount: 300 } }));
    expect(depositEffect('ON_TRIP', 100, 300)).toEqual({ kind: 'none' });
  });

  it('intent keys: deposit-{id}, then deposit-{id}-v{n}', () => {
    expect([depositIntentKey(12, 0), depositIntentKey(12, 1), depositIntentKey(12, 7)]).toEqual(['deposit-12', 'deposit-12-v1', 'deposit-12-v7']);
  });

  it('a key is an earlier deposit\'s when its version is below the current one; a key of another booking or shape counts as earlier', () => {
    fc.assert(fc.property(fc.nat(50), fc.nat(50), (v, current) => {
      expect(isEarlierDepositKey(12, depositIntentKey(12, v), current)).toBe(v < current);
    }));
    expect(isEarlierDepositKey(12, depositIntentKey(120, 3), 0)).toBe(true);
    expect(isEarlierDepositKey(12, 'deposit-x', 0)).toBe(true);
  });
});

const termsArb = fc.record({
  roomTypeId: fc.constantFrom(1, 2), start: fc.integer({ min: 0, max: 10 }), nights: fc.integer({ min: 1, max: 6 }), rooms: fc.integer({ min: 1, max: 4 }),
}).map(({ roomTypeId, start, nights, rooms }): StayTerms => ({
  roomTypeId, checkIn: addDays('2030-03-01', start), checkOut: addDays('2030-03-01', start + nights), rooms, guests: 1, ratePlanId: null,
}));
const occupancy = (t: StayTerms) => {
  const m = new Map<string, number>();
  for (let d = t.checkIn; d < t.checkOut; d = addDays(d, 1)) m.set(`${t.roomTypeId}|${d}`, t.rooms);
  return m;
};

describe('nightDeltas and freeForChange (properties)', () => {
  it('the old counts plus the deltas are the new counts; no zero delta; sorted by room type then night (the lock order)', () => {
    fc.assert(fc.property(termsArb, termsArb, (before, after) => {
      const deltas = nightDeltas(before, after);
      const counts = occupancy(before);
      for (const d of deltas) {
        expect(d.delta).not.toBe(0);
        const key = `${d.roomTypeId}|${d.night}`;
        counts.set(key, (counts.get(key) ?? 0) + d.delta);
      }
      const want = occupancy(after);
      for (const [k, v] of counts) expect(v, k).toBe(want.get(k) ?? 0);
      const keys = deltas.map((d) => [d.roomTypeId, d.night] as const);
      expect(keys).toEqual([...keys].sort((a, b) => a[0] - b[0] || a[1].localeCompare(b[1])));
    }));
  });

  it('the new stay is judged on the free rooms plus those the booking holds on the same room type and night', () => {
    fc.assert(fc.property(termsArb, termsArb, fc.integer({ min: 0, max: 3 }), (before, after, free) => {
      const nights = [1, 2].flatMap((roomTypeId) => Array.from({ length: 17 }, (_, i) => ({ roomTypeId, date: addDays('2030-03-01', i), available: free })));
      const view = freeForChange(before, after, nights);
      const own = occupancy(before);
      expect(view.map((n) => n.date)).toEqual([...occupancy(after).keys()].map((k) => k.split('|')[1]));
      for (const n of view) expect(n.available).toBe(free + (own.get(`${after.roomTypeId}|${n.date}`) ?? 0));
    }));
  });
});
