import { GroupCommit } from '../group-commit.js';
import { insertCarHoldWithEvent, type CarHoldOutcome, type CarHoldWrite } from '../db/bookings.js';
import { insertCarHoldsWithEvents } from '../db/car-hold-batch.js';
import type { PreparedDb } from '../db/prepared.js';
import { carHoldBatchSize } from '../metrics/work.js';

/**
 * Statements in flight per pool of named statements: the API's holds keep at most this many connections busy, and
 * everything arriving meanwhile shares the next statement. Two keep the database fed while one answer travels back.
 */
const MAX_IN_FLIGHT = 2;
/** Holds per statement at most: a bound on one statement's locks and on what one failure takes down with it. */
const MAX_BATCH = 32;

const commits = new WeakMap<PreparedDb, GroupCommit<CarHoldWrite, CarHoldOutcome>>();

/**
 * Writes a car hold with its booking.held event, sharing one statement with the car holds that are waiting at the
 * same moment (see GroupCommit; one hold per car in a statement). Each hold gets its own outcome.
 */
export function writeCarHold(db: PreparedDb, write: CarHoldWrite): Promise<CarHoldOutcome> {
  let commit = commits.get(db);
  if (!commit) {
    commit = new GroupCommit({ run: (batch) => runBatch(db, batch), maxInFlight: MAX_IN_FLIGHT, maxBatch: MAX_BATCH, key: (w) => w.hold.carId });
    commits.set(db, commit);
  }
  return commit.submit(write);
}

async function runBatch(db: PreparedDb, batch: readonly CarHoldWrite[]): Promise<PromiseSettledResult<CarHoldOutcome>[]> {
  if (batch.length === 1) {
    carHoldBatchSize.observe(1);
    return Promise.allSettled([insertCarHoldWithEvent(db, batch[0]!)]);
  }
  // A throw (the connection, an answer that does not parse) fails the whole batch: whether it committed is unknown,
  // and a retry could write a hold twice.
  const outcomes = await insertCarHoldsWithEvents(db, batch);
  // Refused by the server, it wrote nothing: each hold is tried on its own, and only the one at fault fails.
  if (outcomes === null) return eachOnItsOwn(db, batch);
  carHoldBatchSize.observe(batch.length);
  return outcomes.map((value) => ({ status: 'fulfilled', value }));
}

/** The batch's holds as single statements, MAX_IN_FLIGHT at a time (no more connections than the batches use). */
async function eachOnItsOwn(db: PreparedDb, batch: readonly CarHoldWrite[]): Promise<PromiseSettledResult<CarHoldOutcome>[]> {
  const results: PromiseSettledResult<CarHoldOutcome>[] = new Array(batch.length);
  let next = 0;
  const lane = async () => {
    for (let i = next++; i < batch.length; i = next++) {
      carHoldBatchSize.observe(1);
      results[i] = await insertCarHoldWithEvent(db, batch[i]!).then(
        (value) => ({ status: 'fulfilled' as const, value }), (reason: unknown) => ({ status: 'rejected' as const, reason }));
    }
  };
  await Promise.all(Array.from({ length: Math.min(MAX_IN_FLIGHT, batch.length) }, lane));
  return results;
}
