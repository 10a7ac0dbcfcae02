import { describe, expect, it } from 'vitest';
import { EVENTS, messageKeyOf, parseEvent } from '../../shared/events/payloads.js';
import { EVENT_TYPES } from '../../shared/events/topics.js';
import { draftCarHeld } from '../../shared/events/outbox.js';
import { withCorrelation } from '../../shared/correlation.js';

const envelope = { eventId: '7f1c1a8e-4a1b-4c55-9c55-0d7a3f1e2b10', occurredAt: '2030-01-01T00:00:00.000Z' };

describe('event payloads', () => {
  it('every event type has a payload schema and a message key', () => {
    expect(Object.keys(EVENTS).sort()).toEqual([...EVENT_TYPES].sort());
  });

  it('keys by booking, inventory.adjusted by room type', () => {
    expect(messageKeyOf('booking.expired', { bookingId: 5, customerId: 9, kind: 'car' })).toBe(5);
    expect(messageKeyOf('inventory.adjusted', {
      bookingId: null, roomTypeId: 3, from: '2030-01-01', to: '2030-01-02', sellable: 4, reason: 'r', actor: 'operator:1',
    })).toBe(3);
  });

  it('rate.updated is keyed by rate plan', () => {
    expect(messageKeyOf('rate.updated', {
      bookingId: null, ratePlanId: 8, roomTypeId: 3, currency: 'VND', from: '2030-01-01', to: '2030-01-02', changes: { price: 5 }, reason: 'r', actor: 'operator:1',
    })).toBe(8);
  });

  it('a booking.held written before prices existed still parses: totalAmount null, one guest, no rate plan', () => {
    const old = {
      ...envelope, type: 'booking.held', bookingId: 1, customerId: 2, kind: 'stay', roomTypeId: 3, checkIn: '2030-01-01',
      checkOut: '2030-01-03', rooms: 1, holdExpiresAt: '2030-01-01T00:15:00.000Z', depositAmount: 100, currency: 'VND',
    };
    expect(parseEvent('booking.held', old)).toMatchObject({ totalAmount: null, guests: 1, ratePlanId: null, quoteId: null });
  });

  it('parses a stored event by its type, ignores unknown types, refuses a malformed known one', () => {
    const held = {
      ...envelope, type: 'booking.held', bookingId: 1, customerId: 2, kind: 'stay', roomTypeId: 3, checkIn: '2030-01-01',
      checkOut: '2030-01-03', rooms: 1, holdExpiresAt: '2030-01-01T00:15:00.000Z', depositAmount: 100, currency: 'VND',
    };
    expect(parseEvent('booking.held', held)).toMatchObject({ type: 'booking.held', bookingId: 1, kind: 'stay', rooms: 1 });
    expect(parseEvent('rate.withdrawn', { ...envelope, type: 'rate.withdrawn', ratePlanId: 1 })).toBeNull();
    expect(() => parseEvent('refund.requested', { ...envelope, type: 'refund.requested', bookingId: 1 })).toThrow();
  });

  it("a car's booking.held drafted for the one-statement hold, completed by the row, is a whole booking.held with the request id", () => {
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const draft = withCorrelation({ requestId: 'req-1', traceparent }, () => draftCarHeld(new Date(envelope.occurredAt), {
      customerId: 2, kind: 'car', carId: 3, from: '2030-01-02T00:00:00.000Z', to: '2030-01-02T03:00:00.000Z', holdExpiresAt: '2030-01-01T00:15:00.000Z',
    }));
    expect(draft).toMatchObject({ topic: 'booking.held', requestId: 'req-1', traceparent });
    // What insertCarHoldWithEvent adds from the inserted booking (jsonb ||): its id and the car's prices.
    const stored = { ...draft.payload, bookingId: 1, depositAmount: 100, totalAmount: 500, currency: 'VND' };
    const parsed = parseEvent('booking.held', stored)!;
    expect(parsed).toMatchObject({ eventId: draft.eventId, type: 'booking.held', bookingId: 1, totalAmount: 500 });
    // Every field of the schema is written, none left to the defaults kept for events of older versions.
    expect(Object.keys(stored).sort()).toEqual(Object.keys(parsed).sort());
    expect(draftCarHeld(new Date(), { customerId: 2, kind: 'car', carId: 3, from: '', to: '', holdExpiresAt: '' })).toMatchObject({ requestId: null, traceparent: null });
  });
});
