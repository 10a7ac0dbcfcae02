import { describe, expect, it } from 'vitest';
import { refundAmount } from '../../shared/domain/booking.js';

const pickupAt = new Date('2026-01-25T08:00:00+07:00');
const before = (ms: number) => new Date(pickupAt.getTime() - ms);
const H = 3_600_000, MIN = 60_000;
const customer = (cancelledAt: Date, deposit = 2_000_000) => refundAmount({ deposit, pickupAt, cancelledAt, cancelledByProvider: false });

describe('cancellation policy', () => {
  it('refunds everything at exactly 72 h before pickup', () => expect(customer(before(72 * H))).toBe(2_000_000));
  it('refunds half at 72 h − 1 min', () => expect(customer(before(72 * H - MIN))).toBe(1_000_000));
  it('refunds half at exactly 24 h', () => expect(customer(before(24 * H))).toBe(1_000_000));
  it('refunds nothing at 24 h − 1 min', () => expect(customer(before(24 * H - MIN))).toBe(0));
  it('refunds nothing after pickup', () => expect(customer(new Date(pickupAt.getTime() + H))).toBe(0));
  it('rounds an odd deposit down', () => {
    expect(customer(before(30 * H), 1_000_001)).toBe(500_000);
    expect(customer(before(30 * H), 1)).toBe(0);
  });
  it('gives hosts and operators a full refund whenever they cancel', () => {
    expect(refundAmount({ deposit: 2_000_001, pickupAt, cancelledAt: before(MIN), cancelledByProvider: true })).toBe(2_000_001);
  });
  it('measures with milliseconds, not truncated hours', () => expect(customer(before(72 * H - 1))).toBe(1_000_000));
});
