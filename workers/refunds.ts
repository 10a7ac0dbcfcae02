import { payRefund } from '../shared/usecases/refunds.js';
import { claimDueRefunds } from '../shared/db/refunds.js';
import { isEntry } from '../shared/process.js';
import { runLoopProcess } from './loop-process.js';
import type { Deps } from '../shared/usecases/deps.js';
import { startDueLoop } from './due-loop.js';

// The refund worker: a due loop over PENDING refund rows (no BullMQ queue: a Redis flush loses nothing).
// A pass over a refund makes at most one provider POST; the lease outlives it by far (2 s per provider attempt).
export const REFUND_LEASE_S = 60;
const BATCH = 10;

export function startRefundLoop(deps: Deps, o: { idleMaxMs?: number } = {}) {
  return startDueLoop({
    name: 'refunds', job: 'refund', batch: BATCH, idleMaxMs: o.idleMaxMs ?? 1000,
    claim: (n) => claimDueRefunds(deps.db, n, REFUND_LEASE_S),
    work: (refund) => payRefund(deps, refund),
  });
}

if (isEntry(import.meta.url)) await runLoopProcess('refunds', (deps) => startRefundLoop(deps));
