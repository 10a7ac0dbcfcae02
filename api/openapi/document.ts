import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { OpenAPIRegistry, OpenApiGeneratorV31, extendZodWithOpenApi } from '@asteasolutions/zod-to-openapi';
import { repoRoot } from '../../shared/local-secrets.js';
import { errorSchema } from './errors.js';
import { TAGS, routeConfig, type Operation } from './operation.js';

extendZodWithOpenApi(z);

export type OpenApiDocument = ReturnType<OpenApiGeneratorV31['generateDocument']>;

const version = (): string => {
  try {
    return JSON.parse(fs.readFileSync(path.join(repoRoot(), 'package.json'), 'utf8')).version;
  } catch {
    return '0.0.0';
  }
};

const DESCRIPTION = `Cars by the hour, hotel rooms by the night. JSON bodies with camelCase fields; money in the
currency's minor unit; instants ISO-8601 with an offset; hotel dates YYYY-MM-DD in the hotel's time zone.
Every non-2xx answer has the body \`{"error": {"code", "message", "details"?}}\`; each operation lists the
statuses it answers and, per status, its codes. Every answer carries \`X-Request-Id\`.`;

/**
 * The OpenAPI 3.1 document of `operations`, generated from the zod schemas the routes validate with.
 * Built once per app (start-up), then served as is.
 */
export function buildDocument(operations: readonly Operation[], serverUrl: string): OpenApiDocument {
  const registry = new OpenAPIRegistry();
  registry.register('Error', errorSchema);
  registry.registerComponent('securitySchemes', 'bearer', {
    type: 'http', scheme: 'bearer', bearerFormat: 'JWT',
    description: 'HS256 JWT signed with JWT_SECRET; claims `sub` (decimal id as a string), `role` (customer | host | operator), `exp` honoured',
  });
  registry.registerComponent('parameters', 'XRequestId', {
    name: 'X-Request-Id', in: 'header', required: false,
    description: 'Your correlation id (visible ASCII, at most 200 characters), echoed in the answer and carried into logs, jobs and Kafka headers',
    schema: { type: 'string', maxLength: 200 },
  });
  registry.registerComponent('headers', 'XRequestId', {
    description: "The request's own X-Request-Id when it sent a valid one, else a new id", required: true, schema: { type: 'string' },
  });
  registry.registerComponent('headers', 'RetryAfter', {
    description: 'Seconds until a new hold is allowed', required: true, schema: { type: 'integer', minimum: 0 },
  });
  for (const op of operations) registry.registerPath(routeConfig(op));
  const generator = new OpenApiGeneratorV31(registry.definitions);
  return generator.generateDocument({
    openapi: '3.1.0',
    info: { title: 'Booking engine', version: version(), description: DESCRIPTION },
    servers: [{ url: serverUrl, description: 'PUBLIC_BASE_URL' }],
    tags: Object.entries(TAGS).map(([name, description]) => ({ name, description })),
  });
}
