import { z } from 'zod';
import { sql, type CommonQueryMethods } from './pool.js';

export const hotelRow = z.object({
  id: z.number(),
  name: z.string(),
  city: z.string(),
  timezone: z.string(),
  checkInTime: z.string(),
});
export type HotelRow = z.infer<typeof hotelRow>;

export const roomTypeRow = z.object({
  id: z.number(),
  hotelId: z.number(),
  name: z.string(),
  depositAmount: z.number(),
  currency: z.string(),
  maxGuests: z.number(),
});
export type RoomTypeRow = z.infer<typeof roomTypeRow>;

const hotelColumns = sql.fragment`id, name, city, timezone, to_char(check_in_time, 'HH24:MI') AS "checkInTime"`;
const roomTypeColumns = sql.fragment`id, hotel_id AS "hotelId", name, deposit_amount AS "depositAmount", currency, max_guests AS "maxGuests"`;

export async function insertHotel(db: CommonQueryMethods, h: Omit<HotelRow, 'id'>): Promise<HotelRow> {
  return db.one(sql.type(hotelRow)`
    INSERT INTO hotel (name, city, timezone, check_in_time)
    VALUES (${h.name}, ${h.city}, ${h.timezone}, ${h.checkInTime}::time)
    RETURNING ${hotelColumns}`);
}

export async function findHotel(db: CommonQueryMethods, id: number): Promise<HotelRow | null> {
  return db.maybeOne(sql.type(hotelRow)`SELECT ${hotelColumns} FROM hotel WHERE id = ${id}`);
}

export async function insertRoomType(db: CommonQueryMethods, r: Omit<RoomTypeRow, 'id'>): Promise<RoomTypeRow> {
  return db.one(sql.type(roomTypeRow)`
    INSERT INTO room_type (hotel_id, name, deposit_amount, currency, max_guests)
    VALUES (${r.hotelId}, ${r.name}, ${r.depositAmount}, ${r.currency}, ${r.maxGuests})
    RETURNING ${roomTypeColumns}`);
}

export async function findRoomType(db: CommonQueryMethods, id: number): Promise<RoomTypeRow | null> {
  return db.maybeOne(sql.type(roomTypeRow)`SELECT ${roomTypeColumns} FROM room_type WHERE id = ${id}`);
}

/** Lookups by name, for idempotent seeding (names are not unique: the lowest id wins). */
export async function findHotelByName(db: CommonQueryMethods, name: string, city: string): Promise<HotelRow | null> {
  return db.maybeOne(sql.type(hotelRow)`SELECT ${hotelColumns} FROM hotel WHERE name = ${name} AND city = ${city} ORDER BY id LIMIT 1`);
}

export async function findRoomTypeByName(db: CommonQueryMethods, hotelId: number, name: string): Promise<RoomTypeRow | null> {
  return db.maybeOne(sql.type(roomTypeRow)`
    SELECT ${roomTypeColumns} FROM room_type WHERE hotel_id = ${hotelId} AND name = ${name} ORDER BY id LIMIT 1`);
}

export const availabilityRow = z.object({
  roomTypeId: z.number(),
  hotelId: z.number(),
  hotelName: z.string(),
  name: z.string(),
  available: z.number(),
  depositAmount: z.number(),
  currency: z.string(),
});

/** Room types in the city with at least `rooms` free on every night of [checkIn, checkOut). */
export async function searchAvailability(
  db: CommonQueryMethods,
  q: { city: string; checkIn: string; checkOut: string; rooms: number; nights: number },
) {
  return db.any(sql.type(availabilityRow)`
    SELECT rt.id AS "roomTypeId", h.id AS "hotelId", h.name AS "hotelName", rt.name,
           min(n.sellable - n.held - n.confirmed)::int AS available, rt.deposit_amount AS "depositAmount", rt.currency
    FROM hotel h
    JOIN room_type rt ON rt.hotel_id = h.id
    JOIN room_night n ON n.room_type_id = rt.id AND n.night >= ${q.checkIn}::date AND n.night < ${q.checkOut}::date
    WHERE h.city = ${q.city}
    GROUP BY rt.id, h.id
    HAVING count(*) = ${q.nights} AND min(n.sellable - n.held - n.confirmed) >= ${q.rooms}
    ORDER BY min(n.sellable - n.held - n.confirmed) DESC, rt.id
    LIMIT 200`);
}
