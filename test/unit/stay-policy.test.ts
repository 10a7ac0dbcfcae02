import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { zonedWallTimeToInstant } from '../../shared/domain/zoned-time.js';
import { pickupInstant, refundAmount, type StayBooking } from '../../shared/domain/booking.js';

const HOUR = 3_600_000;
const MIN = 60_000;
const iso = (d: Date) => d.toISOString();

function stay(checkIn: string, timezone: string, checkInTime = '14:00:00', deposit = 1_000_000): StayBooking {
  return {
    id: 1, kind: 'stay', status: 'CONFIRMED', jobGen: 0, version: 2, customerId: 7,
    roomTypeId: 3, checkIn, checkOut: '2030-01-01', rooms: 1, guests: 1, ratePlanId: null, totalAmount: null, depositAmount: deposit, currency: 'VND',
    holdExpiresAt: null, nextExpiryCheckAt: null, payRequestedAt: null, paymentIntentId: null, depositVersion: 0,
    hotel: { timezone, checkInTime },
  };
}

/** The customer's refund when cancelling `b` at `at`, as cancelBooking computes it. */
const customerRefund = (b: StayBooking, at: string) =>
  refundAmount({ deposit: b.depositAmount, pickupAt: pickupInstant(b), cancelledAt: new Date(at), cancelledByProvider: false });

describe('zonedWallTimeToInstant', () => {
  it('Europe/Berlin: check-in day after the spring-forward is UTC+2, the day before UTC+1', () => {
    // 2027-03-28 is the last Sunday of March: clocks jump 02:00 CET → 03:00 CEST (01:00Z).
    expect(iso(zonedWallTimeToInstant('2027-03-28', '14:00', 'Europe/Berlin'))).toBe('2027-03-28T12:00:00.000Z');
    expect(iso(zonedWallTimeToInstant('2027-03-27', '14:00', 'Europe/Berlin'))).toBe('2027-03-27T13:00:00.000Z');
    expect(iso(zonedWallTimeToInstant('2027-03-28', '01:59', 'Europe/Berlin'))).toBe('2027-03-28T00:59:00.000Z');
    expect(iso(zonedWallTimeToInstant('2027-03-28', '03:00', 'Europe/Berlin'))).toBe('2027-03-28T01:00:00.000Z');
    // Seconds are honoured (the DB hands check_in_time over as HH:MM:SS).
    expect(iso(zonedWallTimeToInstant('2027-03-28', '14:00:30', 'Europe/Berlin'))).toBe('2027-03-28T12:00:30.000Z');
  });

  it('Europe/Berlin: a wall time skipped by the jump lands after the jump, never before it', () => {
    const t = zonedWallTimeToInstant('2027-03-28', '02:30', 'Europe/Berlin');
    expect(t.getTime()).toBeGreaterThanOrEqual(Date.parse('2027-03-28T01:00:00Z'));
    // Shifted by the gap (as Temporal's "compatible" disambiguation): 03:30 CEST.
    expect(iso(t)).toBe('2027-03-28T01:30:00.000Z');
    // West of Greenwich too: 02:30 on New York's spring-forward night is 03:30 EDT, not 01:30 EST.
    expect(iso(zonedWallTimeToInstant('2025-03-09', '02:30', 'America/New_York'))).toBe('2025-03-09T07:30:00.000Z');
  });

  it('Europe/Berlin: autumn fall-back day', () => {
    expect(iso(zonedWallTimeToInstant('2027-10-31', '14:00', 'Europe/Berlin'))).toBe('2027-10-31T13:00:00.000Z');
    expect(iso(zonedWallTimeToInstant('2027-10-30', '14:00', 'Europe/Berlin'))).toBe('2027-10-30T12:00:00.000Z');
    // 02:30 happens twice: the first occurrence (02:30 CEST).
    expect(iso(zonedWallTimeToInstant('2027-10-31', '02:30', 'Europe/Berlin'))).toBe('2027-10-31T00:30:00.000Z');
  });

  it('Asia/Ho_Chi_Minh is UTC+7 all year', () => {
    for (const date of ['2027-01-15', '2027-03-28', '2027-07-01', '2027-10-31', '2028-02-29']) {
      expect(iso(zonedWallTimeToInstant(date, '14:00', 'Asia/Ho_Chi_Minh'))).toBe(`${date}T07:00:00.000Z`);
    }
    // Check-in shortly after midnight local is the previous UTC day.
    expect(iso(zonedWallTimeToInstant('2027-03-01', '00:30', 'Asia/Ho_Chi_Minh'))).toBe('2027-02-28T17:30:00.000Z');
  });

  it('property: the instant reads back as the same wall time in the zone (outside DST gaps)', () => {
    const zones = ['Europe/Berlin', 'Asia/Ho_Chi_Minh', 'America/New_York', 'Australia/Sydney', 'UTC', 'Asia/Kolkata'];
    const wall = (d: Date, tz: string) =>
      new Intl.DateTimeFormat('sv-SE', {
        timeZone: tz, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit',
      }).format(d);
    fc.assert(
      fc.property(
        fc.constantFrom(...zones),
        fc.integer({ min: 0, max: 3 * 366 }),
        fc.integer({ min: 0, max: 23 }),
        fc.integer({ min: 0, max: 59 }),
        (tz, dayOffset, hh, mm) => {
          const date = new Date(Date.UTC(2026, 0, 1) + dayOffset * 86_400_000).toISOString().slice(0, 10);
          const time = `${String(hh).padStart(2, '0')}:${String(mm).padStart(2, '0')}`;
          const t = zonedWallTimeToInstant(date, time, tz);
          const back = wall(t, tz);
          if (back !== `${date} ${time}`) {
            // Only a wall time that does not exist (spring-forward gap) may read back differently, and then
            // it must read back later on the same day, by less than the gap (at most 1 h in these zones).
            const asUtc = Date.parse(`${date}T${time}:00Z`);
            const backUtc = Date.parse(`${back.replace(' ', 'T')}:00Z`);
            expect(backUtc - asUtc).toBeGreaterThan(0);
            expect(backUtc - asUtc).toBeLessThanOrEqual(HOUR);
            // …and the wall time really is missing: one minute before the instant reads as before the gap.
            expect(Date.parse(`${wall(new Date(t.getTime() - MIN), tz).replace(' ', 'T')}:00Z`)).toBeLessThan(asUtc);
          }
        },
      ),
      { seed: 20270328, numRuns: 2000 },
    );
  });
});

describe('stay cancellation refund around DST (pickupInstant + refundAmount)', () => {
  it('Berlin, check-in 2027-03-28 14:00 (= 12:00Z): deadlines count real hours across the jump', () => {
    const b = stay('2027-03-28', 'Europe/Berlin');
    expect(iso(pickupInstant(b))).toBe('2027-03-28T12:00:00.000Z');
    // Exactly 72 h before: full refund. One minute later: half. (Naive local arithmetic would put the
    // boundary at 2027-03-25 14:00 CET = 13:00Z, an hour too late.)
    expect(customerRefund(b, '2027-03-25T12:00:00Z')).toBe(1_000_000);
    expect(customerRefund(b, '2027-03-25T12:01:00Z')).toBe(500_000);
    expect(customerRefund(b, '2027-03-25T12:59:00Z')).toBe(500_000);
    // 24 h boundary.
    expect(customerRefund(b, '2027-03-27T12:00:00Z')).toBe(500_000);
    expect(customerRefund(b, '2027-03-27T12:01:00Z')).toBe(0);
    expect(customerRefund(b, '2027-03-28T11:59:00Z')).toBe(0);
    expect(customerRefund(b, '2027-03-29T00:00:00Z')).toBe(0); // after check-in
  });

  it('Berlin, check-in 2027-03-27 14:00 (= 13:00Z, still winter time)', () => {
    const b = stay('2027-03-27', 'Europe/Berlin');
    expect(iso(pickupInstant(b))).toBe('2027-03-27T13:00:00.000Z');
    expect(customerRefund(b, '2027-03-24T13:00:00Z')).toBe(1_000_000);
    expect(customerRefund(b, '2027-03-24T13:01:00Z')).toBe(500_000);
    expect(customerRefund(b, '2027-03-26T13:00:00Z')).toBe(500_000);
    expect(customerRefund(b, '2027-03-26T13:01:00Z')).toBe(0);
  });

  it('Berlin, check-in 2027-03-30 14:00 CEST: the 72 h window spans the jump (71 wall-clock hours + 1)', () => {
    const b = stay('2027-03-30', 'Europe/Berlin');
    expect(iso(pickupInstant(b))).toBe('2027-03-30T12:00:00.000Z');
    // 72 real hours before is 2027-03-27 12:00Z = 13:00 CET, not 14:00 CET.
    expect(customerRefund(b, '2027-03-27T12:00:00Z')).toBe(1_000_000);
    expect(customerRefund(b, '2027-03-27T12:01:00Z')).toBe(500_000);
    expect(customerRefund(b, '2027-03-27T13:00:00Z')).toBe(500_000);
  });

  it('Asia/Ho_Chi_Minh, check-in 2027-03-28 14:00 (= 07:00Z)', () => {
    const b = stay('2027-03-28', 'Asia/Ho_Chi_Minh', '14:00:00', 2_000_001);
    expect(iso(pickupInstant(b))).toBe('2027-03-28T07:00:00.000Z');
    expect(customerRefund(b, '2027-03-25T07:00:00Z')).toBe(2_000_001);
    expect(customerRefund(b, '2027-03-25T07:01:00Z')).toBe(1_000_000); // floor(50%)
    expect(customerRefund(b, '2027-03-25T07:00:00+07:00')).toBe(2_000_001);
    expect(customerRefund(b, '2027-03-27T07:00:00Z')).toBe(1_000_000);
    expect(customerRefund(b, '2027-03-27T07:00:01Z')).toBe(0);
  });

  it('hotel check-in time other than 14:00 is honoured', () => {
    const b = stay('2027-03-28', 'Asia/Ho_Chi_Minh', '12:30:00');
    expect(iso(pickupInstant(b))).toBe('2027-03-28T05:30:00.000Z');
  });

  it('a provider (operator) cancellation is always 100 %, even after check-in', () => {
    const b = stay('2027-03-28', 'Europe/Berlin');
    expect(refundAmount({ deposit: 999, pickupAt: pickupInstant(b), cancelledAt: new Date('2027-03-29T00:00:00Z'), cancelledByProvider: true })).toBe(999);
  });
});
