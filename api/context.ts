import type { Redis } from 'ioredis';
import type { Deps } from '../shared/usecases/deps.js';
import type { SearchDeps } from '../shared/usecases/search.js';
import type { Metrics } from './metrics.js';
import type { Actor } from '../shared/domain/actor.js';

/** What the API process hands the app. */
export interface ApiDeps extends Deps {
  redis: Redis;
  metrics: Metrics;
}

/** What the routes get: the process's deps and what the app builds from them once. */
export interface RouteDeps extends ApiDeps, SearchDeps {}

export interface ApiState {
  requestId: string;
  actor?: Actor;
  rawBody?: string;
  body?: unknown;
  bodyInvalid?: boolean;
}
