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
 * Lines wait in the buffer until it holds this much, or FLUSH_EVERY_MS passed. A write is whole lines of at most
 * PIPE_BUF (4096 bytes on Linux) together (sonic-boom's maxWrite; a longer line goes alone, as unbuffered): API
 * processes under API_WORKERS share one pipe, and only writes up to PIPE_BUF never interleave there.
 */
const BUFFER_BYTES = 2048;
const PIPE_BUF = 4096;
const FLUSH_EVERY_MS = 200;
/** pino's level number for warn: such a line and worse is written at once. */
const WARN = 40;

/**
 * Standard output, buffered. At info the API logs a line per request; written one by one (pino's default, a
 * write per line) each line is a system call and wakes the reader of the pipe (`npm start` forwards every
 * child's output). Buffered, a write carries ~8 access lines. A line waits at most FLUSH_EVERY_MS; warn and worse go
 * out at once, and what is left on exit (not on SIGKILL: then up to FLUSH_EVERY_MS of info lines are lost).
 *
 * The writes stay synchronous: sonic-boom's asynchronous mode flushes on exit with a loop that retries a write
 * to a closed pipe forever (EPIPE: no reader, say `npm start` killed with -9), and the process never exits.
 * Synchronous writes report EPIPE as an error, and pino then stops logging (test/integration/process-lifecycle).
 */
const stdout = pino.destination({ dest: 1, sync: true, minLength: BUFFER_BYTES, maxWrite: PIPE_BUF, periodicFlush: FLUSH_EVERY_MS });
process.once('exit', () => stdout.flush());

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
  hooks: {
    logMethod(args, method, level) {
      method.apply(this, args);
      if (level >= WARN) stdout.flush();
    },
  },
}, stdout);
