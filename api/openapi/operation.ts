import { z, type AnyZodObject, type ZodTypeAny } from 'zod';
import type { ResponseConfig, RouteConfig } from '@asteasolutions/zod-to-openapi';
import type { ErrorCode } from '../../shared/domain/errors.js';
import type { Role } from '../../shared/domain/actor.js';
import { describeCodes, errorStatuses } from './errors.js';

// How a route module describes its operations for the OpenAPI document: the same zod schemas the
// route parses with, plus what only the route knows (who may call, the answer, extra refusals).
// The refusals implied by an operation's shape are added here, so no operation forgets them.

export const TAGS = {
  catalogue: 'Cars, hotels and room types (hosts and operators)',
  inventory: 'Sellable rooms per night and their audit ledger (operators)',
  prices: 'Rate plans, their nightly calendar (operators) and quotes (customers)',
  search: 'Public availability search (may be up to SEARCH_CACHE_TTL_S stale)',
  bookings: 'Holds, reads, payment redirect, changes, cancellation, trips',
  payments: "The payment provider's webhook",
  operations: 'Health, readiness, metrics and this description',
} as const;
export type Tag = keyof typeof TAGS;

export interface Answer {
  status: 200 | 201 | 303;
  description: string;
  /** JSON body (omitted: no body, or `contentType` with a plain string body). */
  schema?: ZodTypeAny;
  contentType?: string;
  /** Response headers the route sets (X-Request-Id is on every answer already). */
  headers?: Record<string, { description: string; schema: { type: 'string'; format?: string; enum?: string[] }; required?: boolean }>;
}

export interface Operation {
  operationId: string;
  method: 'get' | 'post' | 'put';
  /** OpenAPI form (`/bookings/{id}`); every `{name}` is a positive integer id unless `pathParams` says otherwise. */
  path: string;
  summary: string;
  description?: string;
  tag: Tag;
  /** Roles that may call with a bearer token, or public (no credentials; the webhook carries a signature). */
  auth: 'public' | readonly Role[];
  pathParams?: AnyZodObject;
  query?: AnyZodObject;
  headers?: AnyZodObject;
  body?: ZodTypeAny;
  /** An example request body, for the interactive page. */
  example?: unknown;
  answer: Answer;
  /** Refusals beyond those the shape implies (401/403 from auth, 400/413 from input, 404 from path ids, 500, 503). */
  errors?: readonly ErrorCode[];
  /** False for operations that touch neither PostgreSQL nor Redis (no 503). */
  usesDependencies?: boolean;
}

const ALL_ROLES = 3;
const REQUEST_ID = { $ref: '#/components/headers/XRequestId' };
const id = z.number().int().positive().describe('A positive integer id; anything else names nothing (404)');

/** `{name}` placeholders of an OpenAPI path. */
export const pathNames = (path: string) => [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);

/** Every refusal the operation may answer, implied ones first. */
function refusals(op: Operation): ErrorCode[] {
  const codes: ErrorCode[] = [];
  if (op.auth !== 'public') codes.push('UNAUTHENTICATED');
  if (op.auth !== 'public' && op.auth.length < ALL_ROLES) codes.push('FORBIDDEN');
  if (op.body || op.query || op.headers) codes.push('VALIDATION');
  if (pathNames(op.path).length) codes.push('NOT_FOUND');
  codes.push(...(op.errors ?? []), 'INTERNAL');
  if (op.usesDependencies !== false) codes.push('UNAVAILABLE');
  return codes;
}

function answerConfig(a: Answer): ResponseConfig {
  const headers: Record<string, unknown> = { 'X-Request-Id': REQUEST_ID };
  for (const [name, h] of Object.entries(a.headers ?? {})) {
    headers[name] = { description: h.description, required: h.required ?? true, schema: h.schema };
  }
  const contentType = a.contentType ?? 'application/json';
  const content = a.schema ? { [contentType]: { schema: a.schema } } : a.contentType ? { [contentType]: { schema: { type: 'string' as const } } } : undefined;
  return { description: a.description, headers: headers as ResponseConfig['headers'], ...(content ? { content } : {}) };
}

function errorConfig(status: number, codes: readonly ErrorCode[]): ResponseConfig {
  const headers: Record<string, unknown> = { 'X-Request-Id': REQUEST_ID };
  if (status === 429) headers['Retry-After'] = { $ref: '#/components/headers/RetryAfter' };
  return {
    description: describeCodes(status, codes),
    headers: headers as ResponseConfig['headers'],
    content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
  };
}

/** The zod-to-openapi route of an operation: parameters, body, the answer and every refusal with its codes. */
export function routeConfig(op: Operation): RouteConfig {
  const names = pathNames(op.path);
  const params = op.pathParams ?? (names.length ? z.object(Object.fromEntries(names.map((n) => [n, id]))) : undefined);
  const hasBody = op.method !== 'get';
  const responses: RouteConfig['responses'] = { [op.answer.status]: answerConfig(op.answer) };
  for (const [status, codes] of errorStatuses(refusals(op), hasBody)) responses[status] = errorConfig(status, codes);
  return {
    method: op.method,
    path: op.path,
    operationId: op.operationId,
    summary: op.summary,
    description: [op.description, op.auth === 'public' ? 'Public.' : `Bearer token; roles: ${op.auth.join(', ')}.`].filter(Boolean).join('\n\n'),
    tags: [op.tag],
    security: op.auth === 'public' ? [] : [{ bearer: [] }],
    parameters: [{ $ref: '#/components/parameters/XRequestId' }],
    request: {
      params,
      query: op.query,
      headers: op.headers,
      ...(op.body ? { body: { required: !op.body.isOptional(), content: { 'application/json': { schema: op.body, ...(op.example ? { example: op.example } : {}) } } } } : {}),
    },
    responses,
  };
}
