import { parseConfig, type Config } from '../shared/config.js';
import { migrate } from '../shared/db/migrate.js';
import { closeDeps, createDeps } from '../shared/runtime.js';
import { noJobs } from '../shared/queues/producer.js';
import { DomainError } from '../shared/domain/errors.js';
import type { Actor } from '../shared/domain/actor.js';
import type { Deps } from '../shared/usecases/deps.js';
import { createCar, createHotel, createRoomType } from '../shared/usecases/catalogue.js';
import { adjustInventory } from '../shared/usecases/inventory.js';
import { createRatePlan, setCalendar } from '../shared/usecases/rates.js';
import { findRatePlanByName } from '../shared/db/rate-plans.js';
import { findCarByPlate } from '../shared/db/cars.js';
import { findHotelByName, findRoomTypeByName, type HotelRow, type RoomTypeRow } from '../shared/db/hotels.js';
import { CARS, CUSTOMER_ID, HOTELS, OPERATOR_ID, STOCK_NIGHTS, type DemoRoomType } from './seed-data.js';
import { signToken } from './token.js';

// `npm run seed`: the demo catalogue through the use cases (the API's own validation and events), then
// ids and tokens as shell lines: `eval "$(npm run -s seed)"` sets them in the current shell. Running it
// again reuses what exists (cars by plate, hotels and room types by name) and re-sets the next 90 nights.

const operator: Actor = { id: OPERATOR_ID, role: 'operator' };

export interface SeededRoomType extends RoomTypeRow {
  hotel: HotelRow;
  demo: DemoRoomType;
}

/** `YYYY-MM-DD` of `date` in `timeZone`, plus `days`. */
function localDate(date: Date, timeZone: string, days = 0): string {
  const today = new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(date);
  const d = new Date(`${today}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + days);
  return d.toISOString().slice(0, 10);
}

async function seedCars(deps: Deps) {
  const cars = [];
  for (const c of CARS) {
    const existing = await findCarByPlate(deps.db, c.plate);
    cars.push(existing ?? (await createCar(deps, { id: c.hostId, role: 'host' }, { ...c, currency: 'VND', turnaroundMinutes: 120 })));
  }
  return cars;
}

async function seedHotels(deps: Deps, log: (line: string) => void): Promise<SeededRoomType[]> {
  const seeded: SeededRoomType[] = [];
  for (const h of HOTELS) {
    const hotel = (await findHotelByName(deps.db, h.name, h.city))
      ?? (await createHotel(deps, operator, { name: h.name, city: h.city, timezone: h.timezone, checkInTime: h.checkInTime }));
    const from = localDate(deps.clock.now(), hotel.timezone);
    const to = localDate(deps.clock.now(), hotel.timezone, STOCK_NIGHTS);
    for (const demo of h.roomTypes) {
      const rt = (await findRoomTypeByName(deps.db, hotel.id, demo.name))
        ?? (await createRoomType(deps, operator, { hotelId: hotel.id, name: demo.name, depositAmount: demo.depositAmount, currency: 'VND', maxGuests: 2 }));
      try {
        await adjustInventory(deps, operator, rt.id, { from, to, sellable: demo.sellable, reason: 'demo seed' });
      } catch (e) {
        // Bookings made since the last run may hold more rooms than the demo sells: keep their stock.
        if (!(e instanceof DomainError && e.code === 'INVENTORY_BELOW_COMMITTED')) throw e;
        log(`# ${hotel.name} / ${rt.name}: stock kept (more rooms are held or sold than the demo's ${demo.sellable})`);
      }
      seeded.push({ ...rt, hotel, demo });
    }
  }
  return seeded;
}

const RATE_PLAN_NAME = 'Flexible';

/** A "Flexible" plan per room type, priced at the demo's nightly price on the same STOCK_NIGHTS nights. */
async function seedRatePlans(deps: Deps, roomTypes: SeededRoomType[]): Promise<{ id: number; roomTypeId: number; name: string }[]> {
  const plans = [];
  for (const rt of roomTypes) {
    const plan = (await findRatePlanByName(deps.db, rt.id, RATE_PLAN_NAME))
      ?? (await createRatePlan(deps, operator, rt.id, { name: RATE_PLAN_NAME }));
    await setCalendar(deps, operator, plan.id, {
      from: localDate(deps.clock.now(), rt.hotel.timezone),
      to: localDate(deps.clock.now(), rt.hotel.timezone, STOCK_NIGHTS),
      reason: 'demo seed', price: rt.demo.nightlyPrice,
    });
    plans.push(plan);
  }
  return plans;
}

export async function seed(config: Config, log: (line: string) => void): Promise<void> {
  await migrate(config.DATABASE_URL, () => {});
  // The catalogue owes no jobs: no Redis connection to keep the process alive.
  const deps = await createDeps(config, { jobs: noJobs });
  try {
    const cars = await seedCars(deps);
    const roomTypes = await seedHotels(deps, log);
    const ratePlans = await seedRatePlans(deps, roomTypes);
    const hostId = cars[0]!.hostId;
    log(`# Demo catalogue in ${new URL(config.DATABASE_URL).pathname.slice(1)}: ${cars.length} cars, ${roomTypes.length} room types with ${STOCK_NIGHTS} nights of stock`);
    for (const c of cars) log(`#   car ${c.id}: ${c.plate} ${c.model}, ${c.city}, host ${c.hostId}, ${c.dailyPrice} ${c.currency}/day, deposit ${c.depositAmount}`);
    for (const r of roomTypes) log(`#   room type ${r.id}: ${r.hotel.name} (hotel ${r.hotel.id}, ${r.hotel.city}) ${r.name}, deposit ${r.depositAmount} ${r.currency}, ${r.demo.sellable} rooms/night`);
    for (const p of ratePlans) log(`#   rate plan ${p.id}: room type ${p.roomTypeId} ${p.name}`);
    log(`# Tokens (24 h) for customer ${CUSTOMER_ID}, host ${hostId} (owns car ${cars[0]!.id}), operator ${OPERATOR_ID}:`);
    log(`export CUSTOMER_TOKEN=${await signToken(config.JWT_SECRET, 'customer', String(CUSTOMER_ID))}`);
    log(`export HOST_TOKEN=${await signToken(config.JWT_SECRET, 'host', String(hostId))}`);
    log(`export OPERATOR_TOKEN=${await signToken(config.JWT_SECRET, 'operator', String(OPERATOR_ID))}`);
    log(`export CAR_ID=${cars[0]!.id} CAR_CITY='${cars[0]!.city}'`);
    log(`export ROOM_TYPE_ID=${roomTypes[0]!.id} HOTEL_CITY='${roomTypes[0]!.hotel.city}'`);
    if (ratePlans[0]) log(`export RATE_PLAN_ID=${ratePlans[0].id}`);
  } finally {
    await closeDeps(deps);
  }
}

const isEntry = process.argv[1] !== undefined && import.meta.url === (await import('node:url')).pathToFileURL(process.argv[1]).href;
if (isEntry) {
  await seed(parseConfig(), (line) => console.log(line)).catch((e) => {
    console.error(e instanceof Error ? e.message : String(e));
    process.exit(1);
  });
}
