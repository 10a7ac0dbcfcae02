import type { Middleware } from 'koa';
import { webcrypto } from 'node:crypto';
import { jwtVerify } from 'jose';
import { z } from 'zod';
import { DomainError, forbidden } from '../../shared/domain/errors.js';
import type { Actor, Role } from '../../shared/domain/actor.js';
import { parseIdText } from '../../shared/domain/ids.js';
import type { ApiState } from '../context.js';

const claims = z.object({
  sub: z.string().refine((s) => parseIdText(s) !== null),
  role: z.enum(['customer', 'host', 'operator']),
});

const unauthenticated = (why: string) => new DomainError('UNAUTHENTICATED', why);

/** Verifies the HS256 bearer token (exp honoured when present) and returns who is calling. */
export async function verifyBearer(secret: CryptoKey, header: string | undefined): Promise<Actor> {
  const m = header?.match(/^Bearer\s+(\S+)$/i);
  if (!m) throw unauthenticated('a bearer token is required');
  let payload: unknown;
  try {
    ({ payload } = await jwtVerify(m[1]!, secret, { algorithms: ['HS256'] }));
  } catch {
    throw unauthenticated('the bearer token is invalid or expired');
  }
  const c = claims.safeParse(payload);
  if (!c.success) throw unauthenticated('the bearer token lacks a valid sub or role');
  return { id: Number(c.data.sub), role: c.data.role };
}

/** Authenticates, then refuses (403) a role that may not call the endpoint — before any input is read. */
export function authenticate(jwtSecret: string, roles?: readonly Role[]): Middleware<ApiState> {
  // A CryptoKey imported once: given raw bytes or a KeyObject, jose imports the key on every request.
  const secret = webcrypto.subtle.importKey('raw', new TextEncoder().encode(jwtSecret), { name: 'HMAC', hash: 'SHA-256' }, false, ['verify']);
  return async (ctx, next) => {
    ctx.state.actor = await verifyBearer(await secret, ctx.get('authorization') || undefined);
    if (roles && !roles.includes(ctx.state.actor.role)) throw forbidden();
    await next();
  };
}

export function actorOf(state: ApiState): Actor {
  if (!state.actor) throw unauthenticated('a bearer token is required');
  return state.actor;
}
