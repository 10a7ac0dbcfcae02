import { CheckExclusionConstraintViolationError, CheckIntegrityConstraintViolationError } from 'slonik';
import type { Deps } from './deps.js';
import type { Actor } from '../domain/actor.js';
import { describeActor } from '../domain/actor.js';
import { DomainError, forbidden, notFound, validation } from '../domain/errors.js';
import { MAX_MONEY } from '../domain/money.js';
import { checkCarHold, checkStayDates, stayDeposit, type BookingKind } from '../domain/booking.js';
import { carDays, soldOut } from '../domain/rates.js';
import { attributeChanges, moveRooms } from '../db/inventory.js';
import { insertCarHold, insertStayHold, type CarHoldOutcome } from '../db/bookings.js';
import { writeCarHold } from './car-hold-batches.js';
import { draftCarHeld, writeEvent } from '../events/outbox.js';
import { armHoldExpiry } from './effects/expiry.js';
import { afterStatement, transact } from './transact.js';
import type { CommonQueryMethods } from '../db/pool.js';
import { idempotent, type Outcome, type Remember } from './idempotency.js';
import { judgeLocked, judgeUnlocked, prepareStay, type PreparedStay } from './stay-pricing.js';

export type HoldInput =
  | { kind: 'car'; carId: number; from: Date; to: Date }
  | {
    kind: 'stay'; roomTypeId: number; checkIn: string; checkOut: string; rooms: number; guests: number;
    ratePlanId?: number; quoteId?: number;
    /** Set by prepareHold: the stay passed every check that needs the catalogue and the clock. */
    prepared?: PreparedStay;
  };

export interface HoldResult {
  bookingId: number;
  kind: BookingKind;
  status: 'HOLD';
  holdExpiresAt: string;
  depositAmount: number;
  /** Cars: dailyPrice × started days; stays on a rate plan: Σ nightly price × rooms; other stays: null. */
  totalAmount: number | null;
  currency: string;
  paymentUrl: string;
}

/** Everything about a hold request that can be refused without the database (the clock included). */
export function checkHoldInput(input: HoldInput, now: Date): void {
  if (input.kind === 'car') checkCarHold(input.from, input.to, now);
  else checkStayDates(input.checkIn, input.checkOut);
}

/**
 * Every check of a hold that can refuse it before anything is decided, the ones needing the catalogue and the
 * clock included (stays: see prepareStay). placeHold runs it before the rate limiter.
 */
export async function prepareHold(deps: Deps, actor: Actor, input: HoldInput): Promise<HoldInput> {
  if (actor.role !== 'customer') throw forbidden();
  checkHoldInput(input, deps.clock.now());
  if (input.kind === 'car' || input.prepared) return input;
  return { ...input, prepared: await prepareStay(deps, actor, input) };
}

export interface HoldOptions {
  /** Runs inside the hold's transaction once the hold is written (the idempotency key's completion). */
  beforeCommit?: Remember<HoldResult>;
}

/** What the hold books, as booking.held carries it. */
type Booked =
  | { kind: 'car'; carId: number; from: string; to: string }
  | {
    kind: 'stay'; roomTypeId: number; checkIn: string; checkOut: string; rooms: number; guests: number;
    ratePlanId: number | null; quoteId: number | null;
  };

/** One hold being made: who, when, until when, and what else must commit with it. */
interface Hold {
  actor: Actor;
  now: Date;
  expiresAt: Date;
  beforeCommit?: Remember<HoldResult>;
}

/** Creates a HOLD (car or stay) with its booking.held event, in one transaction; validation comes first. */
export async function holdBooking(deps: Deps, actor: Actor, input: HoldInput, opts: HoldOptions = {}): Promise<HoldResult> {
  if (actor.role !== 'customer') throw forbidden();
  const now = deps.clock.now();
  checkHoldInput(input, now);
  const hold: Hold = {
    actor, now, expiresAt: new Date(now.getTime() + deps.config.HOLD_TTL_S * 1000), beforeCommit: opts.beforeCommit,
  };
  return input.kind === 'car' ? holdCar(deps, hold, input) : holdStay(deps, hold, input);
}

/** What a hold wrote: the booking's id, its prices and what it books. */
interface Written {
  bookingId: number;
  depositAmount: number;
  totalAmount: number | null;
  currency: string;
  booked: Booked;
}

/** The answer to a hold. */
function holdResult(deps: Deps, hold: Hold, b: Written): HoldResult {
  return {
    bookingId: b.bookingId, kind: b.booked.kind, status: 'HOLD', holdExpiresAt: hold.expiresAt.toISOString(), depositAmount: b.depositAmount,
    totalAmount: b.totalAmount, currency: b.currency, paymentUrl: `${deps.config.PUBLIC_BASE_URL}/bookings/${b.bookingId}/pay`,
  };
}

/** The last step of every hold, inside its transaction: the answer, the event, and what must commit with them. */
async function commitHold(
  tx: CommonQueryMethods,
  deps: Deps,
  hold: Hold,
  b: Written,
): Promise<HoldResult> {
  const { bookingId, depositAmount, totalAmount, currency, booked } = b;
  const result = holdResult(deps, hold, b);
  await writeEvent(tx, 'booking.held', hold.now, {
    bookingId, customerId: hold.actor.id, ...booked, holdExpiresAt: result.holdExpiresAt, depositAmount, totalAmount, currency,
  });
  await hold.beforeCommit?.(tx, result);
  armHoldExpiry(tx, bookingId, hold.expiresAt);
  return result;
}

/**
 * A car: one INSERT whose exclusion constraint, not a prior read, decides whether the car is free. Without an
 * Idempotency-Key nothing else commits with it: the booking and booking.held are one statement, shared with the car
 * holds arriving at the same moment (car-hold-batches.ts).
 */
async function holdCar(deps: Deps, hold: Hold, input: Extract<HoldInput, { kind: 'car' }>): Promise<HoldResult> {
  const booked = { kind: 'car' as const, carId: input.carId, from: input.from.toISOString(), to: input.to.toISOString() };
  const newHold = {
    customerId: hold.actor.id, carId: input.carId, from: input.from, to: input.to, days: carDays(input.from, input.to), holdExpiresAt: hold.expiresAt,
  };
  if (!hold.beforeCommit) {
    const held = draftCarHeld(hold.now, { customerId: hold.actor.id, ...booked, holdExpiresAt: hold.expiresAt.toISOString() });
    const outcome = await writeCarHold(deps.prepared, { hold: newHold, held });
    if (outcome.kind !== 'held') throw carRefusal(outcome);
    const { row } = outcome;
    // One statement, no transaction to hang the job on: its expiry job is added right after it returned.
    await afterStatement(deps, [{ kind: 'expiry', bookingId: row.id, gen: 0, runAt: hold.expiresAt }]);
    return holdResult(deps, hold, { ...row, bookingId: row.id, booked });
  }
  try {
    return await transact(deps, async (tx) => {
      const row = await insertCarHold(tx, newHold);
      if (!row) throw notFound('car');
      return commitHold(tx, deps, hold, { ...row, bookingId: row.id, booked });
    });
  } catch (e) {
    if (e instanceof CheckExclusionConstraintViolationError) throw carRefusal({ kind: 'taken' });
    if (brokenCheck(e) === 'booking_total_bound') throw carRefusal({ kind: 'overBound' });
    throw e;
  }
}

/** The domain's answer to a car hold that was not written. */
function carRefusal(outcome: Exclude<CarHoldOutcome, { kind: 'held' }>): DomainError {
  switch (outcome.kind) {
    case 'taken': return new DomainError('CAR_UNAVAILABLE', 'the car is already booked for an overlapping period (turnaround included)');
    case 'noCar': return notFound('car');
    // The total is computed in the INSERT from the car's price (no read before it): migration 018's CHECK (or the
    // batch's same bound) refuses one beyond MAX_MONEY, and that is the request's fault (its span), not the server's.
    case 'overBound': return validation('to', `the dailyPrice × days would exceed ${MAX_MONEY} minor units`);
  }
}

/**
 * A stay: every night of it, under the nights' row locks taken in date order, or none. On a rate plan its
 * restrictions and prices are judged under those locks too (see judgeLocked), and the booking keeps them.
 */
async function holdStay(deps: Deps, hold: Hold, input: Extract<HoldInput, { kind: 'stay' }>): Promise<HoldResult> {
  const stay = input.prepared ?? (await prepareStay(deps, hold.actor, input));
  const deposit = stayDeposit(stay.depositPerRoom, stay.rooms);
  // Fast refusal from one unlocked snapshot, without queueing on the night locks, when the stay is already sold
  // out (the hot last-rooms case), restricted or repriced; acceptance is only ever decided under the locks below.
  await judgeUnlocked(deps.prepared, stay);
  try {
    return await transact(deps, async (tx) => {
      const price = await judgeLocked(tx, stay);
      const totalAmount = price?.totalAmount ?? null;
      const id = await insertStayHold(tx, {
        customerId: hold.actor.id, roomTypeId: stay.roomTypeId, checkIn: stay.checkIn, checkOut: stay.checkOut,
        rooms: stay.rooms, guests: stay.guests, depositAmount: deposit, currency: stay.currency, holdExpiresAt: hold.expiresAt,
        ratePlanId: stay.ratePlanId, quoteId: stay.quote?.id ?? null, totalAmount, nightPrices: price?.nights.map((n) => n.price) ?? null,
      });
      await attributeChanges(tx, { actor: describeActor(hold.actor), reason: 'hold', bookingId: id });
      await moveRooms(tx, { roomTypeId: stay.roomTypeId, from: stay.checkIn, to: stay.checkOut, rooms: stay.rooms, give: 'held' });
      return commitHold(tx, deps, hold, {
        bookingId: id, depositAmount: deposit, totalAmount, currency: stay.currency,
        booked: {
          kind: 'stay', roomTypeId: stay.roomTypeId, checkIn: stay.checkIn, checkOut: stay.checkOut, rooms: stay.rooms, guests: stay.guests,
          ratePlanId: stay.ratePlanId, quoteId: stay.quote?.id ?? null,
        },
      });
    });
  } catch (e) {
    if (brokenCheck(e)?.endsWith('_bound')) throw validation('rooms', `an amount of the stay would exceed ${MAX_MONEY} minor units`);
    // The CHECK is the last line of defence should the locked read above ever be bypassed.
    if (e instanceof CheckIntegrityConstraintViolationError) throw soldOut();
    throw e;
  }
}

/** The CHECK constraint a transaction's write broke, by name (slonik's typed error). */
function brokenCheck(e: unknown): string | null {
  return e instanceof CheckIntegrityConstraintViolationError ? e.constraint : null;
}

/** The per-customer budget of new holds (HOLD_RATE_LIMIT per HOLD_RATE_WINDOW_S). */
export interface HoldLimiter {
  /** Takes a slot for one hold being decided (waiting, boundedly, for ones in flight), or throws RATE_LIMITED. */
  acquire(customerId: number): Promise<HoldSlot>;
}

/**
 * A hold being decided: it counts only once confirmed (created); released, it never counted. Each settles once the
 * limiter has the decision and never rejects; placeHold does not wait for either.
 */
export interface HoldSlot {
  confirm(): Promise<void>;
  release(): Promise<void>;
}

export interface HoldDeps extends Deps {
  holdLimiter: HoldLimiter;
  /** Told the outcome of every hold attempt that reached the limiter: 'held' or the refusal's code. */
  onHoldAttempt?: (kind: BookingKind, outcome: string) => void;
}

export interface HoldRequest {
  idempotencyKey?: string;
  /** The request body as received: a replay of the key must carry the same. */
  body: unknown;
}

/**
 * POST /bookings: the body's shape (the route), then the Idempotency-Key (a replay answers here), then the
 * checks that need the clock or the catalogue, then the rate limit, then the hold. Only a created hold counts: its
 * slot is confirmed once the hold committed, a refused one's is released; a replay never reaches the limiter.
 */
export async function placeHold(
  deps: HoldDeps,
  actor: Actor,
  input: HoldInput,
  request: HoldRequest,
): Promise<{ outcome: Outcome<HoldResult>; replayed: boolean }> {
  if (actor.role !== 'customer') throw forbidden();
  const scope = request.idempotencyKey === undefined ? undefined : { customerId: actor.id, key: request.idempotencyKey, request: request.body };
  return idempotent(deps, scope, async (remember) => {
    // Every check that reads the clock or the catalogue (car: from in the future; stays: hotel date, guests, rate
    // plan, quote) comes after the key and before the limiter: a replay answers the first outcome even once its
    // `from` has passed or its quote has expired (the shape of the body was checked before, by the route).
    const prepared = await prepareHold(deps, actor, input);
    const slot = await deps.holdLimiter.acquire(actor.id);
    try {
      const result = await holdBooking(deps, actor, prepared, { beforeCommit: remember });
      // Committed, it counts. Neither decision is waited for: until it reaches the limiter the slot counts as
      // undecided, which only makes a concurrent request of this customer wait for it (HoldLimiter).
      void slot.confirm();
      deps.onHoldAttempt?.(input.kind, 'held');
      return result;
    } catch (e) {
      void slot.release();
      deps.onHoldAttempt?.(input.kind, e instanceof DomainError ? e.code.toLowerCase() : 'error');
      throw e;
    }
  });
}
