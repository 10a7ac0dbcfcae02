import { GroupCommit } from '../group-commit.js';
import type { PreparedDb } from '../db/prepared.js';
import { readStays, type StayRead, type StayReadQuery } from '../db/rate-plans.js';
import { insertQuote, insertQuotes, type QuoteRow } from '../db/quotes.js';
import { statementBatchSize } from '../metrics/work.js';

// A quote is two statements, the read of its stay and the INSERT of its row; a stay hold's fast refusal is the same
// read. Requests arriving at the same moment share each statement (GroupCommit): at 1,000 quotes/s, one round trip,
// one plan and one commit for a batch instead of one each, the cost that dominated a quote on both sides of the wire.

/** Statements in flight per pool and kind: two keep the database fed while one answer travels back. */
const MAX_IN_FLIGHT = 2;
/** Requests per statement at most. */
const MAX_BATCH = 32;

type NewQuote = Omit<QuoteRow, 'id'>;

interface Batches {
  reads: GroupCommit<StayReadQuery, StayRead>;
  inserts: GroupCommit<NewQuote, number>;
}

const byPool = new WeakMap<PreparedDb, Batches>();

function batchesOf(db: PreparedDb): Batches {
  let b = byPool.get(db);
  if (!b) {
    b = {
      reads: new GroupCommit({ run: (qs) => runReads(db, qs), maxInFlight: MAX_IN_FLIGHT, maxBatch: MAX_BATCH }),
      inserts: new GroupCommit({ run: (qs) => runInserts(db, qs), maxInFlight: MAX_IN_FLIGHT, maxBatch: MAX_BATCH }),
    };
    byPool.set(db, b);
  }
  return b;
}

/** readStay, sharing one statement with the stays read at the same moment. */
export const readStayShared = (db: PreparedDb, q: StayReadQuery): Promise<StayRead> => batchesOf(db).reads.submit(q);

/** insertQuote, sharing one statement (and commit) with the quotes written at the same moment: the new quote's id. */
export const insertQuoteShared = (db: PreparedDb, q: NewQuote): Promise<number> => batchesOf(db).inserts.submit(q);

async function runReads(db: PreparedDb, qs: readonly StayReadQuery[]): Promise<PromiseSettledResult<StayRead>[]> {
  statementBatchSize.observe({ statement: 'read-stays' }, qs.length);
  // A read refuses nothing on its own (its inputs were checked): a throw is the connection's, and fails the batch.
  return (await readStays(db, qs)).map((value) => ({ status: 'fulfilled', value }));
}

async function runInserts(db: PreparedDb, qs: readonly NewQuote[]): Promise<PromiseSettledResult<number>[]> {
  const ids = await insertQuotes(db, qs, 'null');
  if (ids !== null) {
    statementBatchSize.observe({ statement: 'insert-quotes' }, qs.length);
    return ids.map((value) => ({ status: 'fulfilled', value }));
  }
  // Refused by the server (a CHECK), it wrote nothing: each quote alone, so only the one at fault fails.
  const results: PromiseSettledResult<number>[] = [];
  for (const q of qs) {
    statementBatchSize.observe({ statement: 'insert-quotes' }, 1);
    results.push(await insertQuote(db, q).then(
      (value) => ({ status: 'fulfilled' as const, value }), (reason: unknown) => ({ status: 'rejected' as const, reason })));
  }
  return results;
}
