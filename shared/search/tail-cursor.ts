import type { Snapshot } from '../db/search-feed.js';

/**
 * Where a tail of a table by id may safely resume, with no gap. Ids come from a sequence when a row is
 * written, but rows become visible when their transactions commit, in another order: a reader that resumed
 * after the highest id it saw would skip a row committed later with a smaller id. Rule used here: a row's
 * transaction owns an xid before the row's id is drawn (outbox: outbox_next_id(); ledger: written by a
 * trigger after the row change it records). So a row with an id below one the reader saw, but invisible to
 * the read's snapshot, belongs to a transaction that snapshot lists as in progress. Once every one of those
 * (of this database) has ended, a later read — from the old cursor — sees all such rows, and the cursor may
 * move up to the highest id of the earlier read. Reads always start at `cursor`: rows between it and the head
 * are read (and applied, idempotently) again until it moves.
 */
export class TailCursor {
  /** Every row with an id at or below this is final (its transaction ended) and was read. */
  cursor: number;
  private candidate: { upTo: number; waitFor: bigint[]; since: number } | null = null;

  constructor(start: number) {
    this.cursor = start;
  }

  /** After a read from `cursor`: `maxId` is the highest id it returned (null: none), `snapshot` its snapshot. */
  read(maxId: number | null, snapshot: Snapshot, now = Date.now()): void {
    const c = this.candidate;
    if (c && c.waitFor.every((x) => ended(snapshot, x))) {
      this.cursor = Math.max(this.cursor, c.upTo);
      this.candidate = null;
    }
    if (!this.candidate && maxId !== null && maxId > this.cursor) {
      this.candidate = { upTo: maxId, waitFor: snapshot.xip, since: now };
    }
  }

  /** Xids the cursor has been waiting on for over `ms` (to check whether they belong to other databases). */
  waitingLongerThan(ms: number, now = Date.now()): bigint[] {
    const c = this.candidate;
    return c && now - c.since > ms ? c.waitFor : [];
  }

  /** Stop waiting for these (transactions of other databases, which cannot write this table). */
  ignore(xids: ReadonlySet<bigint>): void {
    if (this.candidate) this.candidate.waitFor = this.candidate.waitFor.filter((x) => !xids.has(x));
  }
}

/** The transaction has ended (committed or aborted) as of the snapshot. */
export const ended = (s: Snapshot, xid: bigint): boolean => xid < s.xmin || (xid < s.xmax && !s.xip.includes(xid));
