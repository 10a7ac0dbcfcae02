import type { Redis } from 'ioredis';
import type { Deps } from '../shared/usecases/deps.js';
import type { Metrics } from './metrics.js';
import type { Actor } from '../shared/domain/actor.js';

export interface ApiDeps extends Deps {
  redis: Redis;
  metrics: Metrics;
}

export interface ApiState {
  requestId: string;
  actor?: Actor;
  rawBody?: string;
  body?: unknown;
  bodyInvalid?: boolean;
}
