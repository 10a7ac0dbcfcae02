import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { ROUTE_MODULES, allOperations } from '../../api/app.js';
import type { RouteDeps } from '../../api/context.js';
import { createMetrics } from '../../api/metrics.js';
import { buildDocument, type OpenApiDocument } from '../../api/openapi/document.js';
import { ERROR_STATUS } from '../../api/middleware/errors.js';
import { parseConfig } from '../../shared/config.js';

// The document is generated from the routes' own schemas; these checks keep it whole: every route is
// described and every description is a route, it lints clean, and each operation answers what its shape implies.

const ROOT = path.resolve(import.meta.dirname, '../..');
const doc: OpenApiDocument = buildDocument(allOperations(), 'http://127.0.0.1:3000');
const redis = new Redis({ lazyConnect: true });
afterAll(() => redis.disconnect());

type Op = { parameters?: { $ref?: string; name?: string; in?: string; required?: boolean }[]; requestBody?: unknown; security?: unknown[];
  responses: Record<string, { headers?: Record<string, unknown>; content?: Record<string, unknown> }> };
const operations = Object.entries(doc.paths ?? {}).flatMap(([p, item]) =>
  (['get', 'post', 'put', 'patch', 'delete'] as const).filter((m) => (item as Record<string, unknown>)[m]).map((m) => ({
    method: m, path: p, op: (item as Record<string, Op>)[m]!,
  })));

/** `/bookings/:id` and `/bookings/{id}` both become `/bookings/{}`: parameter names may differ, places may not. */
const shape = (method: string, p: string) => `${method.toUpperCase()} ${p.replace(/:\w+|\{\w+\}/g, '{}')}`;

describe('OpenAPI document', () => {
  it('describes every route of every router, and nothing else', () => {
    const config = parseConfig({ JWT_SECRET: 'x'.repeat(32), PAYMENT_WEBHOOK_SECRET: 'y'.repeat(32) });
    const deps = { config, redis, metrics: createMetrics() } as unknown as RouteDeps;
    const routes = ROUTE_MODULES.flatMap((m) => m.routes(deps).stack.flatMap((layer) =>
      layer.methods.filter((m) => m !== 'HEAD').map((m) => shape(m, String(layer.path)))));
    const described = operations.map((o) => shape(o.method, o.path));
    expect(routes.length).toBeGreaterThan(15);
    expect(described.filter((d) => !routes.includes(d)), 'described but not routed').toEqual([]);
    expect(routes.filter((r) => !described.includes(r)), 'routed but not described').toEqual([]);
    expect(new Set(described).size).toBe(described.length);
  });

  it('lints clean with Redocly (recommended rules, redocly.yaml)', async () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'openapi-')), 'openapi.json');
    fs.writeFileSync(file, JSON.stringify(doc));
    const cli = path.join(ROOT, 'node_modules/@redocly/cli/bin/cli.js');
    const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' };
    const run = await promisify(execFile)(process.execPath, [cli, 'lint', file, '--format=json'], { cwd: ROOT, env })
      .catch((e: { stdout: string; stderr: string }) => e);
    const report = JSON.parse(run.stdout.slice(run.stdout.indexOf('{')));
    expect(report.problems, JSON.stringify(report.problems, null, 2)).toEqual([]);
    expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
  }, 60_000);

  it('gives every operation one success answer, its implied refusals and X-Request-Id on every answer', () => {
    for (const { method, path: p, op } of operations) {
      const name = `${method} ${p}`;
      const statuses = Object.keys(op.responses);
      const success = statuses.filter((s) => /^2\d\d$/.test(s) || s === '303');
      expect(success, name).toHaveLength(1);
      expect(statuses, name).toContain('500');
      const input = op.parameters?.some((x) => x.in === 'query' || (x.in === 'header' && x.required)) || op.requestBody;
      if (input) expect(statuses, name).toContain('400');
      if (op.requestBody || method !== 'get') expect(statuses, name).toContain('413');
      if (op.security?.length) expect(statuses, name).toContain('401');
      if (op.parameters?.some((x) => x.in === 'path')) expect(statuses, name).toContain('404');
      for (const [status, r] of Object.entries(op.responses)) {
        expect(r.headers?.['X-Request-Id'], `${name} ${status}`).toEqual({ $ref: '#/components/headers/XRequestId' });
        if (Number(status) >= 400) expect(r.content?.['application/json'], `${name} ${status}`).toEqual({ schema: { $ref: '#/components/schemas/Error' } });
      }
      expect(op.parameters?.[0], name).toEqual({ $ref: '#/components/parameters/XRequestId' });
    }
  });

  it('has request bodies, answer schemas, the headers of the contract and the error codes as an enum', () => {
    const bodies = operations.filter((o) => o.op.requestBody);
    expect(bodies.map((o) => `${o.method} ${o.path}`).sort()).toEqual(operations.filter((o) => o.method !== 'get' && !/pickup|return/.test(o.path))
      .map((o) => `${o.method} ${o.path}`).sort());
    const json = JSON.stringify(doc);
    for (const header of ['Idempotency-Key', 'Psp-Signature', 'Retry-After', 'Location', 'Idempotent-Replayed', 'X-Request-Id']) {
      expect(json, header).toContain(`"${header}"`);
    }
    const hold = doc.paths!['/bookings']!.post!;
    expect(hold.parameters).toContainEqual(expect.objectContaining({ name: 'Idempotency-Key', in: 'header', required: false }));
    expect(doc.paths!['/payments/webhook']!.post!.parameters).toContainEqual(expect.objectContaining({ name: 'Psp-Signature', in: 'header', required: true }));
    expect(Object.keys((hold.responses as Record<string, unknown>)).sort()).toEqual(['201', '400', '401', '403', '404', '409', '413', '422', '429', '500', '503']);
    const errorCode = (doc.components!.schemas!.Error as any).properties.error.properties.code;
    expect(errorCode.enum.sort()).toEqual(Object.keys(ERROR_STATUS).sort());
    for (const { method, path: p, op } of operations) {
      const [status, answer] = Object.entries(op.responses).find(([s]) => Number(s) < 400)!;
      if (status !== '303' && !['/metrics', '/docs', '/docs/{asset}'].includes(p)) expect(answer.content?.['application/json'], `${method} ${p}`).toBeDefined();
    }
  });
});
