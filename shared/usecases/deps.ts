import type { DatabasePool } from '../db/pool.js';
import type { Clock } from '../domain/clock.js';
import type { Config } from '../config.js';
import type { PspClient } from '../psp/client.js';

export interface Deps {
  db: DatabasePool;
  clock: Clock;
  config: Config;
  psp: PspClient;
}
