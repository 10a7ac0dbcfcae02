import { z } from 'zod';
import type { EventType } from './topics.js';

// One payload schema per event type: writers are type-checked against it, consumers parse with it.
// The Kafka value is the envelope {eventId, type, occurredAt} plus the payload; consumers read these
// fields, so a field may be added but never renamed or removed.

const id = z.number().int().positive();
const amount = z.number().int().nonnegative();
const currency = z.string();
const instant = z.string(); // ISO-8601, as written by toISOString()
const date = z.string(); // YYYY-MM-DD

// Fields added later default for events written before them (still in the outbox at an upgrade): writers must give them.
const held = { bookingId: id, customerId: id, holdExpiresAt: instant, depositAmount: amount, totalAmount: amount.nullable().default(null), currency };
const bookingHeld = z.discriminatedUnion('kind', [
  z.object({ ...held, kind: z.literal('car'), carId: id, from: instant, to: instant }),
  z.object({
    ...held, kind: z.literal('stay'), roomTypeId: id, checkIn: date, checkOut: date, rooms: z.number().int().positive(),
    guests: z.number().int().positive().default(1), ratePlanId: id.nullable().default(null), quoteId: id.nullable().default(null),
  }),
]);
/** The calendar fields a PUT set (exactly those given). */
const calendarChange = z.object({
  price: amount.optional(), minStay: z.number().int().positive().optional(), maxStay: z.number().int().positive().optional(),
  closedToArrival: z.boolean().optional(), closedToDeparture: z.boolean().optional(), stopSell: z.boolean().optional(),
});
/** What a change replaces: a car's period and car, or a stay's terms (booking.changed's `before` and `after`). */
const carTerms = z.object({ carId: id, from: instant, to: instant });
const stayTerms = z.object({
  roomTypeId: id, checkIn: date, checkOut: date, rooms: z.number().int().positive(), guests: z.number().int().positive(), ratePlanId: id.nullable(),
});
/** depositDelta = new deposit − old (negative: a CONFIRMED booking is refunded the difference, refundAmount). */
const changed = {
  bookingId: id, customerId: id, status: z.enum(['HOLD', 'CONFIRMED', 'ON_TRIP']), changedBy: z.string(),
  depositAmount: amount, depositDelta: z.number().int(), totalAmount: amount.nullable(), refundAmount: amount, currency,
};
const bookingChanged = z.discriminatedUnion('kind', [
  z.object({ ...changed, kind: z.literal('car'), before: carTerms, after: carTerms }),
  z.object({ ...changed, kind: z.literal('stay'), before: stayTerms, after: stayTerms }),
]);
const tripStep = z.object({ bookingId: id, customerId: id, by: z.string() });
const refundSettled = z.object({ bookingId: id, refundId: id, amount, currency });

const byBooking = (p: { bookingId: number }) => p.bookingId;

/** A payload schema and the Kafka message key it is published under (per key, events stay in order). */
const define = <S extends z.ZodTypeAny>(payload: S, key: (p: z.infer<S>) => number) => ({ payload, key });

export const EVENTS = {
  'booking.held': define(bookingHeld, byBooking),
  'booking.confirmed': define(
    z.object({ bookingId: id, customerId: id, paymentId: id, amount, currency }),
    byBooking,
  ),
  'booking.expired': define(z.object({ bookingId: id, customerId: id, kind: z.enum(['car', 'stay']) }), byBooking),
  'booking.cancelled': define(
    z.object({ bookingId: id, customerId: id, cancelledBy: z.string(), reason: z.string().nullable(), refundAmount: amount, currency }),
    byBooking,
  ),
  'booking.started': define(tripStep, byBooking),
  'booking.completed': define(tripStep, byBooking),
  'booking.changed': define(bookingChanged, byBooking),
  'refund.requested': define(
    z.object({ bookingId: id, refundId: id, amount, currency, paymentIntentId: z.string(), reason: z.string() }),
    byBooking,
  ),
  'refund.succeeded': define(refundSettled, byBooking),
  'refund.failed': define(refundSettled, byBooking),
  'inventory.adjusted': define(
    z.object({
      bookingId: z.null(), roomTypeId: id, from: date, to: date, sellable: z.number().int().nonnegative(), reason: z.string(), actor: z.string(),
    }),
    (p) => p.roomTypeId,
  ),
  'rate.updated': define(
    z.object({
      bookingId: z.null(), ratePlanId: id, roomTypeId: id, currency, from: date, to: date, changes: calendarChange, reason: z.string(), actor: z.string(),
    }),
    (p) => p.ratePlanId,
  ),
} satisfies Record<EventType, ReturnType<typeof define>>;

export type EventPayload<T extends EventType> = z.infer<(typeof EVENTS)[T]['payload']>;

/** The message key of an event: the bookingId (roomTypeId for inventory.adjusted, ratePlanId for rate.updated). */
export function messageKeyOf<T extends EventType>(type: T, payload: EventPayload<T>): number {
  return (EVENTS[type].key as (p: EventPayload<T>) => number)(payload);
}

/** An event as stored in the outbox and published: the envelope and the payload of its type. */
export type PublishedEvent = {
  [T in EventType]: { eventId: string; type: T; occurredAt: string } & EventPayload<T>;
}[EventType];

const envelope = z.object({ eventId: z.string().uuid(), type: z.string(), occurredAt: instant });
const isEventType = (t: string): t is EventType => Object.hasOwn(EVENTS, t);

/**
 * Parses a stored event by its type; null for a type this version does not know (written by a newer one).
 * Throws (a ZodError) when a known event does not match its schema.
 */
export function parseEvent(type: string, value: unknown): PublishedEvent | null {
  if (!isEventType(type)) return null;
  const head = envelope.parse(value);
  const payload = EVENTS[type].payload.parse(value) as object;
  return { ...head, ...payload, type } as PublishedEvent;
}
