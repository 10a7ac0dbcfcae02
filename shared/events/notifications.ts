import type { NotifiedEvent } from './topics.js';

/** What the customer is told of each notified event (sms and push alike). */
export const notificationBody: Record<NotifiedEvent, (bookingId: number) => string> = {
  'booking.confirmed': (id) => `Booking ${id} is confirmed.`,
  'booking.expired': (id) => `Your hold ${id} expired before payment.`,
  'booking.cancelled': (id) => `Booking ${id} was cancelled.`,
  'booking.changed': (id) => `Booking ${id} was changed.`,
  'refund.succeeded': (id) => `Your refund for booking ${id} was paid.`,
};
