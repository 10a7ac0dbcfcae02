import { z } from 'zod';
import { sql, type CommonQueryMethods } from './pool.js';
import type { PreparedQueries } from './prepared.js';

const insertedId = z.object({ id: z.number() });

export const quoteRow = z.object({
  id: z.number(),
  customerId: z.number(),
  fingerprint: z.string(),
  roomTypeId: z.number(),
  ratePlanId: z.number(),
  checkIn: z.string(),
  checkOut: z.string(),
  rooms: z.number(),
  guests: z.number(),
  /** Price per room of each night of [checkIn, checkOut). */
  nightPrices: z.array(z.number()),
  totalAmount: z.number(),
  depositAmount: z.number(),
  currency: z.string(),
  validUntil: z.string(),
});
export type QuoteRow = z.infer<typeof quoteRow>;

const columns = sql.fragment`id, customer_id AS "customerId", fingerprint, room_type_id AS "roomTypeId", rate_plan_id AS "ratePlanId",
  check_in::text AS "checkIn", check_out::text AS "checkOut", rooms, guests, to_json(night_prices) AS "nightPrices",
  total_amount AS "totalAmount", deposit_amount AS "depositAmount", currency, valid_until AS "validUntil"`;

/** Prepared, as the read before it (readStay): the two statements of a quote. */
export async function insertQuote(db: PreparedQueries, q: Omit<QuoteRow, 'id'>): Promise<number> {
  const rows = await db.query<{ id: number }>('insert-quote', `
    INSERT INTO quote (customer_id, fingerprint, room_type_id, rate_plan_id, check_in, check_out, rooms, guests,
                       night_prices, total_amount, deposit_amount, currency, valid_until)
    VALUES ($1, $2, $3, $4, $5::date, $6::date, $7, $8, $9::int8[], $10, $11, $12, $13::timestamptz)
    RETURNING id`,
  [
    q.customerId, q.fingerprint, q.roomTypeId, q.ratePlanId, q.checkIn, q.checkOut, q.rooms, q.guests, q.nightPrices, q.totalAmount,
    q.depositAmount, q.currency, q.validUntil,
  ]);
  return insertedId.parse(rows[0]).id;
}

/** The customer's quote; another customer's is null, as if it did not exist. */
export async function findQuote(db: CommonQueryMethods, id: number, customerId: number): Promise<QuoteRow | null> {
  return db.maybeOne(sql.type(quoteRow)`SELECT ${columns} FROM quote WHERE id = ${id} AND customer_id = ${customerId}`);
}

/** Quotes are useless once past validUntil; they are kept a while so a late hold still hears QUOTE_EXPIRED. */
export async function purgeQuotes(db: CommonQueryMethods, expiredForHours: number): Promise<number> {
  const r = await db.query(sql.typeAlias('void')`
    DELETE FROM quote WHERE valid_until < now() - make_interval(hours => ${expiredForHours})`);
  return r.rowCount;
}
