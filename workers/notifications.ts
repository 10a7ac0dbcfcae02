import { deliverNotification, webhookNotificationProvider, type NotificationProvider } from '../shared/usecases/notifications.js';
import { config } from '../shared/config.js';
import { isEntry } from '../shared/process.js';
import { NOTIFICATIONS_QUEUE } from '../shared/queues/registry.js';
import { runWorkerProcess, type WorkerDefinition } from './runner.js';

export function notificationsWorker(provider: NotificationProvider): WorkerDefinition<typeof NOTIFICATIONS_QUEUE> {
  return {
    queue: NOTIFICATIONS_QUEUE,
    concurrency: 20,
    processor: (deps, data) => deliverNotification(deps.db, provider, data),
  };
}

if (isEntry(import.meta.url)) await runWorkerProcess(notificationsWorker(webhookNotificationProvider(config().NOTIFY_WEBHOOK_URL)));
