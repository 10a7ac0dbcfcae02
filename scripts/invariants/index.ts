import { readFileSync } from 'node:fs';
import pg from 'pg';
import { carNoOverlap } from './car-overlap.js';
import { stayInventory } from './stay-inventory.js';
import { paymentsAccounted } from './payments.js';
import { depositsBalanced } from './deposits.js';
import { refundsSettled } from './refunds.js';
import { intentsCancelled } from './intents.js';
import { outboxPublished } from './outbox-kafka.js';
import { notificationsOnce } from './notifications.js';
import { holdsExpire } from './holds.js';
import { jobsArmed } from './jobs-armed.js';
import type { CheckContext, Invariant, InvariantReport, NotifyDelivery } from './types.js';

export type { CheckContext, Invariant, InvariantReport, NotifyDelivery } from './types.js';

/** In the order they are printed. */
export const INVARIANTS: readonly Invariant[] = [
  carNoOverlap, stayInventory, paymentsAccounted, depositsBalanced, refundsSettled, intentsCancelled, outboxPublished, notificationsOnce, holdsExpire, jobsArmed,
];

export interface CheckOptions {
  databaseUrl: string;
  graceS: number;
  psp: CheckContext['psp'];
  kafka: CheckContext['kafka'];
  redis?: CheckContext['redis'];
  /** Path of the notification receiver's log (JSON lines), if any. */
  notifyLogPath?: string | null;
  /** Only these invariants (by name); all when empty. */
  only?: string[];
}

export type CheckResult = InvariantReport & { name: string };

export function readNotifyLog(path: string): NotifyDelivery[] {
  return readFileSync(path, 'utf8').split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as NotifyDelivery);
}

/** Runs the invariants against one REPEATABLE READ, READ ONLY snapshot of the database (writes are refused). */
export async function runChecks(o: CheckOptions): Promise<CheckResult[]> {
  const client = new pg.Client({ connectionString: o.databaseUrl, application_name: 'check-invariants' });
  await client.connect();
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const ctx: CheckContext = {
      query: async <R>(text: string, params?: unknown[]) => (await client.query(text, params)).rows as R[],
      graceS: o.graceS,
      psp: o.psp,
      kafka: o.kafka,
      notifyLog: o.notifyLogPath ? readNotifyLog(o.notifyLogPath) : null,
      redis: o.redis ?? null,
    };
    const results: CheckResult[] = [];
    for (const inv of INVARIANTS) {
      if (o.only?.length && !o.only.includes(inv.name)) continue;
      try {
        results.push({ name: inv.name, ...(await inv.check(ctx)) });
      } catch (e) {
        results.push({ name: inv.name, checked: 0, violations: [`the check itself failed: ${(e as Error).message}`] });
      }
    }
    await client.query('ROLLBACK');
    return results;
  } finally {
    await client.end();
  }
}

/** One line per invariant, then up to `samples` violations of each. */
export function formatResults(results: CheckResult[], samples = 5): string {
  const width = Math.max(...results.map((r) => r.name.length));
  const lines: string[] = [];
  for (const r of results) {
    const mark = r.violations.length ? 'FAIL' : 'ok  ';
    lines.push(`${mark} ${r.name.padEnd(width)}  checked=${r.checked} violations=${r.violations.length}${r.note ? `  (${r.note})` : ''}`);
    for (const v of r.violations.slice(0, samples)) lines.push(`       - ${v}`);
    if (r.violations.length > samples) lines.push(`       ... and ${r.violations.length - samples} more`);
  }
  return lines.join('\n');
}
