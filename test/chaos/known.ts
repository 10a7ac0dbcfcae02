/**
 * Invariants the short chaos run (short.test.ts) is known to find violated on today's main, each with the
 * regression in test/regressions/known-bugs.test.ts that reproduces it deterministically. Their assertions in the
 * chaos test are skipped while listed here: whoever merges the fix removes the name (and turns the regression on).
 */
export const KNOWN_VIOLATED: Record<string, string> = {
  // Issue 8 item 4: a hold that expires (or is cancelled) unpaid leaves its payment intent payable at the provider.
  'intents-cancelled': 'known-bugs: "an expired hold leaves its payment intent payable"',
  // Issue 8 item 1: after FLUSHALL / a Redis restart, holds whose delayed job was queued never expire (and the sweep's
  // scheduler is gone until an expiry worker restarts). Also skips the "quiet" assertion (holds never settle).
  'holds-expire': 'known-bugs: "Redis loses its data: a queued hold still expires"',
  // Issue 8 item 2: a 401/409/429 from the provider on POST /v1/refunds marks the refund FAILED for good (seen when
  // an injected 429 rule meets a refund).
  'refunds-settled': 'known-bugs: "a refund answered 429 once is not FAILED for good"',
  // Found by chaos (pg_terminate_backend): the notification is sent inside the delivery transaction; when the
  // COMMIT fails after the send, the retried job sends it again, with nothing for the receiver to deduplicate on.
  'notifications-once': 'known-bugs: "a notification whose transaction fails after the send is not sent twice"',
  // Not an invariant: the run's 5xx count. A pooled PostgreSQL connection reset (pg_terminate_backend, ECONNRESET)
  // answers 500 INTERNAL instead of 503 UNAVAILABLE.
  '5xx': 'known-bugs: "PostgreSQL connections reset under the API answer 503, never 500"',
};
