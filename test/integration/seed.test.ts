import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../shared/config.js';
import { seed } from '../../scripts/seed.js';
import { CARS, HOTELS, STOCK_NIGHTS } from '../../scripts/seed-data.js';
import { ADMIN_DB } from '../helpers/harness.js';
import { verifiedClaims } from '../helpers/http.js';

const name = `test_seed_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
const config = parseConfig({ NODE_ENV: 'test', DATABASE_URL: `postgres://postgres@127.0.0.1:5432/${name}`, LOG_LEVEL: 'silent' });

afterAll(async () => {
  const admin = new pg.Client({ connectionString: ADMIN_DB });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.end();
});

async function run(): Promise<string[]> {
  const lines: string[] = [];
  await seed(config, (l) => lines.push(l));
  return lines;
}

async function counts() {
  const c = new pg.Client({ connectionString: config.DATABASE_URL });
  await c.connect();
  try {
    const one = async (q: string) => Number((await c.query(q)).rows[0].n);
    return {
      cars: await one('SELECT count(*) AS n FROM car'),
      hotels: await one('SELECT count(*) AS n FROM hotel'),
      roomTypes: await one('SELECT count(*) AS n FROM room_type'),
      nights: await one('SELECT count(*) AS n FROM room_night WHERE sellable > 0'),
      cities: await one('SELECT count(DISTINCT city) AS n FROM car'),
    };
  } finally {
    await c.end();
  }
}

describe('npm run seed', () => {
  it('creates the demo catalogue once, prints ids and working tokens, and reuses it when run again', async () => {
    const first = await run();
    const roomTypes = HOTELS.reduce((n, h) => n + h.roomTypes.length, 0);
    const expected = { cars: CARS.length, hotels: HOTELS.length, roomTypes, nights: roomTypes * STOCK_NIGHTS, cities: 3 };
    expect(await counts()).toEqual(expected);

    const second = await run();
    expect(await counts()).toEqual(expected);
    expect(second).toEqual(first.map((l) => (l.startsWith('export ') && l.includes('TOKEN=') ? expect.any(String) : l)));

    const exports = Object.fromEntries(first.filter((l) => l.startsWith('export ')).flatMap((l) =>
      l.slice(7).split(' ').map((kv) => kv.split('=') as [string, string])));
    for (const [name, role] of [['CUSTOMER_TOKEN', 'customer'], ['HOST_TOKEN', 'host'], ['OPERATOR_TOKEN', 'operator']] as const) {
      const payload = verifiedClaims(exports[name]!, config.JWT_SECRET);
      expect(payload.role).toBe(role);
      expect(payload.sub).toMatch(/^[1-9]\d*$/);
    }
    expect(Number(exports.CAR_ID)).toBeGreaterThan(0);
    expect(Number(exports.ROOM_TYPE_ID)).toBeGreaterThan(0);
  });
});
