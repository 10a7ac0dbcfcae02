import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { backoffMs, JOB_RETRY } from '../../shared/domain/backoff.js';
import { JOB_KINDS, OBLIGATION_KINDS, jobIdOf, type JobRequest } from '../../shared/domain/jobs.js';
import { QUEUES, SCHEDULES, jobOptions, kindsOf, KEEP_COMPLETED, KEEP_FAILED } from '../../shared/queues/registry.js';
import { bullJobOf } from '../../shared/queues/producer.js';
import { backoffStrategy, RetryLater } from '../../workers/lib/job-worker.js';
import { recheckDelayMs } from '../../shared/usecases/expiry.js';
import { readProcfile } from '../../scripts/procfile.js';
import path from 'node:path';

const request = fc.oneof(
  fc.record({ kind: fc.constantFrom('expiry' as const, 'payment-checks' as const, 'intent-cancellations' as const), bookingId: fc.integer({ min: 1 }), gen: fc.nat() }),
  fc.record({ kind: fc.constant('refunds' as const), bookingId: fc.integer({ min: 1 }), refundId: fc.integer({ min: 1 }), gen: fc.nat() }),
  fc.record({ kind: fc.constant('notifications' as const), bookingId: fc.integer({ min: 1 }), eventId: fc.uuid(), channel: fc.constantFrom('sms' as const, 'push' as const), gen: fc.nat() }),
);

describe('job ids', () => {
  it('carry kind, key and gen: never an integer, never a `:`, and distinct for distinct (kind, key, gen)', () => {
    expect(jobIdOf({ kind: 'refunds', bookingId: 7, refundId: 42, gen: 0 })).toBe('refund-42-g0');
    expect(jobIdOf({ kind: 'expiry', bookingId: 7, gen: 3 })).toBe('expire-7-g3');
    expect(jobIdOf({ kind: 'notifications', bookingId: 7, eventId: 'e', channel: 'sms', gen: 1 })).toBe('notify-e-sms-g1');
    fc.assert(fc.property(request, request, (a, b) => {
      const [x, y] = [jobIdOf(a as JobRequest), jobIdOf(b as JobRequest)];
      expect(x).not.toMatch(/^\d+$|:/);
      const key = (r: Record<string, unknown>) => JSON.stringify([r.kind, r.kind === 'refunds' ? r.refundId : r.kind === 'notifications' ? [r.eventId, r.channel] : r.bookingId, r.gen]);
      expect(x === y).toBe(key(a) === key(b));
    }));
  });

  it('a job\'s data names its booking, its gen and when it is due; its delay is the time until then', () => {
    const at = Date.now() + 5000;
    const j = bullJobOf({ kind: 'refunds', bookingId: 9, refundId: 3, gen: 2, runAt: new Date(at) }, at - 5000);
    expect(j).toMatchObject({ name: 'refund', data: { bookingId: 9, refundId: 3, gen: 2, dueAt: at }, opts: { jobId: 'refund-3-g2', delay: 5000 } });
    expect(QUEUES.refunds.payload.safeParse(j.data).success).toBe(true);
  });
});

describe('the one backoff', () => {
  it('1 s doubling, capped at 1 h for jobs; the custom strategy uses the use case\'s delay', () => {
    expect([1, 2, 3, 4].map((n) => backoffMs(n, JOB_RETRY))).toEqual([1000, 2000, 4000, 8000]);
    expect(backoffMs(13, JOB_RETRY)).toBe(3_600_000);
    expect(backoffMs(10_000, JOB_RETRY)).toBe(3_600_000);
    fc.assert(fc.property(fc.integer({ min: 1, max: 5000 }), (n) => backoffMs(n + 1, JOB_RETRY) >= backoffMs(n, JOB_RETRY)));
    const s = backoffStrategy(QUEUES.refunds);
    expect(s(3, 'obligation', new RetryLater(1234, 'x'))).toBe(1234);
    expect(s(3, 'obligation', new Error('db down'))).toBe(4000);
  });

  it('payment re-checks: 1 s, growing with the time past expiry, at most 30 s', () => {
    expect(recheckDelayMs(0)).toBe(1000);
    expect(recheckDelayMs(3_000)).toBe(4000);
    expect(recheckDelayMs(600_000)).toBe(30_000);
  });
});

describe('the queue registry', () => {
  it('the contract\'s six queues, hash-tagged, each worked by a Procfile process, with attempts, backoff ≤ 1 h and retention', () => {
    expect(JOB_KINDS).toEqual(['expiry', 'payment-checks', 'intent-cancellations', 'refunds', 'notifications', 'maintenance']);
    const procfile = new Set(readProcfile(path.resolve(import.meta.dirname, '../../Procfile')).map((p) => p.name));
    for (const k of JOB_KINDS) {
      const q = QUEUES[k];
      expect(q.name).toBe(`{${k}}`);
      expect(procfile.has(q.process), k).toBe(true);
      expect(q.displayName && q.description, k).toBeTruthy();
      expect(q.backoff.capMs).toBeLessThanOrEqual(3_600_000);
      expect(jobOptions(k)).toMatchObject({ attempts: q.attempts, removeOnComplete: KEEP_COMPLETED, removeOnFail: KEEP_FAILED });
    }
    expect(kindsOf('expiry')).toEqual(['expiry', 'payment-checks', 'intent-cancellations']);
    expect(OBLIGATION_KINDS.filter((k) => QUEUES[k].providerLimited)).toEqual(['payment-checks', 'intent-cancellations', 'refunds']);
    // Retention: completed the last 1,000 per queue, failed at least 7 days.
    expect(KEEP_COMPLETED).toEqual({ count: 1000 });
    expect(KEEP_FAILED.age).toBeGreaterThanOrEqual(7 * 86_400);
    // Until it settles: attempts at the 1 h cap cover weeks for refunds and notifications.
    expect(QUEUES.refunds.attempts * 3600).toBeGreaterThan(30 * 86_400);
    // Lost work noticed within the contract's deadlines: expiry ≤ 1 s, the rest ≤ 10 s.
    for (const k of OBLIGATION_KINDS) {
      const { everyMs, graceMs } = QUEUES[k].reconcile;
      expect(everyMs + graceMs, k).toBeLessThanOrEqual(k === 'expiry' || k === 'payment-checks' ? 1000 : 10_000);
    }
    expect(Object.keys(SCHEDULES).sort()).toEqual(['idempotency-purge', 'quote-purge', 'retention']);
  });
});
