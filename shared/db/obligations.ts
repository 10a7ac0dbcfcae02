import { z } from 'zod';
import { sql, type CommonQueryMethods } from './pool.js';
import type { JobRequest, ObligationKind } from '../domain/jobs.js';
import { NOTIFY_CHANNELS } from '../domain/notifications.js';

// The obligations as the reconciler reads them: every open row of a kind, with its job's generation and due time.
// Each kind is one table and its partial due index (booking_hold_due_idx, refund_due_idx, notification_due_idx,
// intent_cancellation_due_idx), so "what is overdue" is one index probe that finds nothing when all is well.
// A HOLD is owed an expiry job until holdExpiresAt, and a payment-check job from then on once pay was asked
// (the expiry job hands it over; see shared/usecases/expiry.ts).

interface KindSql {
  /** The table and alias. */
  from: ReturnType<typeof sql.fragment>;
  /** The row is owed a job of this kind (may use $now: the application's clock, for bookings). */
  open: (now: string) => ReturnType<typeof sql.fragment>;
  due: ReturnType<typeof sql.fragment>;
  /** "now" for the due column: the application's clock for bookings, the database's for the others. */
  clock: (now: string) => ReturnType<typeof sql.fragment>;
  /** A text tie-break after the due time (keyset pages). */
  tieBreak: ReturnType<typeof sql.fragment>;
  columns: ReturnType<typeof sql.fragment>;
  /** The key columns in a CAS on the row. */
  keyMatch: (o: JobRequest) => ReturnType<typeof sql.fragment>;
}

const appNow = (now: string) => sql.fragment`${now}::timestamptz`;
const dbNow = () => sql.fragment`now()`;
const paycheckPhase = (now: string) => sql.fragment`(t.pay_requested_at IS NOT NULL AND t.hold_expires_at <= ${now}::timestamptz)`;
const bookingColumns = sql.fragment`t.id AS "bookingId", NULL::bigint AS "refundId", NULL::text AS "eventId", NULL::text AS channel`;

const KINDS: Record<ObligationKind, KindSql> = {
  expiry: {
    from: sql.fragment`booking t`, open: (now) => sql.fragment`t.status = 'HOLD' AND NOT ${paycheckPhase(now)}`, due: sql.fragment`t.next_expiry_check_at`,
    clock: appNow, tieBreak: sql.fragment`t.id::text`, columns: bookingColumns, keyMatch: (o) => sql.fragment`t.id = ${o.bookingId}`,
  },
  'payment-checks': {
    from: sql.fragment`booking t`, open: (now) => sql.fragment`t.status = 'HOLD' AND ${paycheckPhase(now)}`, due: sql.fragment`t.next_expiry_check_at`,
    clock: appNow, tieBreak: sql.fragment`t.id::text`, columns: bookingColumns, keyMatch: (o) => sql.fragment`t.id = ${o.bookingId}`,
  },
  'intent-cancellations': {
    from: sql.fragment`intent_cancellation t`, open: () => sql.fragment`t.done_at IS NULL`, due: sql.fragment`t.next_attempt_at`, clock: dbNow,
    tieBreak: sql.fragment`t.booking_id::text`,
    columns: sql.fragment`t.booking_id AS "bookingId", NULL::bigint AS "refundId", NULL::text AS "eventId", NULL::text AS channel`,
    keyMatch: (o) => sql.fragment`t.booking_id = ${o.bookingId}`,
  },
  refunds: {
    from: sql.fragment`refund t`, open: () => sql.fragment`t.status = 'PENDING'`, due: sql.fragment`t.next_attempt_at`, clock: dbNow,
    tieBreak: sql.fragment`t.id::text`,
    columns: sql.fragment`t.booking_id AS "bookingId", t.id AS "refundId", NULL::text AS "eventId", NULL::text AS channel`,
    keyMatch: (o) => sql.fragment`t.id = ${o.kind === 'refunds' ? o.refundId : 0}`,
  },
  notifications: {
    from: sql.fragment`notification t`, open: () => sql.fragment`t.sent_at IS NULL`, due: sql.fragment`t.next_attempt_at`, clock: dbNow,
    tieBreak: sql.fragment`t.event_id::text || t.channel`,
    columns: sql.fragment`t.booking_id AS "bookingId", NULL::bigint AS "refundId", t.event_id::text AS "eventId", t.channel`,
    keyMatch: (o) => (o.kind === 'notifications' ? sql.fragment`t.event_id = ${o.eventId}::uuid AND t.channel = ${o.channel}` : sql.fragment`false`),
  },
};

const obligationRow = z.object({
  bookingId: z.number(), refundId: z.number().nullable(), eventId: z.string().nullable(), channel: z.enum(NOTIFY_CHANNELS).nullable(),
  gen: z.number(), dueAt: z.string().transform((s) => new Date(s)), dueText: z.string(), tieBreak: z.string(),
});
type ObligationRow = z.infer<typeof obligationRow>;

/** An open obligation: the job it is owed (key, gen, due time) and its page cursor. */
export type Obligation = JobRequest & { runAt: Date; cursor: { due: string; tieBreak: string } };

function toObligation(kind: ObligationKind, r: ObligationRow): Obligation {
  // The cursor keeps the due time as the database wrote it (microseconds), not as a Date (milliseconds).
  const base = { gen: r.gen, runAt: r.dueAt, cursor: { due: r.dueText, tieBreak: r.tieBreak } };
  if (kind === 'refunds') return { kind, bookingId: r.bookingId, refundId: r.refundId!, ...base };
  if (kind === 'notifications') return { kind, bookingId: r.bookingId, eventId: r.eventId!, channel: r.channel!, ...base };
  return { kind, bookingId: r.bookingId, ...base };
}

const select = (k: KindSql) => sql.fragment`
  SELECT ${k.columns}, t.job_gen AS gen, ${k.due} AS "dueAt", ${k.due}::text AS "dueText", ${k.tieBreak} AS "tieBreak" FROM ${k.from}`;

/** Open obligations of `kind` past due by more than `graceMs` (most overdue first). */
export async function overdueObligations(db: CommonQueryMethods, kind: ObligationKind, now: Date, graceMs: number, limit: number): Promise<Obligation[]> {
  const k = KINDS[kind];
  const iso = now.toISOString();
  const rows = await db.any(sql.type(obligationRow)`
    ${select(k)} WHERE ${k.open(iso)} AND ${k.due} < ${k.clock(iso)} - make_interval(secs => ${graceMs / 1000})
    ORDER BY ${k.due} LIMIT ${limit}`);
  return rows.map((r) => toObligation(kind, r));
}

/** A page of every open obligation of `kind`, due soonest first, after `cursor` (the rebuild after Redis lost the queue). */
export async function openObligations(
  db: CommonQueryMethods, kind: ObligationKind, now: Date, after: Obligation['cursor'] | null, limit: number,
): Promise<Obligation[]> {
  const k = KINDS[kind];
  const page = after
    ? sql.fragment`AND (${k.due}, ${k.tieBreak}) > (${after.due}::timestamptz, ${after.tieBreak})`
    : sql.fragment``;
  const rows = await db.any(sql.type(obligationRow)`
    ${select(k)} WHERE ${k.open(now.toISOString())} ${page} ORDER BY ${k.due}, ${k.tieBreak} LIMIT ${limit}`);
  return rows.map((r) => toObligation(kind, r));
}

/** CAS: the obligation's next generation, if it is still open and still at `seen`; else null (someone moved it on). */
export async function bumpGeneration(db: CommonQueryMethods, o: Obligation, now: Date): Promise<number | null> {
  const k = KINDS[o.kind];
  const table = k.from;
  return db.maybeOneFirst(sql.type(z.object({ gen: z.number() }))`
    UPDATE ${table} SET job_gen = t.job_gen + 1
    WHERE ${k.keyMatch(o)} AND t.job_gen = ${o.gen} AND ${k.open(now.toISOString())}
    RETURNING t.job_gen AS gen`);
}

const bookingJobRow = z.object({
  kind: z.enum(['booking', 'intent-cancellations', 'refunds', 'notifications']),
  refundId: z.number().nullable(), eventId: z.string().nullable(), channel: z.enum(NOTIFY_CHANNELS).nullable(), gen: z.number(),
});

/**
 * Every obligation row of one booking, open or settled, with its current generation: the keys of every job it can
 * have had (gen 0 … gen of each). The booking row stands for its expiry and payment-check jobs (one job_gen).
 */
export async function bookingJobKeys(db: CommonQueryMethods, bookingId: number): Promise<JobRequest[]> {
  const rows = await db.any(sql.type(bookingJobRow)`
    SELECT 'booking' AS kind, NULL::bigint AS "refundId", NULL::text AS "eventId", NULL::text AS channel, job_gen AS gen
      FROM booking WHERE id = ${bookingId}
    UNION ALL SELECT 'intent-cancellations', NULL, NULL, NULL, job_gen FROM intent_cancellation WHERE booking_id = ${bookingId}
    UNION ALL SELECT 'refunds', id, NULL, NULL, job_gen FROM refund WHERE booking_id = ${bookingId}
    UNION ALL SELECT 'notifications', NULL, event_id::text, channel, job_gen FROM notification WHERE booking_id = ${bookingId}`);
  return rows.flatMap((r): JobRequest[] => {
    if (r.kind === 'booking') return [{ kind: 'expiry', bookingId, gen: r.gen }, { kind: 'payment-checks', bookingId, gen: r.gen }];
    if (r.kind === 'refunds') return [{ kind: 'refunds', bookingId, refundId: r.refundId!, gen: r.gen }];
    if (r.kind === 'notifications') return [{ kind: 'notifications', bookingId, eventId: r.eventId!, channel: r.channel!, gen: r.gen }];
    return [{ kind: 'intent-cancellations', bookingId, gen: r.gen }];
  });
}
