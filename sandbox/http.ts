import type Koa from 'koa';
import getRawBody from 'raw-body';
import type { Logger } from 'pino';
import type { z } from 'zod';

// HTTP plumbing of the sandbox provider: its own error shape ({error: {code, message}}, Stripe-like
// lower-case codes, not the service's), body reading, validation and Idempotency-Key handling.

export class SandboxHttpError extends Error {
  override name = 'SandboxHttpError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** Headers the answer carries (a 429's Retry-After). */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export const notFound = (message: string) => new SandboxHttpError(404, 'not_found', message);

/** The raw body, read once per request (the /v1 guard reads it before stalling). */
export function rawBodyOf(ctx: Koa.Context): Promise<string> {
  const state = ctx.state as { rawBody?: Promise<string> };
  state.rawBody ??= getRawBody(ctx.req, { limit: '1mb', encoding: 'utf8' });
  return state.rawBody;
}

export async function readJson(ctx: Koa.Context): Promise<unknown> {
  const text = await rawBodyOf(ctx);
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new SandboxHttpError(400, 'invalid_json', 'body is not valid JSON');
  }
}

export function parseWith<T>(schema: z.ZodType<T, z.ZodTypeDef, unknown>, value: unknown): T {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const message = r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
  throw new SandboxHttpError(400, 'invalid_request', message);
}

/** Idempotency-Key → the object created first and the request's fingerprint. */
export type IdempotencyKeys = Map<string, { id: string; fingerprint: string }>;

/** Same key and body → the object created first (as it is now); same key, other body → 422. */
export function idempotent<T extends { id: string }>(
  keys: IdempotencyKeys,
  key: string | undefined,
  body: object,
  find: (id: string) => T,
  create: () => T,
): T {
  const fingerprint = JSON.stringify(body);
  const seen = key === undefined ? undefined : keys.get(key);
  if (seen) {
    if (seen.fingerprint === fingerprint) return find(seen.id);
    throw new SandboxHttpError(422, 'idempotency_key_reused', 'Idempotency-Key reused with a different body');
  }
  const created = create();
  if (key !== undefined) keys.set(key, { id: created.id, fingerprint });
  return created;
}

export const headerKey = (ctx: Koa.Context) => ctx.get('idempotency-key') || undefined;

/** Any error → the sandbox's error shape; 5xx details only in the log. */
export function errorResponses(log: Logger): Koa.Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (e) {
      const err = e as { status?: number; expose?: boolean; message?: string };
      const status = e instanceof SandboxHttpError ? e.status : (err.status ?? 500);
      ctx.status = status;
      if (e instanceof SandboxHttpError) ctx.set(e.headers);
      ctx.body = {
        error: {
          code: e instanceof SandboxHttpError ? e.code : status >= 500 ? 'internal' : 'invalid_request',
          message: status < 500 || err.expose ? String(err.message) : 'internal error',
        },
      };
      if (status >= 500) log.error({ err: e }, 'sandbox request failed');
    }
  };
}
