import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { repoRoot } from '../shared/local-secrets.js';
import { PSP_CALLS, longestCallMs, providerLatenessS } from '../shared/psp/attempt-policy.js';
import { formatResults, runChecks } from './invariants/index.js';
import { seeded } from './chaos/rng.js';
import { apiClient, createStats, tokens } from './chaos/http.js';
import { startTopology } from './chaos/topology.js';
import { createWorkload, setupCatalogue } from './chaos/workload.js';
import { faultKinds, runSchedule, schedule } from './chaos/faults.js';
import { waitForQuiet } from './chaos/quiet.js';

// `npm run chaos -- --seconds N --seed S`: a seeded workload on a scaled-out topology of its own while faults fire
// on a seeded schedule; then it waits for quiet and runs the invariant checker. Exit 1 on any violation or 5xx
// (a 503 while a dependency is down is allowed). README "Proving it: check:invariants and chaos (issue 8)".

// A reader that went away (a test runner that timed out) must not crash the run before it takes its topology down.
process.stdout.on('error', () => undefined);
process.stderr.on('error', () => undefined);

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '60' },
    seed: { type: 'string' },
    concurrency: { type: 'string', default: '4' },
    'hold-ttl': { type: 'string', default: '10' },
    grace: { type: 'string', default: '15' },
    json: { type: 'string' },
    keep: { type: 'boolean', default: false },
  },
});
const seconds = Number(values.seconds);
const seed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed);
if (!(seconds > 0) || !Number.isInteger(seed)) {
  console.error('usage: npm run chaos -- --seconds N [--seed S] [--concurrency 4] [--hold-ttl 10] [--grace 15] [--json file] [--keep]');
  process.exit(2);
}
const holdTtlS = Number(values['hold-ttl']);
const graceS = Number(values.grace);
const started = Date.now();
const say = (line: string) => console.log(`[chaos ${((Date.now() - started) / 1000).toFixed(1).padStart(6)} s] ${line}`);

const root = repoRoot();
const runDir = mkdtempSync(path.join(tmpdir(), `chaos-${seed}-`));
say(`seed ${seed}, ${seconds} s of workload, HOLD_TTL_S=${holdTtlS}, PAYMENT_GRACE_S=${graceS}; logs in ${runDir}`);
const rng = seeded(seed);
// The fault schedule draws from its own stream: which faults fire when (and their endpoints, answers, victims' kinds)
// does not depend on how the workload's concurrent loops interleave.
const faultRng = seeded(seed ^ 0x5eed);
const t = await startTopology({ root, runDir, holdTtlS, graceS });
let exitCode = 1;
// Interrupted (Ctrl-C, a test's timeout): take the topology down before leaving.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    say(`${signal}: stopping the topology`);
    void t.stop(false).finally(() => process.exit(130));
  });
}
try {
  say(`topology up: db ${t.dbName}, redis ${t.env.REDIS_URL}, kafka ${t.brokers[0]}, psp ${t.pspUrl}, ${t.procs.map((p) => p.name).join(' ')}`);
  const stats = createStats();
  const ctx = { rng, call: apiClient(stats), stats, apiUrls: t.apiUrls, pspUrl: t.pspUrl, token: tokens(t.secrets.JWT_SECRET) };
  const workload = createWorkload(ctx, await setupCatalogue(ctx));

  const kinds = Object.keys(faultKinds(t.workerKinds));
  const workStart = Date.now();
  const faults = runSchedule(t, faultRng, schedule(faultRng, kinds, seconds), workStart, say);
  // Webhooks go to one API process, then the other, switching every few seconds.
  const switcher = setInterval(() => (t.psp.settings.webhookUrl = `${rng.pick(t.apiUrls)}/payments/webhook`), 3_000);
  const loops = Array.from({ length: Number(values.concurrency) }, async () => {
    while (Date.now() - workStart < seconds * 1000) {
      await workload.step().catch((e: unknown) => say(`operation threw: ${(e as Error).message}`));
      await new Promise((r) => setTimeout(r, rng.int(20, 200)));
    }
  });
  await Promise.all(loops);
  clearInterval(switcher);
  say(`workload done: ${Object.values(stats.ops).reduce((a, b) => a + b, 0)} operations; settling faults`);
  await faults.settle();
  await fetch(`${t.pspUrl}/sandbox/faults`, { method: 'DELETE' });
  // While work is still owed (holds open, refunds and notifications pending), every owed obligation must have its
  // live job: checked once the last fault is more than the invariant's grace behind (a FLUSHALL's rebuild included).
  await new Promise((r) => setTimeout(r, 12_000));
  const owed = await runChecks({
    databaseUrl: t.databaseUrl, graceS, psp: null, kafka: null, redis: { url: t.env.REDIS_URL!, prefix: t.queuePrefix }, only: ['jobs-armed'],
  });
  const midRun = owed.map((r) => ({ ...r, name: 'jobs-armed (while owed)' }));
  say(`jobs-armed while work is owed: checked ${midRun[0]?.checked ?? 0}, ${midRun[0]?.violations.length ?? 0} violations`);

  // An intent cancellation with a create in doubt waits out the provider's lateness before it settles.
  const lateMs = providerLatenessS(Number(t.env.LEASE_S ?? 30), longestCallMs(PSP_CALLS.timeoutMs, PSP_CALLS.retries, PSP_CALLS.backoffInitialMs)) * 1000;
  const quiet = await waitForQuiet(t, (holdTtlS + graceS) * 1000 + 30_000 + lateMs, say);
  say(quiet.quiet ? `quiet after ${(quiet.waitedMs / 1000).toFixed(1)} s` : `NOT quiet after ${(quiet.waitedMs / 1000).toFixed(1)} s: ${JSON.stringify(quiet.state)}`);
  const results = [...midRun, ...await runChecks({
    databaseUrl: t.databaseUrl, graceS, psp: { url: t.pspUrl, apiKey: t.secrets.PSP_API_KEY },
    kafka: { brokers: t.brokers, prefix: '' }, notifyLogPath: t.notifyLog,
    redis: { url: t.env.REDIS_URL!, prefix: t.queuePrefix },
  })];

  const allowed = (at: number) => faults.windows.some((w) => at >= w.from && at <= w.to);
  const allowed503 = stats.serverErrors.filter((e) => e.status === 503 && allowed(e.at));
  const serverErrors = stats.serverErrors.filter((e) => !(e.status === 503 && allowed(e.at)));
  const opsTotal = Object.values(stats.ops).reduce((a, b) => a + b, 0);
  const violations = results.reduce((s, r) => s + r.violations.length, 0);
  const missingFaults = kinds.filter((k) => !faults.counts[k]);

  console.log(`\n== chaos seed ${seed}, ${seconds} s ==`);
  console.log(`operations: ${opsTotal} (${Object.entries(stats.ops).map(([k, v]) => `${k} ${v}`).join(', ')}); transport errors ${stats.transportErrors()}`);
  console.log(`answers: ${Object.entries(stats.answers).sort().map(([k, v]) => `${k}: ${v}`).join(', ')}`);
  console.log(`faults injected: ${Object.values(faults.counts).reduce((a, b) => a + b, 0)} (${kinds.map((k) => `${k} ${faults.counts[k] ?? 0}`).join(', ')})`);
  console.log(`restarts: ${t.procs.map((p) => `${p.name} ${p.restarts()}`).join(', ')}`);
  console.log(`5xx: ${serverErrors.length} (503 while a dependency was down, allowed: ${allowed503.length})`);
  for (const e of serverErrors.slice(0, 10)) console.log(`  - ${e.status} ${e.op} ${e.path}: ${e.body}`);
  const serverErrorLogs = serverErrors.length ? unhandledErrorLines(runDir) : [];
  for (const l of serverErrorLogs) console.log(`  log: ${l}`);
  console.log(`quiet: ${quiet.quiet ? 'yes' : 'no'} after ${(quiet.waitedMs / 1000).toFixed(1)} s`);
  console.log(formatResults(results));
  console.log(violations || serverErrors.length ? `FAILED: ${violations} violations, ${serverErrors.length} 5xx` : 'all invariants hold, no 5xx');

  if (values.json) {
    writeFileSync(values.json, JSON.stringify({
      seed, seconds, opsTotal, operations: stats.ops, answers: stats.answers, faults: faults.counts, faultKinds: kinds, missingFaults,
      serverErrors: serverErrors.length, serverErrorSamples: serverErrors.slice(0, 20), serverErrorLogs, allowed503: allowed503.length,
      quiet: quiet.quiet, quietState: quiet.state, bookings: workload.bookings.length,
      invariants: results.map((r) => ({ name: r.name, checked: r.checked, violations: r.violations.length, samples: r.violations.slice(0, 10), note: r.note })),
      runDir,
    }, null, 2));
  }
  exitCode = violations || serverErrors.length ? 1 : 0;
} finally {
  say(values.keep ? `stopping (keeping database ${t.dbName})` : 'stopping');
  await t.stop(values.keep);
}
process.exit(exitCode);

/** The API processes' "unhandled error" log lines (what a 500 was), so a run that saw one says why. */
function unhandledErrorLines(dir: string): string[] {
  return readdirSync(dir).filter((f) => /^api-\d+\.log$/.test(f))
    .flatMap((f) => readFileSync(path.join(dir, f), 'utf8').split('\n').filter((l) => l.includes('"unhandled error"')).map((l) => `${f}: ${l.slice(0, 2000)}`))
    .slice(0, 10);
}
