import { describe, expect, it } from 'vitest';
import { BOOKING_STATUSES, nextStatus, type BookingAction } from '../../shared/domain/booking-status.js';

const allowed: Record<string, string> = {
  'HOLD confirm': 'CONFIRMED', 'HOLD expire': 'EXPIRED', 'HOLD cancel': 'CANCELLED', 'CONFIRMED cancel': 'CANCELLED',
  'CONFIRMED pickup': 'ON_TRIP', 'ON_TRIP return': 'COMPLETED',
};

describe('booking state machine', () => {
  for (const status of BOOKING_STATUSES) {
    for (const action of ['confirm', 'expire', 'cancel', 'pickup', 'return'] as BookingAction[]) {
      const expected = allowed[`${status} ${action}`] ?? null;
      it(`${status} --${action}--> ${expected ?? 'refused'}`, () => expect(nextStatus(status, action)).toBe(expected));
    }
  }
});
