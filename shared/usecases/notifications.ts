import type { Deps } from './deps.js';
import { backoffMs } from '../domain/backoff.js';
import { inWords, type JobOutcome } from '../domain/jobs.js';
import type { Channel } from '../domain/notifications.js';
import { claimNotification, notificationLeaseState, releaseNotification, settleNotification } from '../db/notifications.js';
import { notifierOf, type Notifier } from '../notify/notifier.js';
import { QUEUES } from '../queues/registry.js';
import { unclaimedOutcome } from './unclaimed.js';

/** `{eventId}:{channel}`: the same for every resend of one notification, so the gateway can drop a repeat. */
export const notificationKey = (n: { eventId: string; channel: string }) => `${n.eventId}:${n.channel}`;

export interface NotificationJob {
  eventId: string;
  channel: Channel;
  gen: number;
}

/**
 * The notification job (notify-{eventId}-{channel}-g{gen}): sends once per (event, channel) and settles the row.
 * Only the claim's holder sends it, and it is settled right after the gateway took it; a process killed between
 * the two sends it again after the lease, with the same Idempotency-Key. Never marked sent without being sent:
 * with NOTIFY_WEBHOOK_URL=none it is settled as `skipped`, in development without a URL as `log`.
 */
export async function runNotificationJob(deps: Deps, job: NotificationJob, notifier: Notifier = notifierOf(deps.config)): Promise<JobOutcome> {
  const claim = await claimNotification(deps.db, job, job.gen, deps.config.LEASE_S * 1000);
  if (!claim) return unclaimedOutcome(await notificationLeaseState(deps.db, job), job.gen, deps.clock.now());
  const { eventId, eventType, bookingId, channel, recipient, body } = claim;
  try {
    await notifier.send({ eventId, eventType, bookingId, channel, recipient, body }, notificationKey(claim));
  } catch (e) {
    const error = String((e as Error)?.message ?? e).slice(0, 500);
    const inMs = backoffMs(claim.attempts, QUEUES.notifications.backoff);
    await releaseNotification(deps.db, claim, error, inMs);
    return { kind: 'retry', inMs, error, log: `attempt ${claim.attempts}: ${error}; next attempt ${inWords(inMs)}` };
  }
  await settleNotification(deps.db, claim, notifier.delivery);
  return { kind: 'done', result: notifier.delivery, log: `attempt ${claim.attempts}: ${notifier.delivery === 'webhook' ? 'sent' : notifier.delivery}` };
}
