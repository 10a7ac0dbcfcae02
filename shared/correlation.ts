import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash, randomBytes } from 'node:crypto';

// The request id a piece of work belongs to, carried from the HTTP request (or the job, or the outbox row)
// through everything it causes: log lines, outbox rows, job data, Kafka headers. Node's AsyncLocalStorage
// keeps it without threading a parameter through the use cases, which know nothing of it.

export interface Correlation {
  requestId: string;
  /** W3C trace context (`00-<trace-id>-<parent-id>-<flags>`): the caller's trace, or one derived from the request id. */
  traceparent: string;
}

const storage = new AsyncLocalStorage<Correlation>();

/** The correlation of the work running now, if any. */
export const currentCorrelation = (): Correlation | undefined => storage.getStore();

/** Runs `fn` as part of `c`'s story (as is, when there is none). */
export const withCorrelation = <T>(c: Correlation | undefined, fn: () => T): T => (c ? storage.run(c, fn) : fn());

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const zeros = (hex: string) => /^0+$/.test(hex);

/** A valid W3C traceparent (version 00, non-zero ids), or null. */
export function parseTraceparent(value: string | undefined): { traceId: string; flags: string } | null {
  const m = value?.trim().toLowerCase().match(TRACEPARENT);
  if (!m || zeros(m[1]!) || zeros(m[2]!)) return null;
  return { traceId: m[1]!, flags: m[3]! };
}

/**
 * The traceparent this service passes on: the incoming trace (when valid) with a new parent id, else a trace
 * whose id is derived from the request id (a UUID's own 32 hex digits, else a SHA-256 prefix), so the
 * request id and the trace id find each other.
 */
export function traceparentFor(requestId: string, incoming?: string): string {
  const parent = parseTraceparent(incoming);
  const uuidHex = UUID.test(requestId) ? requestId.replace(/-/g, '').toLowerCase() : null;
  const traceId = parent?.traceId
    ?? (uuidHex && !zeros(uuidHex) ? uuidHex : createHash('sha256').update(requestId).digest('hex').slice(0, 32));
  return `00-${traceId}-${parentId()}-${parent?.flags ?? '01'}`;
}

/** Random bytes drawn 4 KiB at a time (as crypto.randomUUID does): one getrandom call per 512 parent ids, not one each. */
let pool = Buffer.alloc(0);
let at = 0;
function parentId(): string {
  for (;;) {
    if (at + 8 > pool.length) {
      pool = randomBytes(4096);
      at = 0;
    }
    const hex = pool.toString('hex', at, (at += 8));
    if (!zeros(hex)) return hex; // an all-zero parent id is invalid (W3C)
  }
}
