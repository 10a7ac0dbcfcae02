// The event types, each its own Kafka topic. Adding one here makes shared/events/payloads.ts ask for its
// payload schema and message key (rate.updated joins with rate plans: key ratePlanId).
export const EVENT_TYPES = [
  'booking.held',
  'booking.confirmed',
  'booking.expired',
  'booking.cancelled',
  'booking.started',
  'booking.completed',
  'booking.changed',
  'refund.requested',
  'refund.succeeded',
  'refund.failed',
  'inventory.adjusted',
  'rate.updated',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export const topicName = (prefix: string, type: string) => `${prefix}${type}`;

/** Events that customers hear about, on each channel of shared/domain/notifications.ts (the `notify` effect). */
export const NOTIFIED_EVENTS = ['booking.confirmed', 'booking.expired', 'booking.cancelled', 'booking.changed', 'refund.succeeded'] as const satisfies readonly EventType[];
export type NotifiedEvent = (typeof NOTIFIED_EVENTS)[number];

export const isNotified = (type: EventType): type is NotifiedEvent => (NOTIFIED_EVENTS as readonly EventType[]).includes(type);
