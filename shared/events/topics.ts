export const EVENT_TYPES = [
  'booking.held',
  'booking.confirmed',
  'booking.expired',
  'booking.cancelled',
  'booking.started',
  'booking.completed',
  'refund.requested',
  'refund.succeeded',
  'refund.failed',
  'inventory.adjusted',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export const topicName = (prefix: string, type: EventType) => `${prefix}${type}`;

/** Events that customers hear about, on each of these channels. */
export const NOTIFIED_EVENTS: readonly EventType[] = ['booking.confirmed', 'booking.expired', 'booking.cancelled', 'refund.succeeded'];
export const NOTIFY_CHANNELS = ['sms', 'push'] as const;
