import type { Deps } from './deps.js';
import { transact } from './transact.js';
import type { Actor } from '../domain/actor.js';
import { describeActor } from '../domain/actor.js';
import { notFound, validation } from '../domain/errors.js';
import { CALENDAR_FIELDS, type CalendarChange, type CalendarNight } from '../domain/rates.js';
import { findRatePlan, insertRatePlan, listCalendar, writeCalendar, type RatePlanRow } from '../db/rate-plans.js';
import { attributeChanges } from '../db/inventory.js';
import { writeEvent } from '../events/outbox.js';
import { requireOperator } from './catalogue.js';
import { checkRange } from './inventory.js';

/** A rate plan sells its room type in the room type's currency. */
export async function createRatePlan(deps: Deps, actor: Actor, roomTypeId: number, input: { name: string }): Promise<RatePlanRow> {
  requireOperator(actor);
  const plan = await insertRatePlan(deps.db, { roomTypeId, name: input.name });
  if (!plan) throw notFound('room type');
  return plan;
}

export type CalendarInput = { from: string; to: string; reason: string } & CalendarChange;

/**
 * Sets the given fields on every night of [from, to) or on none. The ledger entries (trigger) and the
 * rate.updated event commit with the change. Holds of the plan are serialised against it by the plan's row
 * lock (see findRatePlan): each one sees the calendar entirely before or entirely after this change.
 */
export async function setCalendar(deps: Deps, actor: Actor, ratePlanId: number, input: CalendarInput): Promise<{ nights: CalendarNight[] }> {
  requireOperator(actor);
  const count = checkRange(input.from, input.to);
  const change: CalendarChange = {};
  for (const f of CALENDAR_FIELDS) if (input[f] !== undefined) (change[f] as unknown) = input[f];
  if (Object.keys(change).length === 0) throw validation('body', `set at least one of ${CALENDAR_FIELDS.join(', ')}`);
  return transact(deps, async (tx) => {
    const plan = await findRatePlan(tx, ratePlanId, 'write');
    if (!plan) throw notFound('rate plan');
    await attributeChanges(tx, { actor: describeActor(actor), reason: input.reason, bookingId: null });
    await writeCalendar(tx, ratePlanId, input.from, count, change);
    const nights = await listCalendar(tx, ratePlanId, input.from, count);
    await writeEvent(tx, 'rate.updated', deps.clock.now(), {
      bookingId: null, ratePlanId, roomTypeId: plan.roomTypeId, currency: plan.currency, from: input.from, to: input.to,
      changes: change, reason: input.reason, actor: describeActor(actor),
    });
    return { nights };
  });
}

export async function getCalendar(deps: Deps, actor: Actor, ratePlanId: number, q: { from: string; to: string }): Promise<{ nights: CalendarNight[] }> {
  requireOperator(actor);
  const count = checkRange(q.from, q.to);
  if (!(await findRatePlan(deps.db, ratePlanId))) throw notFound('rate plan');
  return { nights: await listCalendar(deps.db, ratePlanId, q.from, count) };
}
