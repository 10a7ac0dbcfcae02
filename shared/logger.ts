import path from 'node:path';
import { pino } from 'pino';
import { config } from './config.js';
import { currentCorrelation } from './correlation.js';

// PROC_NAME (npm start sets it from the Procfile) names the process on every line; without it, the name
// the process gives itself (runProcess), or its entry file until then.
let proc = config().PROC_NAME ?? path.basename(process.argv[1] ?? 'node').replace(/\.[cm]?[jt]s$/, '');

/** Names this process in its logs, unless PROC_NAME already does; returns the name in use. */
export function nameProcess(name: string): string {
  if (!config().PROC_NAME) proc = name;
  return proc;
}

/**
 * The process's logger, at the parsed config's LOG_LEVEL. Every line carries `proc` and, inside a request,
 * a job or an outbox batch, the `requestId` of the story it belongs to.
 */
export const logger = pino({
  level: config().LOG_LEVEL,
  redact: ['req.headers.authorization', '*.secret', '*.password'],
  mixin() {
    const c = currentCorrelation();
    return c ? { proc, requestId: c.requestId } : { proc };
  },
});
