import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Metrics } from './metrics.js';
import { fastCarSearchQuery } from './schemas/cars.js';
import { fastAvailabilityQuery } from './schemas/hotels.js';
import { requestIdFor } from './middleware/request-id.js';
import { logAccess } from './middleware/access-log.js';
import { logger } from '../shared/logger.js';
import { searchCarsInIndex, searchStaysInIndex, type SearchDeps, type SerializedAnswer } from '../shared/usecases/search.js';

// The hottest reads, GET /cars and GET /hotels/availability, answered beside Koa when their answer is certain: a
// query the fast schema takes (api/schemas/common.ts, "Fast paths") and the in-memory index answers
// (searchCarsInIndex, searchStaysInIndex). Everything else — a refusal, a stale index, an odd query — goes to Koa
// untouched, which answers it as it would have: the fast path only ever writes a 200 that the Koa route would have
// written byte for byte, with the same X-Request-Id, access line and latency metric (test/integration/fast-reads.test.ts
// compares the two). Why: at 3,000 searches a second, Koa's middleware chain, router and query parsing cost more
// than the search itself (a trivial node:http server answers 7 KB for ~75 µs of CPU here; the Koa route took
// ~200 µs). The request body of a GET is never read.

export interface FastReadDeps extends Pick<SearchDeps, 'clock' | 'searchIndex'> {
  metrics: Pick<Metrics, 'httpDuration'>;
}

/** A read answered beside Koa: its path (the route template: no parameters), its query's keys, its answer or null. */
interface FastRead {
  path: string;
  keys: readonly string[];
  answer(deps: FastReadDeps, query: Record<string, string | string[]>): SerializedAnswer | null;
}

const READS: readonly FastRead[] = [
  {
    path: '/cars', keys: ['city', 'from', 'to', 'limit'],
    answer: (deps, query) => {
      const input = fastCarSearchQuery(query);
      return input && searchCarsInIndex(deps, input);
    },
  },
  {
    path: '/hotels/availability', keys: ['city', 'checkIn', 'checkOut', 'rooms'],
    answer: (deps, query) => {
      const input = fastAvailabilityQuery(query);
      return input && searchStaysInIndex(deps, input);
    },
  },
];

/** `koa` with the reads above answered first when they can be (see above). */
export function withFastReads(deps: FastReadDeps, koa: RequestListener): RequestListener {
  return (req, res) => {
    if (req.method !== 'GET') return koa(req, res);
    let answered = false;
    try {
      answered = answerRead(deps, req, res);
    } catch (err) {
      // A throw here (a bug in a walk, a log write failing) must not take the process down: a request not yet
      // answered goes to Koa, whose errors middleware answers it; one half written can only be cut off.
      logger.error({ err: String(err), url: req.url }, 'fast read failed');
      if (res.headersSent) {
        res.destroy();
        return;
      }
    }
    if (!answered) koa(req, res);
  };
}

/**
 * Characters after which Koa's URL parser (parseurl) leaves its fast path for url.parse, which drops a fragment,
 * trims and escapes: a request target holding one is left to Koa, so the two never read a query differently. (Node's
 * HTTP parser refuses the whitespace ones with a bare 400, even with insecureHTTPParser; `#` reaches the listener.)
 */
const SLOW_PARSE = /[\t\n\f\r #\u00a0\ufeff]/;

/** The query's values for `keys` as Koa's ctx.query has them (a repeated key: an array), or null for a URL Koa would read otherwise. */
export function queryOf(url: string, path: string, keys: readonly string[]): Record<string, string | string[]> | null {
  // Only `<path>?<query>` (Koa's router also takes a trailing slash: that goes to Koa), read as parseurl's fast path reads it.
  if (url.length <= path.length || url.charCodeAt(path.length) !== 0x3f || !url.startsWith(path) || SLOW_PARSE.test(url)) return null;
  const params = new URLSearchParams(url.slice(path.length + 1));
  const query: Record<string, string | string[]> = {};
  for (const k of keys) {
    const all = params.getAll(k);
    if (all.length) query[k] = all.length === 1 ? all[0]! : all;
  }
  return query;
}

function answerRead(deps: FastReadDeps, req: IncomingMessage, res: ServerResponse): boolean {
  const started = performance.now();
  const url = req.url ?? '';
  const read = READS.find((r) => url.startsWith(r.path));
  const query = read && queryOf(url, read.path, read.keys);
  const answer = query && read.answer(deps, query);
  if (!answer) return false;
  const given = req.headers['x-request-id'];
  const requestId = requestIdFor(Array.isArray(given) ? given.join(', ') : given);
  // The headers the Koa route sends, in its order (request-id middleware, then the answer's type and length).
  res.writeHead(200, ['X-Request-Id', requestId, 'Content-Type', 'application/json; charset=utf-8', 'Content-Length', String(answer.json.length)]);
  res.end(answer.json);
  const ms = performance.now() - started;
  deps.metrics.httpDuration.observe({ method: 'GET', route: read.path, status: '200' }, ms / 1000);
  // requestId first, where the logger's mixin puts it on Koa's lines.
  logAccess({ requestId, method: 'GET', route: read.path, path: read.path, status: 200, ms: Math.round(ms * 10) / 10 });
  return true;
}
