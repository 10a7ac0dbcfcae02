// What a process knows about its own stop: whether it has been asked to (readiness answers 503 from
// then on), and, under `npm start`, when its supervisor has gone.

let stopRequested = false;

/** True once this process has been asked to stop. */
export const shutdownRequested = (): boolean => stopRequested;

/** Called by the shutdown handler as soon as a stop begins. */
export function markStopRequested(): void {
  stopRequested = true;
}

// Under `npm start` (SUPERVISOR_PID set, an IPC channel to it) a process goes when its supervisor goes,
// however it died (kill -9 included: the kernel closes the channel). Watched from the moment this
// module loads, so a process still starting up goes too (at once: it has nothing to drain yet);
// once the shutdown handler is registered, it is a graceful stop. Processes started otherwise
// (compose, Procfile platforms, tests) are unaffected.
let supervisorGone: () => void = () => process.exit(1);
const supervisorPid = Number(process.env.SUPERVISOR_PID);
if (supervisorPid) {
  if (!process.connected || process.ppid !== supervisorPid) setImmediate(() => supervisorGone());
  else {
    process.once('disconnect', () => supervisorGone());
    // The channel must not keep an otherwise finished process alive.
    process.channel?.unref();
  }
}

/** What to do when the supervisor goes (the shutdown handler registers its graceful stop here). */
export function onSupervisorExit(stop: () => void): void {
  supervisorGone = stop;
}
