import { CheckExclusionConstraintViolationError, CheckIntegrityConstraintViolationError } from 'slonik';
import type { Deps } from './deps.js';
import type { Actor } from '../domain/actor.js';
import { describeActor } from '../domain/actor.js';
import { DomainError, forbidden, notFound } from '../domain/errors.js';
import { checkCarHold, checkStayDates, stayDeposit, type BookingKind } from '../domain/booking.js';
import { findRoomType } from '../db/hotels.js';
import { lockNights, listNights, attributeChanges, moveRooms, type NightRow } from '../db/inventory.js';
import { insertCarHold, insertStayHold } from '../db/bookings.js';
import { writeEvent } from '../events/outbox.js';
import type { CommonQueryMethods } from '../db/pool.js';
import { idempotent, type Outcome, type Remember } from './idempotency.js';

export type HoldInput =
  | { kind: 'car'; carId: number; from: Date; to: Date }
  | { kind: 'stay'; roomTypeId: number; checkIn: string; checkOut: string; rooms: number };

export interface HoldResult {
  bookingId: number;
  kind: BookingKind;
  status: 'HOLD';
  holdExpiresAt: string;
  depositAmount: number;
  currency: string;
  paymentUrl: string;
}

/** Everything about a hold request that can be refused without the database (the clock included). */
export function checkHoldInput(input: HoldInput, now: Date): void {
  if (input.kind === 'car') checkCarHold(input.from, input.to, now);
  else checkStayDates(input.checkIn, input.checkOut);
}

export interface HoldOptions {
  /** Runs inside the hold's transaction once the hold is written (the idempotency key's completion). */
  beforeCommit?: Remember<HoldResult>;
}

/** What the hold books, as booking.held carries it. */
type Booked =
  | { kind: 'car'; carId: number; from: string; to: string }
  | { kind: 'stay'; roomTypeId: number; checkIn: string; checkOut: string; rooms: number };

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
  const hold: Hold = { actor, now, expiresAt: new Date(now.getTime() + deps.config.HOLD_TTL_S * 1000), beforeCommit: opts.beforeCommit };
  return input.kind === 'car' ? holdCar(deps, hold, input) : holdStay(deps, hold, input);
}

/** The last step of every hold, inside its transaction: the answer, the event, and what must commit with them. */
async function commitHold(
  tx: CommonQueryMethods,
  deps: Deps,
  hold: Hold,
  b: { bookingId: number; depositAmount: number; currency: string; booked: Booked },
): Promise<HoldResult> {
  const { bookingId, depositAmount, currency, booked } = b;
  const result: HoldResult = {
    bookingId, kind: booked.kind, status: 'HOLD', holdExpiresAt: hold.expiresAt.toISOString(), depositAmount, currency,
    paymentUrl: `${deps.config.PUBLIC_BASE_URL}/bookings/${bookingId}/pay`,
  };
  await writeEvent(tx, 'booking.held', hold.now, {
    bookingId, customerId: hold.actor.id, ...booked, holdExpiresAt: result.holdExpiresAt, depositAmount, currency,
  });
  await hold.beforeCommit?.(tx, result);
  return result;
}

/** A car: one INSERT whose exclusion constraint, not a prior read, decides whether the car is free. */
async function holdCar(deps: Deps, hold: Hold, input: Extract<HoldInput, { kind: 'car' }>): Promise<HoldResult> {
  try {
    return await deps.db.transaction(async (tx) => {
      const row = await insertCarHold(tx, { customerId: hold.actor.id, carId: input.carId, from: input.from, to: input.to, holdExpiresAt: hold.expiresAt });
      if (!row) throw notFound('car');
      return commitHold(tx, deps, hold, {
        bookingId: row.id, depositAmount: row.depositAmount, currency: row.currency,
        booked: { kind: 'car', carId: input.carId, from: input.from.toISOString(), to: input.to.toISOString() },
      });
    });
  } catch (e) {
    if (e instanceof CheckExclusionConstraintViolationError) {
      throw new DomainError('CAR_UNAVAILABLE', 'the car is already booked for an overlapping period (turnaround included)');
    }
    throw e;
  }
}

const soldOut = () => new DomainError('SOLD_OUT', 'some night of the stay lacks the rooms asked for');

/** A stay: every night of it, under the nights' row locks taken in date order, or none. */
async function holdStay(deps: Deps, hold: Hold, input: Extract<HoldInput, { kind: 'stay' }>): Promise<HoldResult> {
  const roomType = await findRoomType(deps.db, input.roomTypeId);
  if (!roomType) throw notFound('room type');
  const deposit = stayDeposit(roomType.depositAmount, input.rooms);
  const wanted = checkStayDates(input.checkIn, input.checkOut);
  const enough = (nights: readonly NightRow[]) => nights.length === wanted && nights.every((n) => n.available >= input.rooms);
  // Fast refusal without queueing on the night locks when the stay is already sold out (the hot
  // last-rooms case); acceptance is only ever decided under the locks below.
  if (!enough(await listNights(deps.db, roomType.id, input.checkIn, input.checkOut))) throw soldOut();
  try {
    return await deps.db.transaction(async (tx) => {
      if (!enough(await lockNights(tx, roomType.id, input.checkIn, input.checkOut))) throw soldOut();
      const id = await insertStayHold(tx, {
        customerId: hold.actor.id, roomTypeId: roomType.id, checkIn: input.checkIn, checkOut: input.checkOut,
        rooms: input.rooms, depositAmount: deposit, currency: roomType.currency, holdExpiresAt: hold.expiresAt,
      });
      await attributeChanges(tx, { actor: describeActor(hold.actor), reason: 'hold', bookingId: id });
      await moveRooms(tx, { roomTypeId: roomType.id, from: input.checkIn, to: input.checkOut, rooms: input.rooms, give: 'held' });
      return commitHold(tx, deps, hold, {
        bookingId: id, depositAmount: deposit, currency: roomType.currency,
        booked: { kind: 'stay', roomTypeId: roomType.id, checkIn: input.checkIn, checkOut: input.checkOut, rooms: input.rooms },
      });
    });
  } catch (e) {
    // The CHECK is the last line of defence should the locked read above ever be bypassed.
    if (e instanceof CheckIntegrityConstraintViolationError) throw soldOut();
    throw e;
  }
}

/** The per-customer budget of new holds (HOLD_RATE_LIMIT per HOLD_RATE_WINDOW_S). */
export interface HoldLimiter {
  /** Takes one of the customer's slots, or throws RATE_LIMITED. */
  acquire(customerId: number): Promise<{ release(): Promise<void> }>;
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
 * POST /bookings: validation (the clock included) first, then the Idempotency-Key, then the rate limit,
 * then the hold. Only a created hold keeps its limiter slot; a replay never reaches the limiter.
 */
export async function placeHold(
  deps: HoldDeps,
  actor: Actor,
  input: HoldInput,
  request: HoldRequest,
): Promise<{ outcome: Outcome<HoldResult>; replayed: boolean }> {
  if (actor.role !== 'customer') throw forbidden();
  checkHoldInput(input, deps.clock.now());
  const scope = request.idempotencyKey === undefined ? undefined : { customerId: actor.id, key: request.idempotencyKey, request: request.body };
  return idempotent(deps, scope, async (remember) => {
    const slot = await deps.holdLimiter.acquire(actor.id);
    try {
      const result = await holdBooking(deps, actor, input, { beforeCommit: remember });
      deps.onHoldAttempt?.(input.kind, 'held');
      return result;
    } catch (e) {
      await slot.release();
      deps.onHoldAttempt?.(input.kind, e instanceof DomainError ? e.code.toLowerCase() : 'error');
      throw e;
    }
  });
}
