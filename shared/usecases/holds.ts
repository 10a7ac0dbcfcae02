import { CheckExclusionConstraintViolationError, CheckIntegrityConstraintViolationError } from 'slonik';
import type { Deps } from './deps.js';
import type { Actor } from '../domain/actor.js';
import { describeActor } from '../domain/actor.js';
import { DomainError, forbidden, notFound } from '../domain/errors.js';
import { checkCarHold, checkStayDates, stayDeposit, type BookingKind } from '../domain/booking.js';
import { findRoomType } from '../db/hotels.js';
import { lockNights, listNights, attributeChanges, moveRooms, type NightRow } from '../db/inventory.js';
import { insertCarHold, insertStayHold } from '../db/bookings.js';
import { completeKey } from '../db/idempotency.js';
import { writeEvent } from '../events/outbox.js';
import type { CommonQueryMethods } from '../db/pool.js';

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
  /** Completes the customer's idempotency key in the same transaction as the hold. */
  idempotencyKey?: string;
}

/** What the hold books, as booking.held carries it. */
type Booked =
  | { kind: 'car'; carId: number; from: string; to: string }
  | { kind: 'stay'; roomTypeId: number; checkIn: string; checkOut: string; rooms: number };

const soldOut = () => new DomainError('SOLD_OUT', 'some night of the stay lacks the rooms asked for');

export async function holdBooking(deps: Deps, actor: Actor, input: HoldInput, opts: HoldOptions = {}): Promise<HoldResult> {
  if (actor.role !== 'customer') throw forbidden();
  const now = deps.clock.now();
  const holdExpiresAt = new Date(now.getTime() + deps.config.HOLD_TTL_S * 1000);
  checkHoldInput(input, now);

  const finish = async (tx: CommonQueryMethods, bookingId: number, depositAmount: number, currency: string, booked: Booked) => {
    const result: HoldResult = {
      bookingId, kind: input.kind, status: 'HOLD', holdExpiresAt: holdExpiresAt.toISOString(), depositAmount, currency,
      paymentUrl: `${deps.config.PUBLIC_BASE_URL}/bookings/${bookingId}/pay`,
    };
    await writeEvent(tx, 'booking.held', now, {
      bookingId, customerId: actor.id, ...booked, holdExpiresAt: result.holdExpiresAt, depositAmount, currency,
    });
    // Losing this means a request that took over our expired lease answered first: roll the hold back.
    if (opts.idempotencyKey && !(await completeKey(tx, actor.id, opts.idempotencyKey, 201, result))) {
      throw new DomainError('IDEMPOTENCY_IN_PROGRESS', 'a request with this Idempotency-Key was completed by another request');
    }
    return result;
  };

  if (input.kind === 'car') {
    try {
      return await deps.db.transaction(async (tx) => {
        const hold = await insertCarHold(tx, { customerId: actor.id, carId: input.carId, from: input.from, to: input.to, holdExpiresAt });
        if (!hold) throw notFound('car');
        return finish(tx, hold.id, hold.depositAmount, hold.currency, {
          kind: 'car', carId: input.carId, from: input.from.toISOString(), to: input.to.toISOString(),
        });
      });
    } catch (e) {
      if (e instanceof CheckExclusionConstraintViolationError) {
        throw new DomainError('CAR_UNAVAILABLE', 'the car is already booked for an overlapping period (turnaround included)');
      }
      throw e;
    }
  }

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
        customerId: actor.id, roomTypeId: roomType.id, checkIn: input.checkIn, checkOut: input.checkOut,
        rooms: input.rooms, depositAmount: deposit, currency: roomType.currency, holdExpiresAt,
      });
      await attributeChanges(tx, { actor: describeActor(actor), reason: 'hold', bookingId: id });
      await moveRooms(tx, { roomTypeId: roomType.id, from: input.checkIn, to: input.checkOut, rooms: input.rooms, give: 'held' });
      return finish(tx, id, deposit, roomType.currency, {
        kind: 'stay', roomTypeId: roomType.id, checkIn: input.checkIn, checkOut: input.checkOut, rooms: input.rooms,
      });
    });
  } catch (e) {
    // The CHECK is the last line of defence should the locked read above ever be bypassed.
    if (e instanceof CheckIntegrityConstraintViolationError) throw soldOut();
    throw e;
  }
}
