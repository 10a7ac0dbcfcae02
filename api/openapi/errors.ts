import { z } from 'zod';
import type { ErrorCode } from '../../shared/domain/errors.js';
import { ERROR_STATUS } from '../middleware/errors.js';

/** What each error code means to a client (the contract's table); the compiler asks for a new code's line. */
export const ERROR_MEANING: Record<ErrorCode, string> = {
  VALIDATION: 'the body, query or a header fails validation (`details.field` names it)',
  UNAUTHENTICATED: 'no, bad or expired bearer token',
  INVALID_SIGNATURE: 'webhook signature missing, wrong, or its timestamp outside 300 s',
  FORBIDDEN: 'authenticated, but the role may not do this',
  NOT_FOUND: 'unknown id, or a booking that is not yours',
  CAR_UNAVAILABLE: "the car's calendar (with its turnaround buffer) overlaps",
  SOLD_OUT: 'some night of the stay lacks the rooms asked for',
  INVALID_STATE: "the booking's status does not allow the transition",
  IDEMPOTENCY_IN_PROGRESS: 'the same Idempotency-Key is being processed right now',
  ALREADY_EXISTS: 'a unique field is taken (e.g. the car plate)',
  INVENTORY_BELOW_COMMITTED: 'sellable would drop below held + confirmed',
  STAY_RESTRICTED: "the rate plan's calendar forbids this stay (`details.reason`, `details.date`)",
  PRICE_CHANGED: "the quote's total is no longer the price (`details.quotedTotal`, `details.currentTotal`)",
  QUOTE_EXPIRED: 'the quote is past its `validUntil`',
  DEPOSIT_INCREASE: 'a change of a CONFIRMED booking would raise its deposit (`details.depositAmount`, `details.newDepositAmount`)',
  IDEMPOTENCY_KEY_REUSED: 'the same Idempotency-Key came with a different body',
  RATE_LIMITED: 'hold limit reached; retry after `Retry-After` seconds',
  INTERNAL: 'a bug; the message is generic, details are in the logs',
  UNAVAILABLE: 'a dependency this request needs is down; try again',
};

export const ERROR_CODES = Object.keys(ERROR_STATUS) as [ErrorCode, ...ErrorCode[]];

/** The contract's error body: every non-2xx answer has it. */
export const errorSchema = z.object({
  error: z.object({
    code: z.enum(ERROR_CODES).describe('Machine-readable; the statuses list which codes each operation answers'),
    message: z.string().describe('Human-readable'),
    details: z.record(z.unknown()).optional().describe('e.g. `field` for VALIDATION, `retryAfterSeconds` for RATE_LIMITED'),
  }),
});

/** The statuses (with their codes) an operation answers when it may refuse with `codes`; 413 is a too-large body. */
export function errorStatuses(codes: Iterable<ErrorCode>, bodyTooLarge: boolean): Map<number, ErrorCode[]> {
  const byStatus = new Map<number, ErrorCode[]>();
  const add = (status: number, code: ErrorCode) => {
    const list = byStatus.get(status) ?? [];
    if (!list.includes(code)) list.push(code);
    byStatus.set(status, list);
  };
  for (const code of codes) add(ERROR_STATUS[code], code);
  if (bodyTooLarge) add(413, 'VALIDATION');
  return new Map([...byStatus].sort(([a], [b]) => a - b));
}

/** One response description naming each code and what it means. */
export const describeCodes = (status: number, codes: readonly ErrorCode[]) =>
  status === 413
    ? '`VALIDATION`: the request body is over 1 MiB (`details.field` = `body`)'
    : codes.map((c) => `\`${c}\`: ${ERROR_MEANING[c]}`).join('; ');
