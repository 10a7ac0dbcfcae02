import { describe, expect, it } from 'vitest';
import { parseEvent } from '../../shared/events/payloads.js';
import { jobsForEvent } from '../../shared/queues/registry.js';

const ev = (type: string, payload: Record<string, unknown>) =>
  parseEvent(type, { eventId: '00000000-0000-4000-8000-000000000001', type, occurredAt: '2030-01-01T00:00:00.000Z', ...payload })!;

describe('jobsForEvent (what the outbox pump adds per event)', () => {
  const now = Date.parse('2030-01-01T00:00:00.000Z');

  it('booking.held: no job (holds expire by the expiry process\'s PostgreSQL loop, not a job only Redis remembers)', () => {
    const jobs = jobsForEvent(ev('booking.held', {
      bookingId: 7, customerId: 1, kind: 'car', carId: 3, from: '2030-01-02T00:00:00Z', to: '2030-01-03T00:00:00Z',
      holdExpiresAt: '2030-01-01T00:15:00.000Z', depositAmount: 5, currency: 'VND',
    }), now);
    expect(jobs).toEqual([]);
  });

  it('refund.requested and notified events: no jobs (refunds and notifications are PostgreSQL rows, issue 8)', () => {
    expect(jobsForEvent(ev('refund.requested', { bookingId: 7, refundId: 9, amount: 5, currency: 'VND', paymentIntentId: 'pi', reason: 'r' }), now)).toEqual([]);
    expect(jobsForEvent(ev('booking.confirmed', { bookingId: 7, customerId: 1, paymentId: 2, amount: 5, currency: 'VND' }), now)).toEqual([]);
    expect(jobsForEvent(ev('booking.started', { bookingId: 7, customerId: 1, by: 'host:1' }), now)).toEqual([]);
  });
});
