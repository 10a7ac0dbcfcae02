import { z } from 'zod';
import { sql, type CommonQueryMethods } from './pool.js';

export const carRow = z.object({
  id: z.number(),
  hostId: z.number(),
  plate: z.string(),
  model: z.string(),
  city: z.string(),
  dailyPrice: z.number(),
  depositAmount: z.number(),
  currency: z.string(),
  turnaroundMinutes: z.number(),
});
export type CarRow = z.infer<typeof carRow>;

const columns = sql.fragment`id, host_id AS "hostId", plate, model, city, daily_price AS "dailyPrice",
  deposit_amount AS "depositAmount", currency, turnaround_minutes AS "turnaroundMinutes"`;

export type NewCar = Omit<CarRow, 'id'>;

export async function insertCar(db: CommonQueryMethods, car: NewCar): Promise<CarRow> {
  return db.one(sql.type(carRow)`
    INSERT INTO car (host_id, plate, model, city, daily_price, deposit_amount, currency, turnaround_minutes)
    VALUES (${car.hostId}, ${car.plate}, ${car.model}, ${car.city}, ${car.dailyPrice}, ${car.depositAmount},
            ${car.currency}, ${car.turnaroundMinutes})
    RETURNING ${columns}`);
}

export async function findCar(db: CommonQueryMethods, id: number): Promise<CarRow | null> {
  return db.maybeOne(sql.type(carRow)`SELECT ${columns} FROM car WHERE id = ${id}`);
}

export async function findCarByPlate(db: CommonQueryMethods, plate: string): Promise<CarRow | null> {
  return db.maybeOne(sql.type(carRow)`SELECT ${columns} FROM car WHERE plate = ${plate}`);
}

export interface CarSearch {
  city: string;
  from: Date;
  to: Date;
  limit: number;
}

/**
 * Cars a hold for [from, to) would be accepted on now: [from, to + turnaround) overlaps no blocked range.
 * Written so that its plan does not depend on planner statistics (autovacuum is off; a fresh catalogue has
 * none): the city's cars are read in price order (an index scan, or a sort of one city's cars) and each is
 * checked with one probe of the exclusion constraint's GiST index (OFFSET 0 keeps the check a per-car
 * subplan; as a join, the planner without statistics hashed every active booking instead), stopping at
 * `limit`. ~1–5 ms, whatever the number of bookings.
 */
export async function searchAvailableCars(db: CommonQueryMethods, q: CarSearch): Promise<readonly CarRow[]> {
  return db.any(sql.type(carRow)`
    SELECT ${columns} FROM (
      SELECT * FROM car WHERE city = ${q.city} ORDER BY daily_price, id OFFSET 0
    ) c
    WHERE NOT EXISTS (
      SELECT 1 FROM booking b
      WHERE b.car_id = c.id
        AND b.kind = 'car' AND b.status IN ('HOLD', 'CONFIRMED', 'ON_TRIP')
        AND b.blocked && tstzrange(${q.from.toISOString()}::timestamptz,
                                   ${q.to.toISOString()}::timestamptz + make_interval(mins => c.turnaround_minutes), '[)')
      OFFSET 0)
    ORDER BY c.daily_price, c.id
    LIMIT ${q.limit}`);
}
