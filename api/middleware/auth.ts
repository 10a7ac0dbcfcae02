import type { Middleware } from 'koa';
import { createVerifier } from 'fast-jwt';
import { DomainError, forbidden } from '../../shared/domain/errors.js';
import type { Actor, Role } from '../../shared/domain/actor.js';
import { parseIdText } from '../../shared/domain/ids.js';
import type { ApiState } from '../context.js';
import { header } from '../headers.js';

const ROLES: ReadonlySet<unknown> = new Set<Role>(['customer', 'host', 'operator']);

const unauthenticated = (why: string) => new DomainError('UNAUTHENTICATED', why);

type Verify = (token: string) => unknown;

/**
 * An HS256 verifier for the secret (exp and nbf honoured when present). fast-jwt verifies synchronously with
 * node:crypto, ~13 µs a token here; jose goes through WebCrypto's async jobs, ~50 µs — a hold's JWT was 13 % of
 * the API's CPU per hold. A client sends the same token with each request: fast-jwt remembers the last
 * TOKEN_CACHE_SIZE valid ones (keyed by fast-jwt's own hash of the token, each until its exp or 10 minutes,
 * whichever is first; refusals are not remembered), so a repeat costs a hash and a lookup instead of a verification.
 */
const TOKEN_CACHE_SIZE = 10_000;
/** One verifier (and one cache) per secret, shared by every route's `authenticate`. */
const verifiers = new Map<string, Verify>();
export function bearerVerifier(jwtSecret: string): Verify {
  let verify = verifiers.get(jwtSecret);
  if (!verify) verifiers.set(jwtSecret, (verify = createVerifier({ key: jwtSecret, algorithms: ['HS256'], cache: TOKEN_CACHE_SIZE })));
  return verify;
}

/** Verifies the bearer token and returns who is calling. */
export function verifyBearer(verify: Verify, header: string | undefined): Actor {
  const m = header?.match(/^Bearer\s+(\S+)$/i);
  if (!m) throw unauthenticated('a bearer token is required');
  let payload: unknown;
  try {
    payload = verify(m[1]!);
  } catch {
    throw unauthenticated('the bearer token is invalid or expired');
  }
  // Plain checks, not a zod object (a few µs on every authenticated request): sub a decimal id, role one of ours.
  const { sub, role } = (typeof payload === 'object' && payload !== null ? payload : {}) as { sub?: unknown; role?: unknown };
  const id = typeof sub === 'string' ? parseIdText(sub) : null;
  if (id === null || !ROLES.has(role)) throw unauthenticated('the bearer token lacks a valid sub or role');
  return { id, role: role as Role };
}

/** Authenticates, then refuses (403) a role that may not call the endpoint — before any input is read. */
export function authenticate(jwtSecret: string, roles?: readonly Role[]): Middleware<ApiState> {
  const verify = bearerVerifier(jwtSecret);
  return async (ctx, next) => {
    ctx.state.actor = verifyBearer(verify, header(ctx, 'authorization'));
    if (roles && !roles.includes(ctx.state.actor.role)) throw forbidden();
    await next();
  };
}

export function actorOf(state: ApiState): Actor {
  if (!state.actor) throw unauthenticated('a bearer token is required');
  return state.actor;
}
