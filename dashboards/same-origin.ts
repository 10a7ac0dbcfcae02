import type Koa from 'koa';

const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Browsers attach Basic credentials to every request for the dashboard's origin, cross-site ones
 * included, so Basic auth alone lets any web page a signed-in operator visits retry, clean or
 * obliterate queues (CSRF). Every request that changes something must prove it comes from the dashboard's own page:
 * - `Sec-Fetch-Site` (all current browsers send it) must be `same-origin`; otherwise
 * - `Origin` (sent by browsers on every non-GET request) must be this host; otherwise
 * - a non-browser client sends `X-Requested-With` (a page elsewhere cannot add a header without a
 *   CORS preflight, which this server never grants).
 * Reads stay open to the authenticated user. Framing is refused (clickjacking of the action buttons).
 */
export function sameOriginActions(): Koa.Middleware {
  return async (ctx, next) => {
    ctx.set('X-Frame-Options', 'DENY');
    ctx.set('Content-Security-Policy', "frame-ancestors 'none'");
    if (SAFE.has(ctx.method) || fromOwnPage(ctx)) return next();
    ctx.status = 403;
    ctx.body = { error: { code: 'FORBIDDEN', message: 'cross-site request refused: actions must come from the dashboard itself' } };
  };
}

function fromOwnPage(ctx: Koa.Context): boolean {
  const site = ctx.get('sec-fetch-site');
  if (site) return site === 'same-origin';
  const origin = ctx.get('origin');
  if (origin) {
    try {
      return new URL(origin).host === ctx.host;
    } catch {
      return false;
    }
  }
  return ctx.get('x-requested-with') !== '';
}
