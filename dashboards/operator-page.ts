import Router from '@koa/router';
import type Koa from 'koa';
import type { QueueSet } from '../shared/queues/producer.js';
import type { Deps } from '../shared/usecases/deps.js';
import { DomainError } from '../shared/domain/errors.js';
import { parseIdText } from '../shared/domain/ids.js';
import { bookingJobRequests, bookingSearchOf, bookingStory, findBookings } from '../shared/usecases/operator.js';
import { bookingJobs, type BookingJob } from './booking-jobs.js';
import { bookingPage, notFoundPage, searchPage } from './operator-html.js';
import { logger } from '../shared/logger.js';

// The operator page on the dashboard's port, behind the same Basic auth and cross-site rules as bull-board
// (dashboards/server.ts mounts it after them): /admin/bookings?booking=|customer=|car= searches, and
// /admin/bookings/{id} shows the booking, its story (a page of the timeline) and its jobs in bull-board.
// Read-only: every route is a GET.

const PAGE_LIMIT = 200;
const JOBS_TIMEOUT_MS = 3000;

function html(ctx: Koa.Context, status: number, body: string) {
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  // No script at all; styles inline; forms only to this origin; never framed.
  ctx.set('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'");
  ctx.set('Cache-Control', 'no-store');
  ctx.set('Referrer-Policy', 'same-origin');
  ctx.body = body;
}

const text = (v: unknown) => (typeof v === 'string' ? v : undefined);

/** The booking's jobs, or null when the queues do not answer in time (Redis down must not take the page down). */
async function jobsOf(deps: Deps, queues: QueueSet, bookingId: number): Promise<BookingJob[] | null> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), JOBS_TIMEOUT_MS)));
  try {
    const keys = await bookingJobRequests(deps, bookingId);
    return await Promise.race([bookingJobs(queues, keys).catch(() => null), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export function operatorPages(openDeps: () => Promise<Deps>, queues: QueueSet): Koa.Middleware {
  const router = new Router();

  router.get('/admin/bookings', async (ctx) => {
    const q = { booking: text(ctx.query.booking), customer: text(ctx.query.customer), car: text(ctx.query.car) };
    let search;
    try {
      search = bookingSearchOf(q);
    } catch (e) {
      if (e instanceof DomainError) return html(ctx, 400, searchPage(q, null, e.message));
      throw e;
    }
    if (!search) return html(ctx, 200, searchPage(q, null));
    const results = await findBookings(await openDeps(), search);
    if ('bookingId' in search && results.length === 1) return ctx.redirect(`/admin/bookings/${results[0]!.id}`);
    html(ctx, 200, searchPage(q, results));
  });

  router.get('/admin/bookings/:id', async (ctx) => {
    const id = parseIdText(ctx.params.id);
    if (id === null) return html(ctx, 404, notFoundPage(`No booking ${ctx.params.id}.`));
    try {
      const deps = await openDeps();
      const { booking, timeline } = await bookingStory(deps, id, { limit: PAGE_LIMIT, cursor: text(ctx.query.cursor) });
      html(ctx, 200, bookingPage(booking, timeline, await jobsOf(deps, queues, id), `/admin/bookings/${id}`));
    } catch (e) {
      if (e instanceof DomainError && e.code === 'NOT_FOUND') return html(ctx, 404, notFoundPage(`No booking ${id}.`));
      if (e instanceof DomainError && e.code === 'VALIDATION') return html(ctx, 400, notFoundPage(e.message));
      throw e;
    }
  });

  const routes = router.routes();
  const methods = router.allowedMethods();
  return async (ctx, next) => {
    if (ctx.path !== '/admin/bookings' && !ctx.path.startsWith('/admin/bookings/')) return next();
    try {
      await routes(ctx as never, () => methods(ctx as never, next));
    } catch (e) {
      // PostgreSQL down or a bug: a page that says so, the cause in the log (never on the page).
      logger.error({ err: e, path: ctx.path }, 'operator page failed');
      html(ctx, 503, notFoundPage('The booking could not be read just now (the dashboard log says why); try again.'));
    }
  };
}
