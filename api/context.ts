import type { RedisClient } from '../shared/redis.js';
import type { Deps } from '../shared/usecases/deps.js';
import type { SearchDeps, SearchIndex } from '../shared/usecases/search.js';
import type { Metrics } from './metrics.js';
import type { Actor } from '../shared/domain/actor.js';
import type { HoldLimiter } from '../shared/usecases/holds.js';

/** What the API process hands the app. */
export interface ApiDeps extends Deps {
  redis: RedisClient;
  metrics: Metrics;
  /** In-memory search calendars (api/server.ts starts them when SEARCH_CACHE_TTL_S allows). */
  searchIndex?: SearchIndex | null;
  /** The hold limiter; default: one in Redis made by the routes (api/server.ts makes it, to await it when stopping). */
  holdLimiter?: HoldLimiter;
}

/** What the routes get: the process's deps and what the app builds from them once. */
export interface RouteDeps extends ApiDeps, SearchDeps {}

export interface ApiState {
  requestId: string;
  actor?: Actor;
  /** The request body's bytes exactly as received (POST, PUT, PATCH). */
  rawBytes?: Buffer;
  /** Their strict UTF-8 decoding, a leading BOM dropped ('' when they are not UTF-8: see bodyInvalid). */
  rawBody?: string;
  body?: unknown;
  /** Why the body is not acceptable JSON (not JSON, or nested too deeply); judged by jsonBody. */
  bodyInvalid?: string;
}
