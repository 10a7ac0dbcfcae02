// A preload that profiles a running system's processes on demand (`--cpu-prof` is refused in NODE_OPTIONS, and it
// would profile a whole run, start-up included). Each process named in PROFILE_PROCS (comma list of Procfile names,
// default api) starts V8's sampling profiler on its first SIGUSR2 and, on the next, writes
// $PROFILE_DIR/<name>-<pid>-<n>.cpuprofile (default /tmp), for Chrome DevTools or any .cpuprofile reader:
//   NODE_OPTIONS="--require $PWD/bench/profile-on-signal.cjs" PROFILE_PROCS=api,expiry npm run bench:peak -- --phases holds
//   kill -USR2 <api pid>; sleep 10; kill -USR2 <api pid>      # in the phase's steady window
'use strict';
const name = process.env.PROC_NAME;
const wanted = (process.env.PROFILE_PROCS || 'api').split(',').map((s) => s.trim());
if (name && wanted.includes(name)) {
  const inspector = require('node:inspector');
  const fs = require('node:fs');
  const path = require('node:path');
  const session = new inspector.Session();
  session.connect();
  let running = false;
  let n = 0;
  process.on('SIGUSR2', () => {
    if (!running) {
      running = true;
      session.post('Profiler.enable', () => session.post('Profiler.setSamplingInterval', { interval: 250 }, () => session.post('Profiler.start')));
      return;
    }
    running = false;
    session.post('Profiler.stop', (err, r) => {
      if (!err) fs.writeFileSync(path.join(process.env.PROFILE_DIR || '/tmp', `${name}-${process.pid}-${n++}.cpuprofile`), JSON.stringify(r.profile));
    });
  });
}
