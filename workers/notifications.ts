import { claimNotifications, deliverNotification, webhookNotificationProvider, type NotificationProvider } from '../shared/usecases/notifications.js';
import { isEntry } from '../shared/process.js';
import { runLoopProcess } from './loop-process.js';
import type { Deps } from '../shared/usecases/deps.js';
import { startDueLoop } from './due-loop.js';

// The notifications worker: a due loop over unsent notification rows (written with their events), no BullMQ queue.
const BATCH = 20;

export function startNotificationLoop(deps: Pick<Deps, 'db'>, provider: NotificationProvider) {
  return startDueLoop({
    name: 'notifications', job: 'notify', batch: BATCH, idleMaxMs: 500,
    claim: (n) => claimNotifications(deps.db, n),
    work: (n) => deliverNotification(deps.db, provider, n),
  });
}

if (isEntry(import.meta.url)) {
  await runLoopProcess('notifications', (deps, config) => startNotificationLoop(deps, webhookNotificationProvider(config.NOTIFY_WEBHOOK_URL)));
}
