export const BOOKING_STATUSES = ['HOLD', 'CONFIRMED', 'ON_TRIP', 'COMPLETED', 'EXPIRED', 'CANCELLED'] as const;
export type BookingStatus = (typeof BOOKING_STATUSES)[number];

export type BookingAction = 'confirm' | 'expire' | 'cancel' | 'pickup' | 'return';

const transitions: Record<BookingAction, { from: readonly BookingStatus[]; to: BookingStatus }> = {
  confirm: { from: ['HOLD'], to: 'CONFIRMED' },
  expire: { from: ['HOLD'], to: 'EXPIRED' },
  cancel: { from: ['HOLD', 'CONFIRMED'], to: 'CANCELLED' },
  pickup: { from: ['CONFIRMED'], to: 'ON_TRIP' },
  return: { from: ['ON_TRIP'], to: 'COMPLETED' },
};

/** Target status of `action` from `status`, or null when the state machine forbids it. */
export function nextStatus(status: BookingStatus, action: BookingAction): BookingStatus | null {
  const t = transitions[action];
  return t.from.includes(status) ? t.to : null;
}

