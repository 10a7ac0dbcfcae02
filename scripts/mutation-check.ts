import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { MUTATIONS, type Mutation } from './mutations.js';

// `npm run check:mutations [-- --only "no cancel,a 429 never sent"] [--baseline] [--list]`: breaks the
// implementation on purpose (scripts/mutations.ts), once per break, and shows that the mended test then fails, and
// passes again without the break. Everything happens in a scratch copy of the working tree (its files as they are,
// committed or not; node_modules linked), so the tree itself is never touched, even when the check is interrupted;
// the copy is removed on exit, Ctrl-C and SIGTERM. --baseline also runs each test's version from before it was
// mended (`weakAt`) against the break, to show it passed. Slow (a vitest run or three per break): not in npm test.

const ROOT = path.resolve(import.meta.dirname, '..');
const { values } = parseArgs({ options: { only: { type: 'string' }, baseline: { type: 'boolean' }, list: { type: 'boolean' } } });

if (values.list) {
  for (const m of MUTATIONS) console.log(`${m.status === 'active' ? ' ' : 'R'} ${m.name}: ${m.why} → ${m.test}${m.filter ? ` -t "${m.filter}"` : ''}`);
  process.exit(0);
}
const only = values.only?.split(',').map((s) => s.trim());
const unknown = only?.filter((n) => !MUTATIONS.some((m) => m.name === n)) ?? [];
if (unknown.length) {
  console.error(`no such mutation: ${unknown.join(', ')} (see --list)`);
  process.exit(2);
}
const chosen = MUTATIONS.filter((m) => (only ? only.includes(m.name) : m.status === 'active'));

const scratch = mkdtempSync(path.join(tmpdir(), 'mutation-check-'));
let child: ChildProcess | null = null;
function cleanUp(): void {
  if (child?.pid && child.exitCode === null) {
    try {
      process.kill(-child.pid, 'SIGKILL'); // vitest and its workers: the group it leads
    } catch {
      // already gone
    }
  }
  rmSync(scratch, { recursive: true, force: true });
}
process.on('exit', cleanUp);
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(signal, () => {
    console.error(`\n${signal}: removing the scratch copy ${scratch}`);
    process.exit(130);
  });
}

/** The working tree's files (tracked, and untracked but not ignored), as they are now, into the scratch copy. */
function copyTree(): void {
  const files = execFileSync('git', ['ls-files', '-co', '--exclude-standard', '-z'], { cwd: ROOT, encoding: 'utf8' }).split('\0').filter(Boolean);
  for (const f of files) {
    mkdirSync(path.dirname(path.join(scratch, f)), { recursive: true });
    try {
      copyFileSync(path.join(ROOT, f), path.join(scratch, f));
    } catch {
      // listed but deleted in the working tree
    }
  }
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(scratch, 'node_modules'));
}

interface Run {
  ran: number;
  failed: number;
  ok: boolean;
  seconds: number;
  tail: string;
}

/** One vitest run of the mutation's test in the scratch copy. */
function runTest(m: Mutation): Promise<Run> {
  const report = path.join(scratch, '.mutation-report.json');
  rmSync(report, { force: true });
  const args = ['vitest', 'run', m.test, ...(m.filter ? ['-t', m.filter] : []), '--reporter=json', `--outputFile=${report}`];
  const t0 = Date.now();
  return new Promise((resolve) => {
    let out = '';
    child = spawn('npx', args, { cwd: scratch, detached: true, env: { ...process.env, ...m.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.on('data', (c: Buffer) => (out = (out + c.toString()).slice(-6000)));
    child.stderr!.on('data', (c: Buffer) => (out = (out + c.toString()).slice(-6000)));
    child.on('exit', (code) => {
      child = null;
      let r: { numPassedTests?: number; numFailedTests?: number; numFailedTestSuites?: number } = {};
      try {
        r = JSON.parse(readFileSync(report, 'utf8'));
      } catch {
        // no report: counted as nothing ran
      }
      // A file that failed outside its tests (a hook) counts as one failure: its tests may all read "skipped".
      const failed = (r.numFailedTests ?? 0) || Math.min(1, r.numFailedTestSuites ?? 0);
      resolve({ ran: (r.numPassedTests ?? 0) + (r.numFailedTests ?? 0), failed, ok: code === 0, seconds: Math.round((Date.now() - t0) / 1000), tail: out.slice(-1500) });
    });
  });
}

/** Applies the edits in the scratch copy; returns how to undo them, or why they do not apply. */
function apply(m: Mutation): (() => void) | string {
  const originals = new Map<string, string>();
  for (const e of m.edits) {
    const file = path.join(scratch, e.file);
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      return `${e.file} does not exist`;
    }
    if (!originals.has(file)) originals.set(file, text);
    const n = text.split(e.search).length - 1;
    if (n !== 1) return `${e.file}: the search text occurs ${n} times (retarget it)`;
    writeFileSync(file, text.replace(e.search, () => e.replace));
  }
  return () => originals.forEach((text, file) => writeFileSync(file, text));
}

/** Puts the test files of `commit` in place (those that existed then); returns how to undo it. */
function oldTest(m: Mutation, commit: string): () => void {
  const file = path.join(scratch, m.test);
  const now = readFileSync(file, 'utf8');
  writeFileSync(file, execFileSync('git', ['show', `${commit}:${m.test}`], { cwd: ROOT, encoding: 'utf8' }));
  return () => writeFileSync(file, now);
}

interface Outcome { name: string; broken: string; unbroken: string; old: string; good: boolean }

async function check(m: Mutation, unbrokenRuns: Map<string, Run>): Promise<Outcome> {
  const outcome: Outcome = { name: m.name, broken: '', unbroken: '', old: '', good: false };
  const undo = apply(m);
  if (typeof undo === 'string') return { ...outcome, broken: `not applied: ${undo}` };
  let broken: Run;
  let old: Run | null = null;
  try {
    broken = await runTest(m);
    if (values.baseline && m.weakAt) {
      const restore = oldTest(m, m.weakAt);
      try {
        old = await runTest(m);
      } finally {
        restore();
      }
    }
  } finally {
    undo();
  }
  const key = JSON.stringify([m.test, m.filter, m.env]);
  const unbroken = unbrokenRuns.get(key) ?? (await runTest(m));
  unbrokenRuns.set(key, unbroken);
  const caught = broken.failed > 0;
  outcome.broken = caught ? `fails (${broken.failed} of ${broken.ran}, ${broken.seconds} s)` : `PASSES (${broken.ran} ran): not caught`;
  outcome.unbroken = unbroken.ok && unbroken.ran > 0 ? `passes (${unbroken.ran}, ${unbroken.seconds} s)` : `FAILS (${unbroken.failed} of ${unbroken.ran})`;
  if (old) outcome.old = old.ok && old.ran > 0 ? `passed (${old.ran}): the old test missed it` : `failed (${old.failed} of ${old.ran})`;
  outcome.good = caught && unbroken.ok && unbroken.ran > 0;
  if (!outcome.good) console.log(`--- ${m.name}: last output\n${(caught ? unbroken : broken).tail}`);
  return outcome;
}

copyTree();
console.log(`mutation check in ${scratch}: ${chosen.map((m) => m.name).join('; ')}`);
const unbrokenRuns = new Map<string, Run>();
const outcomes: Outcome[] = [];
for (const m of chosen) {
  const o = await check(m, unbrokenRuns);
  outcomes.push(o);
  console.log(`${o.good ? 'ok  ' : 'FAIL'} ${o.name}: with the break the test ${o.broken}; without it ${o.unbroken}${o.old ? `; the test before mending ${o.old}` : ''}`);
}
const bad = outcomes.filter((o) => !o.good);
console.log(`${outcomes.length - bad.length} of ${outcomes.length} breaks caught by their test${bad.length ? `; not: ${bad.map((o) => o.name).join(', ')}` : ''}`);
process.exitCode = bad.length ? 1 : 0;
