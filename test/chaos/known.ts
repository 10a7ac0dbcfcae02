/**
 * Invariants (or `5xx`) the short chaos run (short.test.ts) is known to find violated, each with the regression in
 * test/regressions/known-bugs.test.ts that reproduces it deterministically (`it.fails` until fixed). Their
 * assertions in the chaos test are skipped while listed here: whoever merges the fix removes the name.
 *
 * Before issue 8's fixes, seed 8 found intents-cancelled, holds-expire, refunds-settled,
 * notifications-once and a 500 (see known-bugs.test.ts); all are fixed in this branch's merge.
 */
export const KNOWN_VIOLATED: Record<string, string> = {};
