import { parseConfig } from '../../shared/config.js';
import { redisClient } from '../../shared/redis.js';
import type { Invariant } from './types.js';

// Every owed obligation has a live job (CONTRACT "Jobs": bull-board shows every owed job again within 10 s of Redis
// losing it): each open row — a HOLD (its expiry job, or its payment check once past holdExpiresAt with pay
// asked), a PENDING refund, an unsettled notification, an open intent cancellation — has its job, named by the
// row's generation, in Redis (unless the row is younger than GRACE_S), and that job has not ended (unless the row
// came due less than GRACE_S ago: the reconciler re-arms a job that ended while its row is owed once the row is
// overdue). The SQL is written here again on purpose: the checker does not reuse the reconciler's queries.

export const JOBS_GRACE_S = 10;

interface Owed {
  queue: string;
  id: string;
  what: string;
  /** Created more than GRACE_S ago (a missing job counts). */
  old: boolean;
  /** Due more than GRACE_S ago (an ended job counts). */
  overdue: boolean;
}

const OWED = `
  SELECT CASE WHEN pay_requested_at IS NOT NULL AND hold_expires_at <= now() THEN 'payment-checks' ELSE 'expiry' END AS queue,
         CASE WHEN pay_requested_at IS NOT NULL AND hold_expires_at <= now() THEN 'paycheck-' ELSE 'expire-' END || id || '-g' || job_gen AS id,
         'booking ' || id || ' (HOLD)' AS what,
         created_at < now() - make_interval(secs => $1) AS old, next_expiry_check_at < now() - make_interval(secs => $1) AS overdue
  FROM booking WHERE status = 'HOLD'
  UNION ALL
  SELECT 'refunds', 'refund-' || id || '-g' || job_gen, 'refund ' || id || ' (PENDING)',
         created_at < now() - make_interval(secs => $1), next_attempt_at < now() - make_interval(secs => $1)
  FROM refund WHERE status = 'PENDING'
  UNION ALL
  SELECT 'notifications', 'notify-' || event_id || '-' || channel || '-g' || job_gen, 'notification ' || event_id || '/' || channel,
         created_at < now() - make_interval(secs => $1), next_attempt_at < now() - make_interval(secs => $1)
  FROM notification WHERE sent_at IS NULL
  UNION ALL
  SELECT 'intent-cancellations', 'cancel-intents-' || booking_id || '-g' || job_gen, 'intent cancellation of booking ' || booking_id,
         created_at < now() - make_interval(secs => $1), next_attempt_at < now() - make_interval(secs => $1)
  FROM intent_cancellation WHERE done_at IS NULL`;

export const jobsArmed: Invariant = {
  name: 'jobs-armed',
  async check({ query, redis }) {
    const owed = await query<Owed>(OWED, [JOBS_GRACE_S]);
    if (!redis) return { checked: 0, violations: [], note: `skipped: REDIS_URL not given (${owed.length} obligations unchecked)` };
    const client = redisClient(parseConfig({ REDIS_URL: redis.url, REDIS_CLUSTER_NODES: redis.clusterNodes ?? '' }), 'reconciler', { lazyConnect: true });
    client.on('error', () => {});
    try {
      await client.connect();
      const violations: string[] = [];
      for (const o of owed) {
        const [timestamp, finishedOn] = await client.hmget(`${redis.prefix}:{${o.queue}}:${o.id}`, 'timestamp', 'finishedOn');
        if (timestamp === null && o.old) violations.push(`${o.what}: no job ${o.id} in {${o.queue}}`);
        else if (timestamp !== null && finishedOn !== null && o.overdue) violations.push(`${o.what}: its job ${o.id} has ended while the work is still owed`);
      }
      return { checked: owed.length, violations, note: `grace ${JOBS_GRACE_S} s` };
    } finally {
      client.disconnect();
    }
  },
};
