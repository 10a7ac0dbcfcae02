// The channels every notified event goes out on (one notification row, and one job, per event and channel).
export const NOTIFY_CHANNELS = ['sms', 'push'] as const;
export type Channel = (typeof NOTIFY_CHANNELS)[number];

/** How a notification was settled (notification.delivery): POSTed, written to the log, or recorded as skipped. */
export type Delivery = 'webhook' | 'log' | 'skipped';
