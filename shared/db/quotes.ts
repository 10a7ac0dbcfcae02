import { z } from 'zod';
import { sql, type CommonQueryMethods } from './pool.js';
import { isStatementError, type PreparedQueries } from './prepared.js';

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
  // `refused: 'throw'` (the default): a refusal rejects with the server's error, so there is always an id here.
  return (await insertQuotes(db, [q]))![0]!;
}

/**
 * Several quotes in one statement (one round trip, one commit): their ids, in input order. Each row takes its id
 * from the sequence before the INSERT, so the answer is paired with its input by position, not by the order
 * RETURNING happens to give. A refusal by the server (a CHECK) fails the whole statement; with `refused: 'null'`
 * it answers null instead, so that the caller can try each quote alone (it wrote nothing).
 */
export async function insertQuotes(db: PreparedQueries, qs: readonly Omit<QuoteRow, 'id'>[], refused: 'throw' | 'null' = 'throw'): Promise<number[] | null> {
  const rows = await db.query<unknown>('insert-quotes', `
    WITH i AS MATERIALIZED (
      SELECT nextval('quote_id_seq') AS id, i.*
      FROM unnest($1::int8[], $2::text[], $3::int8[], $4::int8[], $5::date[], $6::date[], $7::int4[], $8::int4[], $9::text[],
                  $10::int8[], $11::int8[], $12::text[], $13::timestamptz[]) WITH ORDINALITY
        AS i(customer_id, fingerprint, room_type_id, rate_plan_id, check_in, check_out, rooms, guests, night_prices,
             total_amount, deposit_amount, currency, valid_until, ord)
    ), ins AS (
      INSERT INTO quote (id, customer_id, fingerprint, room_type_id, rate_plan_id, check_in, check_out, rooms, guests,
                         night_prices, total_amount, deposit_amount, currency, valid_until)
      SELECT id, customer_id, fingerprint, room_type_id, rate_plan_id, check_in, check_out, rooms, guests,
             night_prices::int8[], total_amount, deposit_amount, currency, valid_until
      FROM i
    )
    SELECT id FROM i ORDER BY ord`,
  [
    qs.map((q) => q.customerId), qs.map((q) => q.fingerprint), qs.map((q) => q.roomTypeId), qs.map((q) => q.ratePlanId),
    qs.map((q) => q.checkIn), qs.map((q) => q.checkOut), qs.map((q) => q.rooms), qs.map((q) => q.guests),
    qs.map((q) => `{${q.nightPrices.join(',')}}`), qs.map((q) => q.totalAmount), qs.map((q) => q.depositAmount),
    qs.map((q) => q.currency), qs.map((q) => q.validUntil),
  ]).catch((e: unknown) => (refused === 'null' && isStatementError(e) ? null : Promise.reject(e)));
  if (rows === null) return null;
  if (rows.length !== qs.length) throw new Error(`insertQuotes: ${qs.length} quotes, ${rows.length} ids`);
  return rows.map((r) => insertedId.parse(r).id);
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
