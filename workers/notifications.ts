import { z } from 'zod';
import { deliverNotification, webhookNotificationProvider, type NotificationProvider } from '../shared/usecases/notifications.js';
import { NOTIFY_CHANNELS } from '../shared/events/topics.js';
import { isEntry, runWorkerProcess, type WorkerDefinition } from './runner.js';

export const NOTIFICATIONS_QUEUE = 'notifications';
export const notificationPayload = z.object({
  eventId: z.string().uuid(),
  eventType: z.string(),
  bookingId: z.number().int().positive(),
  channel: z.enum(NOTIFY_CHANNELS),
});

export const notificationJobId = (eventId: string, channel: string) => `notify-${eventId}-${channel}`;

export function notificationsWorker(provider: NotificationProvider): WorkerDefinition<typeof notificationPayload> {
  return {
    queue: NOTIFICATIONS_QUEUE,
    payload: notificationPayload,
    concurrency: 20,
    defaultJobOptions: { removeOnComplete: { age: 3600 }, removeOnFail: { age: 7 * 86_400 }, attempts: 10, backoff: { type: 'exponential', delay: 1000 } },
    processor: (deps, data) => deliverNotification(deps.db, provider, data),
  };
}

if (isEntry(import.meta.url)) {
  const { parseConfig } = await import('../shared/config.js');
  await runWorkerProcess(notificationsWorker(webhookNotificationProvider(parseConfig().NOTIFY_WEBHOOK_URL)), []);
}
