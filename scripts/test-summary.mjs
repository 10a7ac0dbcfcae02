// The closing line of `npm test`: `P passed, F failed, S skipped, E errored files`, read by any CI (.ci/run totals it).
// Usage: node scripts/test-summary.mjs <vitest JSON report> <vitest exit status>
//
// A file errored when something outside its tests failed: its collection, a beforeAll/afterAll hook. Vitest then
// marks the tests that did not run as skipped, so "failed" alone would read 0 on a red run; an errored file counts
// as failed too. An error outside every file (an unhandled rejection) makes vitest exit non-zero with every test
// passed: it counts as one errored file. So F is 0 exactly when the run was green.
import { readFileSync } from 'node:fs';

const [report, status = '0'] = process.argv.slice(2);
const exitStatus = Number(status);
let r = null;
try {
  r = JSON.parse(readFileSync(report, 'utf8'));
} catch {
  // No report at all: vitest did not get to write one.
}
const files = r?.testResults ?? [];
const errored = files.filter((f) => f.status === 'failed' && (f.message || !f.assertionResults.some((a) => a.status === 'failed')));
for (const f of errored) console.log(`errored: ${f.name} — ${String(f.message || 'failed outside its tests').split('\n')[0].slice(0, 200)}`);
// Each failed test by name with its message's first line, so the tail of a long log says what failed.
for (const f of files) {
  for (const a of f.assertionResults.filter((t) => t.status === 'failed')) {
    const why = String(a.failureMessages?.[0] ?? '').split('\n')[0].slice(0, 300);
    console.log(`failed: ${f.name.replace(process.cwd() + '/', '')} > ${a.fullName} — ${why}`);
  }
}
let erroredCount = errored.length;
const failedTests = r?.numFailedTests ?? 0;
if (exitStatus !== 0 && failedTests + erroredCount === 0) {
  console.log(r ? `errored: vitest exited ${exitStatus} with no failed test or file (an error outside every file, see above)` : 'errored: vitest wrote no report');
  erroredCount = 1;
}
const skipped = (r?.numPendingTests ?? 0) + (r?.numTodoTests ?? 0);
console.log(`${r?.numPassedTests ?? 0} passed, ${failedTests + erroredCount} failed, ${skipped} skipped, ${erroredCount} errored files`);
