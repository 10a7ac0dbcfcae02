import type { Middleware } from 'koa';
import { BackendTerminatedError, BackendTerminatedUnexpectedlyError, ConnectionError } from 'slonik';
import { DomainError, type ErrorCode } from '../../shared/domain/errors.js';
import { DatabaseUnavailableError, isConnectionSqlState } from '../../shared/db/prepared.js';
import { logger } from '../../shared/logger.js';
import type { ApiState } from '../context.js';

/** Each error code's HTTP status (413 is VALIDATION's own case, below); the OpenAPI document reads it too. */
export const ERROR_STATUS: Record<ErrorCode, number> = {
  VALIDATION: 400,
  UNAUTHENTICATED: 401,
  INVALID_SIGNATURE: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CAR_UNAVAILABLE: 409,
  SOLD_OUT: 409,
  INVALID_STATE: 409,
  IDEMPOTENCY_IN_PROGRESS: 409,
  ALREADY_EXISTS: 409,
  INVENTORY_BELOW_COMMITTED: 409,
  STAY_RESTRICTED: 409,
  PRICE_CHANGED: 409,
  QUOTE_EXPIRED: 409,
  DEPOSIT_INCREASE: 409,
  IDEMPOTENCY_KEY_REUSED: 422,
  RATE_LIMITED: 429,
  INTERNAL: 500,
  UNAVAILABLE: 503,
};

/** The one VALIDATION failure with its own status: 413. */
export class BodyTooLargeError extends DomainError {
  override name = 'BodyTooLargeError';
  constructor() {
    super('VALIDATION', 'request body is over 1 MiB', { field: 'body' });
  }
}

export const httpStatusOf = (e: DomainError) => (e instanceof BodyTooLargeError ? 413 : ERROR_STATUS[e.code]);

export function errorBody(e: DomainError) {
  return { error: { code: e.code, message: e.message, ...(e.details === undefined ? {} : { details: e.details }) } };
}

/** The database (or another dependency) could not be reached or dropped the connection: 503, not 500. */
const isUnavailable = (e: unknown) =>
  e instanceof ConnectionError ||
  e instanceof DatabaseUnavailableError ||
  e instanceof BackendTerminatedError ||
  e instanceof BackendTerminatedUnexpectedlyError ||
  // Socket errors node-postgres throws raw when the connection is refused, or reset / cut under a query
  // (pg_terminate_backend, a failover): seen by `npm run chaos` as a 500 INTERNAL.
  ['ECONNREFUSED', 'ECONNRESET', 'EPIPE'].includes((e as { code?: string })?.code ?? '') ||
  // A backend terminated or not yet accepting connections (57P01–57P03, class 08), however it was wrapped.
  isConnectionSqlState(sqlStateOf(e) ?? '');

/** The SQLSTATE of a PostgreSQL error, whether node-postgres threw it or slonik wrapped it (as its `cause`). */
export function sqlStateOf(e: unknown): string | undefined {
  for (let x = e, depth = 0; x && typeof x === 'object' && depth < 5; x = (x as { cause?: unknown }).cause, depth++) {
    const code = (x as { code?: unknown }).code;
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code;
  }
  return undefined;
}

/**
 * PostgreSQL refused a value the request carried (class 22, data exception: a date or number out of range (22008,
 * 22003), text that is not a valid value (22P02, 22007), a NUL byte (22021); 54000, a value too big for an index):
 * the input was malformed, so 400. The schemas refuse what they can name first; this is the net under them.
 */
export const isBadInputFromDatabase = (e: unknown): boolean => {
  const state = sqlStateOf(e);
  return state !== undefined && (state.startsWith('22') || state === '54000');
};

/** The one place that turns errors into the contract's error shape and status. */
export const errors: Middleware<ApiState> = async (ctx, next) => {
  try {
    await next();
    if (ctx.status === 404 && ctx.body === undefined) {
      throw new DomainError('NOT_FOUND', 'no such route');
    }
  } catch (err) {
    let e: DomainError;
    if (err instanceof DomainError) e = err;
    else if (isBadInputFromDatabase(err)) {
      logger.warn({ err, requestId: ctx.state.requestId, path: ctx.path }, 'the database refused a value of the request');
      e = new DomainError('VALIDATION', 'a value of the request is out of range or malformed', { field: ctx.method === 'GET' ? 'query' : 'body', sqlState: sqlStateOf(err) });
    } else if (isUnavailable(err)) {
      logger.warn({ err, requestId: ctx.state.requestId }, 'dependency unavailable');
      e = new DomainError('UNAVAILABLE', 'a dependency is unavailable; try again');
    } else {
      logger.error({ err, requestId: ctx.state.requestId, path: ctx.path }, 'unhandled error');
      e = new DomainError('INTERNAL', 'internal error');
    }
    ctx.status = httpStatusOf(e);
    ctx.body = errorBody(e);
    if (e.code === 'RATE_LIMITED') ctx.set('Retry-After', String((e.details as { retryAfterSeconds: number }).retryAfterSeconds));
  }
};
