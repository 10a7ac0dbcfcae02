import pg from 'pg';
import type { Topology } from './topology.js';

// "Quiet": nothing left that the system owes. Every HOLD settled (holds are short in a chaos run: at most
// HOLD_TTL_S + PAYMENT_GRACE_S after the workload stops), no refund PENDING, no notification unsent,
// no intent cancellation open, the outbox published,
// the provider idle, and the notification receiver's count steady.

export interface QuietState {
  holds: number;
  pendingRefunds: number;
  unpublished: number;
  unsentNotifications: number;
  openIntentCancellations: number;
  providerPending: number;
  deliveries: number;
}

/** What is still owed, in PostgreSQL and at the provider (`pspUrl`'s sandbox): all 0 when quiet. */
export async function owedState(db: pg.Pool, pspUrl: string): Promise<Omit<QuietState, 'deliveries'>> {
  const { rows } = await db.query(`SELECT
      (SELECT count(*) FROM booking WHERE status = 'HOLD')::int AS holds,
      (SELECT count(*) FROM refund WHERE status = 'PENDING')::int AS "pendingRefunds",
      (SELECT count(*) FROM outbox WHERE published_at IS NULL)::int AS unpublished,
      (SELECT count(*) FROM notification WHERE sent_at IS NULL)::int AS "unsentNotifications",
      (SELECT count(*) FROM intent_cancellation WHERE done_at IS NULL)::int AS "openIntentCancellations"`);
  const idle = (await (await fetch(`${pspUrl}/sandbox/idle`)).json()) as { pending: number };
  return { ...(rows[0] as Omit<QuietState, 'providerPending' | 'deliveries'>), providerPending: idle.pending };
}

const snapshot = async (db: pg.Pool, t: Topology): Promise<QuietState> => ({ ...await owedState(db, t.pspUrl), deliveries: t.receiver.deliveries() });

/** Waits up to `timeoutMs` for quiet (steady for 3 s); returns whether it came and the last state seen. */
export async function waitForQuiet(t: Topology, timeoutMs: number, log: (line: string) => void): Promise<{ quiet: boolean; state: QuietState; waitedMs: number }> {
  const db = new pg.Pool({ connectionString: t.databaseUrl, max: 1 });
  const started = Date.now();
  let state: QuietState | null = null;
  let steadySince = 0;
  let lastLog = 0;
  try {
    while (Date.now() - started < timeoutMs) {
      const s = await snapshot(db, t).catch(() => null);
      if (s) {
        const done = s.holds === 0 && s.pendingRefunds === 0 && s.unpublished === 0 && s.unsentNotifications === 0 && s.openIntentCancellations === 0 && s.providerPending === 0;
        const same = state !== null && state.deliveries === s.deliveries;
        steadySince = done && same ? steadySince || Date.now() : 0;
        state = s;
        if (steadySince && Date.now() - steadySince >= 3_000) return { quiet: true, state: s, waitedMs: Date.now() - started };
        if (Date.now() - lastLog > 10_000) {
          lastLog = Date.now();
          log(`waiting for quiet: ${JSON.stringify(s)}`);
        }
      }
      await new Promise((r) => setTimeout(r, 500));
    }
    return { quiet: false, state: state ?? (await snapshot(db, t)), waitedMs: Date.now() - started };
  } finally {
    await db.end();
  }
}
