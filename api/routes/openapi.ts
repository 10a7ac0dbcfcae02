import Router from '@koa/router';
import type { ApiState } from '../context.js';

const bearer = [{ bearer: [] }];
const range = ['from', 'to'].map((name) => ({ name, in: 'query', required: true, schema: { type: 'string', format: 'date' } }));
const op = (summary: string, extra: Record<string, unknown> = {}) => ({ summary, responses: { default: { $ref: '#/components/responses/Error' } }, ...extra });

/** The contract's paths; field-level detail lives in CONTRACT.md and the zod schemas. */
export const openapiDocument = {
  openapi: '3.0.3',
  info: { title: 'Booking engine', version: '0.1.0' },
  components: {
    securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
    responses: {
      Error: {
        description: 'Error',
        content: { 'application/json': { schema: { type: 'object', properties: { error: { type: 'object', properties: {
          code: { type: 'string' }, message: { type: 'string' }, details: {} } } } } } },
      },
    },
  },
  paths: {
    '/cars': {
      post: op('List a car (host or operator)', { security: bearer }),
      get: op('Search available cars', { parameters: ['city', 'from', 'to', 'limit'].map((name) => ({ name, in: 'query', required: name !== 'limit', schema: { type: 'string' } })) }),
    },
    '/hotels': { post: op('Create a hotel (operator)', { security: bearer }) },
    '/hotels/availability': { get: op('Search room types with free rooms on every night') },
    '/hotels/{hotelId}/room-types': { post: op('Create a room type (operator)', { security: bearer }) },
    '/room-types/{roomTypeId}/inventory': {
      put: op('Set sellable rooms for a range of nights (operator)', { security: bearer }),
      get: op('Read nights (operator)', { security: bearer }),
    },
    '/room-types/{roomTypeId}/inventory/audit': { get: op('Inventory ledger (operator)', { security: bearer }) },
    '/room-types/{roomTypeId}/rate-plans': { post: op('Create a rate plan in the room type\'s currency (operator)', { security: bearer }) },
    '/rate-plans/{ratePlanId}/calendar': {
      put: op('Set price and restrictions on every night of a range, ≤ 366 nights, all or none (operator)', { security: bearer }),
      get: op('Read the nightly calendar of a range (operator)', { security: bearer, parameters: range }),
    },
    '/quotes': { post: op('Price a stay on a rate plan; reserves nothing (customer)', { security: bearer }) },
    '/quotes/{quoteId}': { get: op('Read one of your quotes (customer)', { security: bearer }) },
    '/bookings': { post: op('Hold a car or a stay (customer); Idempotency-Key supported', { security: bearer }) },
    '/bookings/{id}': { get: op('Read a booking', { security: bearer }) },
    '/bookings/{id}/pay': { get: op('Redirect (303) to the provider checkout', { security: bearer }) },
    '/bookings/{id}/cancel': { post: op('Cancel with policy refund', { security: bearer }) },
    '/bookings/{id}/pickup': { post: op('CONFIRMED → ON_TRIP (host or operator)', { security: bearer }) },
    '/bookings/{id}/return': { post: op('ON_TRIP → COMPLETED (host or operator)', { security: bearer }) },
    '/payments/webhook': { post: op('Provider webhook (Psp-Signature)') },
    '/health': { get: op('Liveness') },
    '/ready': { get: op('Readiness: PostgreSQL and Redis') },
    '/metrics': { get: op('Prometheus metrics') },
    '/openapi.json': { get: op('This document') },
  },
};

// Every templated path declares its path parameters, as OpenAPI 3 requires.
for (const [path, item] of Object.entries(openapiDocument.paths)) {
  const names = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
  for (const op of Object.values(item) as { parameters?: unknown[] }[]) {
    op.parameters = [...names.map((name) => ({ name, in: 'path', required: true, schema: { type: 'integer', minimum: 1 } })), ...(op.parameters ?? [])];
  }
}

export function openapiRoutes() {
  const router = new Router<ApiState>();
  router.get('/openapi.json', (ctx) => {
    ctx.body = openapiDocument;
  });
  return router;
}
