/**
 * Loads a generated catalogue with COPY into a migrated database and keeps it as a template database,
 * so a benchmark gets a fresh copy in seconds (CREATE DATABASE … TEMPLATE … STRATEGY FILE_COPY).
 *
 * Never ANALYZE, never VACUUM: autovacuum is off on these machines, and the point is to be fast on a catalogue
 * that was just loaded, without planner statistics. The load runs with session_replication_role = replica, which
 * skips triggers only (the derive-`blocked` trigger, foreign keys, the ledger trigger): their effects are written
 * explicitly (blocked = [from, to + turnaround), one ledger entry per night). CHECK and EXCLUDE constraints still
 * apply, so the generator cannot sneak an overlap in.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { once } from 'node:events';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { migrate } from '../../shared/db/migrate.js';
import { ADMIN_DB, PG_BASE, ROOT } from '../lib.js';
import {
  GENERATOR_VERSION, HOUR_MS, STATUS, anchorMs, generateCarBookings, generateCars, generateStays, type DatasetOptions,
} from './generate.js';

export const DEFAULT_DATASET: DatasetOptions = {
  seed: 1, cars: 20_000, bookings: 1_000_000, hotCars: 300, roomTypes: 2_000, nights: 365,
  anchor: new Date().toISOString().slice(0, 10),
};

function migrationsHash(): string {
  const dir = path.join(ROOT, 'migrations');
  const h = createHash('sha256');
  for (const f of readdirSync(dir).sort()) h.update(f).update(readFileSync(path.join(dir, f)));
  return h.digest('hex');
}

/** Template name: a hash of everything that shapes the rows, plus the anchor date. */
export function templateName(o: DatasetOptions): string {
  const key = JSON.stringify({ v: GENERATOR_VERSION, m: migrationsHash(), ...o, anchor: undefined });
  return `bench_tpl_${createHash('sha256').update(key).digest('hex').slice(0, 10)}_${o.anchor.replaceAll('-', '')}`;
}

async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: ADMIN_DB });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

export const dbUrl = (name: string) => `${PG_BASE}/${name}`;

export async function dropDatabase(name: string): Promise<void> {
  await admin((c) => c.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`));
}

/** Streams rows (already in COPY text format, one per line) into `table (columns)`. */
async function copyRows(client: pg.Client, table: string, columns: string, rows: Iterable<string>): Promise<number> {
  const stream = client.query(copyFrom(`COPY ${table} (${columns}) FROM STDIN`));
  let buf = '';
  let n = 0;
  for (const row of rows) {
    buf += row;
    n++;
    if (buf.length > 1 << 20) {
      if (!stream.write(buf)) await once(stream, 'drain');
      buf = '';
    }
  }
  stream.end(buf);
  await once(stream, 'finish');
  return n;
}

const iso = (hours: number) => new Date(hours * HOUR_MS).toISOString();
const range = (a: string, b: string) => `["${a}","${b}")`;

async function loadRows(url: string, o: DatasetOptions, log: (m: string) => void): Promise<Record<string, number>> {
  const cars = generateCars(o);
  const carById = new Map(cars.map((c) => [c.id, c]));
  const stays = generateStays(o);
  const counts: Record<string, number> = {};
  const session = async () => {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    await c.query(`SET session_replication_role = replica; SET synchronous_commit = off`);
    return c;
  };
  const carsAndBookings = async () => {
    const c = await session();
    try {
      counts.car = await copyRows(c, 'car', 'id, host_id, plate, model, city, daily_price, deposit_amount, currency, turnaround_minutes',
        cars.map((r) => `${r.id}\t${r.hostId}\t${r.plate}\t${r.model}\t${r.city}\t${r.dailyPrice}\t${r.depositAmount}\tVND\t${r.turnaroundMinutes}\n`));
      const t = performance.now();
      const b = generateCarBookings(o, cars);
      log(`generated ${b.n.toLocaleString('en-US')} car bookings in ${Math.round(performance.now() - t)} ms`);
      counts.carBooking = await copyRows(c, 'booking',
        'id, kind, status, version, customer_id, car_id, period, blocked, deposit_amount, total_amount, currency, created_at, updated_at',
        (function* () {
          for (let i = 0; i < b.n; i++) {
            const car = carById.get(b.car[i]!)!;
            const from = iso(b.startH[i]!);
            const to = b.startH[i]! + b.lenH[i]!;
            const created = iso(b.createdH[i]!);
            // A car booking's total is the daily price × started days, as the hold INSERT computes it.
            const total = car.dailyPrice * Math.ceil(b.lenH[i]! / 24);
            yield `${i + 1}\tcar\t${STATUS[b.status[i]!]}\t1\t${b.customer[i]}\t${car.id}\t${range(from, iso(to))}\t`
              + `${range(from, new Date(to * HOUR_MS + car.turnaroundMinutes * 60_000).toISOString())}\t${car.depositAmount}\t${total}\tVND\t${created}\t${created}\n`;
          }
        })());
    } finally {
      await c.end();
    }
  };
  const hotelsAndNights = async () => {
    const c = await session();
    try {
      const day0 = anchorMs(o);
      const date = (d: number) => new Date(day0 + d * 86_400_000).toISOString().slice(0, 10);
      counts.hotel = await copyRows(c, 'hotel', 'id, name, city, timezone, check_in_time',
        stays.hotels.map((h) => `${h.id}\t${h.name}\t${h.city}\tAsia/Ho_Chi_Minh\t14:00\n`));
      counts.roomType = await copyRows(c, 'room_type', 'id, hotel_id, name, deposit_amount, currency',
        stays.roomTypes.map((r) => `${r.id}\t${r.hotelId}\t${r.name}\t${r.depositAmount}\tVND\n`));
      const nights = function* (ledger: boolean) {
        for (const rt of stays.roomTypes) {
          const conf = stays.confirmed[rt.id - 1]!;
          for (let d = 0; d < o.nights; d++) {
            yield ledger
              ? `${rt.id}\t${date(d)}\t${new Date(day0 - 86_400_000).toISOString()}\tbench:data\tbench dataset: initial inventory and confirmed stays\t\\N\t0\t0\t0\t${rt.sellable}\t0\t${conf[d]}\n`
              : `${rt.id}\t${date(d)}\t${rt.sellable}\t0\t${conf[d]}\n`;
          }
        }
      };
      counts.roomNight = await copyRows(c, 'room_night', 'room_type_id, night, sellable, held, confirmed', nights(false));
      await copyRows(c, 'inventory_ledger', 'room_type_id, night, at, actor, reason, booking_id, before_sellable, before_held, before_confirmed, after_sellable, after_held, after_confirmed', nights(true));
    } finally {
      await c.end();
    }
  };
  await Promise.all([carsAndBookings(), hotelsAndNights()]);
  // Stay bookings take ids after the car bookings (one table, one sequence).
  const c = await session();
  try {
    const day0 = anchorMs(o);
    const date = (d: number) => new Date(day0 + d * 86_400_000).toISOString().slice(0, 10);
    let id = counts.carBooking!;
    counts.stayBooking = await copyRows(c, 'booking',
      'id, kind, status, version, customer_id, room_type_id, check_in, check_out, rooms, guests, deposit_amount, currency, created_at, updated_at',
      stays.bookings.map((s) => {
        const created = new Date(day0 - s.createdDaysBefore * 86_400_000).toISOString();
        return `${++id}\tstay\tCONFIRMED\t1\t${s.customer}\t${s.roomTypeId}\t${date(s.night)}\t${date(s.night + s.nights)}\t${s.rooms}\t1\t${s.deposit}\tVND\t${created}\t${created}\n`;
      }));
    for (const [table, seq] of [['car', 'car_id_seq'], ['booking', 'booking_id_seq'], ['hotel', 'hotel_id_seq'], ['room_type', 'room_type_id_seq'], ['inventory_ledger', 'inventory_ledger_id_seq']]) {
      await c.query(`SELECT setval('${seq}', greatest(1, (SELECT coalesce(max(id), 0) FROM ${table})))`);
    }
    await c.query(`CREATE TABLE bench_meta (options jsonb NOT NULL, counts jsonb NOT NULL, loaded_at timestamptz NOT NULL DEFAULT now())`);
    await c.query(`INSERT INTO bench_meta (options, counts) VALUES ($1, $2)`, [JSON.stringify(o), JSON.stringify(counts)]);
  } finally {
    await c.end();
  }
  return counts;
}

const exists = (name: string) => admin(async (c) => (await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount === 1);

/** Builds the template for these options unless it exists; returns its name. */
export async function ensureTemplate(o: DatasetOptions, log: (m: string) => void = console.log, force = false): Promise<string> {
  const name = templateName(o);
  if (!force && (await exists(name))) {
    log(`dataset: template ${name} exists`);
    return name;
  }
  const building = `${name}_building`;
  await dropDatabase(building);
  const t = performance.now();
  await migrate(dbUrl(building));
  const counts = await loadRows(dbUrl(building), o, log);
  await dropDatabase(name);
  await admin(async (c) => {
    await c.query(`ALTER DATABASE ${pg.escapeIdentifier(building)} RENAME TO ${pg.escapeIdentifier(name)}`);
    await c.query(`ALTER DATABASE ${pg.escapeIdentifier(name)} WITH ALLOW_CONNECTIONS false`);
  });
  log(`dataset: built ${name} in ${((performance.now() - t) / 1000).toFixed(1)} s: ${JSON.stringify(counts)}`);
  return name;
}

/** A fresh copy of a template (file copy: seconds even for millions of rows). */
export async function cloneDatabase(template: string, name: string): Promise<string> {
  await dropDatabase(name);
  await admin((c) => c.query(`CREATE DATABASE ${pg.escapeIdentifier(name)} TEMPLATE ${pg.escapeIdentifier(template)} STRATEGY FILE_COPY`));
  return dbUrl(name);
}

export async function readMeta(url: string): Promise<{ options: DatasetOptions; counts: Record<string, number> }> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    const { rows } = await c.query('SELECT options, counts FROM bench_meta');
    return rows[0] as { options: DatasetOptions; counts: Record<string, number> };
  } finally {
    await c.end();
  }
}
