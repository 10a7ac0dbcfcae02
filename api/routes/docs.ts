import fs from 'node:fs/promises';
import path from 'node:path';
import { createRequire } from 'node:module';
import Router from '@koa/router';
import { z } from 'zod';
import type { ApiState, RouteDeps } from '../context.js';
import type { Operation } from '../openapi/operation.js';
import { buildDocument } from '../openapi/document.js';
import { notFound } from '../../shared/domain/errors.js';

// /openapi.json (generated once, at start-up, from the routes' zod schemas) and /docs, an interactive
// page (swagger-ui-dist from node_modules: works offline, no CDN).

const swaggerDir = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
const INIT = `window.ui = SwaggerUIBundle({ url: 'openapi.json', dom_id: '#swagger-ui', deepLinking: true, tryItOutEnabled: false });\n`;
const ASSETS = {
  'swagger-ui.css': { type: 'text/css; charset=utf-8', file: 'swagger-ui.css' },
  'swagger-ui-bundle.js': { type: 'text/javascript; charset=utf-8', file: 'swagger-ui-bundle.js' },
  'favicon-32x32.png': { type: 'image/png', file: 'favicon-32x32.png' },
  'init.js': { type: 'text/javascript; charset=utf-8', text: INIT },
} as const satisfies Record<string, { type: string; file?: string; text?: string }>;
type Asset = keyof typeof ASSETS;
const ASSET_NAMES = Object.keys(ASSETS) as [Asset, ...Asset[]];

const PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Booking engine API</title>
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <link rel="icon" type="image/png" href="docs/favicon-32x32.png">
  <link rel="stylesheet" href="docs/swagger-ui.css">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="docs/swagger-ui-bundle.js"></script>
  <script src="docs/init.js"></script>
</body>
</html>
`;

const cache = new Map<Asset, Buffer | string>();
async function asset(name: Asset): Promise<Buffer | string> {
  const a: { file?: string; text?: string } = ASSETS[name];
  if (a.text !== undefined) return a.text;
  let body = cache.get(name);
  if (!body) cache.set(name, (body = await fs.readFile(path.join(swaggerDir, a.file!))));
  return body;
}

export function docsRoutes(deps: RouteDeps, operations: readonly Operation[]) {
  const json = JSON.stringify(buildDocument(operations, deps.config.PUBLIC_BASE_URL));
  const api = new URL(deps.config.PUBLIC_BASE_URL).origin;
  const router = new Router<ApiState>();
  router.get('/openapi.json', (ctx) => {
    ctx.type = 'application/json';
    ctx.body = json;
  });
  router.get('/docs', (ctx) => {
    // The router also matches /docs/, where the page's relative asset URLs would resolve to /docs/docs/*:
    // send the browser to /docs (relative, so a path prefix in front of the api still works).
    if (ctx.path.endsWith('/')) {
      ctx.status = 301;
      ctx.set('Location', `../docs${ctx.querystring ? `?${ctx.querystring}` : ''}`);
      return;
    }
    ctx.set('Content-Security-Policy',
      `default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'; connect-src 'self' ${api}; frame-ancestors 'none'`);
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = PAGE;
  });
  router.get('/docs/:asset', async (ctx) => {
    const name = ctx.params.asset as Asset;
    if (!Object.hasOwn(ASSETS, name)) throw notFound('asset');
    ctx.type = ASSETS[name].type;
    ctx.set('Cache-Control', 'public, max-age=3600');
    ctx.body = await asset(name);
  });
  return router;
}

export const docsOperations: Operation[] = [
  {
    operationId: 'openapi', method: 'get', path: '/openapi.json', tag: 'operations', auth: 'public', usesDependencies: false,
    summary: 'This document', description: 'OpenAPI 3.1, generated at start-up from the zod schemas the routes validate with.',
    answer: { status: 200, description: 'The OpenAPI document', schema: z.object({ openapi: z.string() }).passthrough() },
  },
  {
    operationId: 'docs', method: 'get', path: '/docs', tag: 'operations', auth: 'public', usesDependencies: false,
    summary: 'Interactive page for this document', description: 'Swagger UI, served from this process (no CDN). `/docs/` redirects here (301).',
    answer: { status: 200, description: 'HTML page', contentType: 'text/html; charset=utf-8' },
  },
  {
    operationId: 'docsAsset', method: 'get', path: '/docs/{asset}', tag: 'operations', auth: 'public', usesDependencies: false,
    summary: "The page's scripts, styles and icon",
    pathParams: z.object({ asset: z.enum(ASSET_NAMES) }),
    answer: { status: 200, description: 'The file', contentType: 'application/octet-stream' },
  },
];
