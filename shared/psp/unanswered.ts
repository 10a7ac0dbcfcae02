import { z } from 'zod';

// What a provider call that did not succeed leaves behind (shared/psp/client.ts): a request that never left, one the
// provider answered with a failure, or one that left and got no answer (which the provider may still carry out).

/** The provider answered 5xx (retried by the client's policy as a transient failure). */
export class ServerError extends Error {
  override name = 'ServerError';
  constructor(readonly status: number) {
    super(`payment provider answered ${status}`);
  }
}

/** A request the caller's `beforeSend` stopped: it never left, nothing was asked of the provider. */
export class RequestNotSent extends Error {
  override name = 'RequestNotSent';
}

/**
 * Awaits a request's `beforeSend`, run after the rate gate, right before the request leaves: whatever stops it (its
 * own RequestNotSent, a database error too) becomes RequestNotSent, and the request does not leave.
 */
export async function unlessStopped(beforeSend?: () => Promise<void>): Promise<void> {
  try {
    await beforeSend?.();
  } catch (e) {
    throw e instanceof RequestNotSent ? e : new RequestNotSent(String((e as Error)?.message ?? e), { cause: e });
  }
}

/**
 * Whether an unreachable call's `cause` means its request left and no answer came back (a timeout, a connection lost
 * mid-request), so the provider may carry it out later. Not so for an answer (a 5xx, an unreadable body: the
 * provider was done with it) or a connection refused (nothing left).
 */
export function unansweredCause(cause: unknown): boolean {
  const code = (cause as { cause?: { code?: string } } | undefined)?.cause?.code;
  return !(cause instanceof ServerError) && !(cause instanceof z.ZodError) && code !== 'ECONNREFUSED';
}
