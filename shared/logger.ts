import { pino } from 'pino';
import { config } from './config.js';

/** The process's logger, at the parsed config's LOG_LEVEL. */
export const logger = pino({
  level: config().LOG_LEVEL,
  redact: ['req.headers.authorization', '*.secret', '*.password'],
});
