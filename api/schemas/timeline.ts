import { z } from 'zod';
import { queryInt } from './common.js';
import { TIMELINE_KINDS } from '../../shared/domain/timeline.js';

/** GET /bookings/{id}/timeline: a page, oldest first; `cursor` is a previous page's `nextCursor`. */
export const timelineQuery = z.object({
  limit: queryInt(100, 1, 1000),
  cursor: z.string().min(1).max(200_000).optional().describe("The previous page's nextCursor, as it came"),
});

const entry = z.object({
  at: z.string().datetime({ offset: true, precision: 6 }).describe('When it was recorded (UTC, to the microsecond)'),
  kind: z.enum(TIMELINE_KINDS),
  type: z.string().describe(
    'event: the topic; payment: `received`; refund: `requested`; intent: `cancellation`; notification: the channel (`sms`, `push`)'),
  detail: z.record(z.unknown()).describe(
    'event: its payload (eventId, occurredAt, …); payment: paymentId, amount, currency, outcome, paymentIntentId, providerTxnId; '
    + 'refund: refundId, amount, currency, reason, status, attempts, lastError, providerRefundId; intent: status (pending, done), '
    + 'attempts, lastError, doneAt (reopened: true when a settled cancellation was owed again); notification: status (sent, skipped), '
    + 'delivery (webhook, log, skipped), eventId, eventType, attempts. Never a secret or card data.'),
}).strict();

/** Everything recorded about a booking, oldest first by (at, kind), a page at a time. */
export const timelineAnswer = z.object({
  entries: z.array(entry),
  nextCursor: z.string().nullable().describe('Pass as `cursor` for the next page; null on the last page'),
}).strict();
