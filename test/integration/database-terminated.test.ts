import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.js';
import { newCar } from '../helpers/cars.js';
import { newCustomer } from '../helpers/customers.js';
import { inHours, sleep, waitFor } from '../helpers/http.js';

// A backend terminated under a statement (pg_terminate_backend, a failover, a restart) answers the statement with
// SQLSTATE 57P01 before the socket closes: the connection is gone, so the request is 503 UNAVAILABLE, not 500
// (chaos seed 625883: a car hold, the one-statement path, answered 500 under pg:terminate). Reproduced here by
// holding the car's advisory lock (migration 018) so the hold's statement waits, then terminating its backend.

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => h?.close());

describe('a database backend terminated under a request', () => {
  it('a car hold whose statement is terminated answers 503 UNAVAILABLE, writes nothing, and the next hold works', async () => {
    const carId = await newCar(h);
    const customer = newCustomer(h);
    const locker = new pg.Client({ connectionString: h.config.DATABASE_URL });
    await locker.connect();
    try {
      const lockerPid = (await locker.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
      await locker.query('BEGIN');
      await locker.query('SELECT pg_advisory_xact_lock(7240018, ($1::bigint % 2147483647)::int)', [carId]);
      const body = { carId, from: inHours(30), to: inHours(32) };
      const pending = h.req('POST', '/bookings', { token: customer.token, body });
      const waiting = await waitFor(async () => {
        const { rows } = await h.sql(`SELECT pid FROM pg_stat_activity WHERE datname = current_database()
          AND wait_event_type = 'Lock' AND wait_event = 'advisory' AND pid <> $1`, [lockerPid]);
        return rows[0]?.pid as number | undefined;
      }, 10_000);
      await h.sql('SELECT pg_terminate_backend($1)', [waiting]);
      const res = await pending;
      expect(res.status, res.text).toBe(503);
      expect(res.json.error.code).toBe('UNAVAILABLE');
      await locker.query('ROLLBACK');
      expect((await h.sql('SELECT count(*)::int AS n FROM booking WHERE car_id = $1', [carId])).rows[0].n).toBe(0);

      await sleep(50);
      const again = await h.req('POST', '/bookings', { token: customer.token, body });
      expect(again.status, again.text).toBe(201);
    } finally {
      await locker.end();
    }
  });
});
