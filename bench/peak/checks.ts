/**
 * Correctness checks of a peak run, in SQL against the same database:
 *  - overlaps: active car bookings (HOLD, CONFIRMED, ON_TRIP) of one car whose blocked ranges overlap (must be 0;
 *    the exclusion constraint makes it impossible, this proves it on the data);
 *  - oversold nights: held + confirmed > sellable (must be 0);
 *  - staleness, on a sample of car searches while the load runs, checked the moment the answer arrives:
 *      listed-but-taken: a listed car whose calendar was taken (an active booking overlapping [from, to + turnaround))
 *        before sentAt − SEARCH_CACHE_TTL_S − 1 s is a violation (taken within the TTL is allowed, and counted);
 *      omitted-but-free: a car free now that would rank within the answer (cheaper than its last car, or any when the
 *        answer had fewer than `limit`) but is missing is a violation unless one of its bookings over that period
 *        left the calendar (expired, cancelled) within the TTL.
 *    The 1 s margin covers the gap between a hold's created_at (its transaction's start) and its commit.
 *    The checker's queries probe the exclusion constraint's GiST index once per car (OFFSET 0 keeps each
 *    subquery a per-row subplan): they do not depend on planner statistics either.
 */
import pg from 'pg';

const ACTIVE = `status IN ('HOLD', 'CONFIRMED', 'ON_TRIP')`;

export async function countOverlaps(c: pg.Client): Promise<number> {
  const { rows } = await c.query<{ n: number }>(`
    SELECT count(*)::int AS n FROM (
      SELECT lower(blocked) AS lo, max(upper(blocked)) OVER (PARTITION BY car_id ORDER BY lower(blocked), id
                                                            ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_hi
      FROM booking WHERE kind = 'car' AND ${ACTIVE}) x
    WHERE prev_hi > lo`);
  return rows[0]!.n;
}

export async function countOversold(c: pg.Client): Promise<number> {
  const { rows } = await c.query<{ n: number }>(`SELECT count(*)::int AS n FROM room_night WHERE held + confirmed > sellable`);
  return rows[0]!.n;
}

/**
 * Runs a `… ORDER BY daily_price, id LIMIT n` over one city's cars as a walk of car_city_price_idx in its order,
 * stopping at the n-th free car (~5 ms on the bench's catalogue). Without planner statistics PostgreSQL sorts the
 * whole city instead, probing every car's calendar (~130 ms): at a few checks a second that took 0.15–0.26 of the
 * machine's two cores from the system under test. The settings are local to the check's transaction.
 */
async function cheapestWalk(c: pg.Client, sql: string, params: unknown[]): Promise<pg.QueryResult<{ id: string; daily_price: string }>> {
  await c.query('BEGIN');
  try {
    await c.query('SET LOCAL enable_sort = off; SET LOCAL enable_bitmapscan = off');
    return await c.query<{ id: string; daily_price: string }>(sql, params);
  } finally {
    await c.query('COMMIT');
  }
}

export interface StalenessReport {
  samples: number;
  skippedBusy: number;
  listedChecked: number;
  takenWithinTtl: number;
  maxTakenAgeS: number;
  listedViolations: number;
  omittedChecked: number;
  freedWithinTtl: number;
  omittedViolations: number;
  examples: string[];
}

interface Car { id: number; dailyPrice: number }

export class StalenessChecker {
  readonly report: StalenessReport = {
    samples: 0, skippedBusy: 0, listedChecked: 0, takenWithinTtl: 0, maxTakenAgeS: 0, listedViolations: 0,
    omittedChecked: 0, freedWithinTtl: 0, omittedViolations: 0, examples: [],
  };
  private busy = false;
  private pending: Promise<void> = Promise.resolve();

  constructor(private readonly c: pg.Client, private readonly ttlS: number) {}

  /** For the loadgen's onSample: checks one answer unless the previous check is still running. */
  sample(path: string, status: number, body: string, sentEpochMs: number): void {
    if (status !== 200) return;
    if (this.busy) {
      this.report.skippedBusy++;
      return;
    }
    this.busy = true;
    this.pending = this.check(path, JSON.parse(body) as { cars: Car[] }, sentEpochMs)
      .catch((e) => { this.note(`check failed: ${String(e)}`); })
      .finally(() => { this.busy = false; });
  }

  async done(): Promise<StalenessReport> {
    await this.pending;
    return this.report;
  }

  private note(s: string) {
    if (this.report.examples.length < 10) this.report.examples.push(s);
  }

  private async check(path: string, answer: { cars: Car[] }, sentEpochMs: number): Promise<void> {
    const q = new URL(path, 'http://x').searchParams;
    const [city, from, to, limit] = [q.get('city')!, q.get('from')!, q.get('to')!, Number(q.get('limit') ?? 50)];
    const r = this.report;
    r.samples++;
    const cutoff = new Date(sentEpochMs - (this.ttlS + 1) * 1000);
    const ids = answer.cars.map((c) => c.id);
    // Listed cars that are taken now, and since when.
    const taken = await this.c.query<{ id: string; since: Date }>(`
      SELECT c.id, min(b.created_at) AS since
      FROM car c JOIN LATERAL (
        SELECT b.created_at FROM booking b
        WHERE b.car_id = c.id AND b.kind = 'car' AND b.${ACTIVE}
          AND b.blocked && tstzrange($2::timestamptz, $3::timestamptz + make_interval(mins => c.turnaround_minutes), '[)')
        OFFSET 0) b ON true
      WHERE c.id = ANY($1::bigint[])
      GROUP BY c.id`, [ids, from, to]);
    r.listedChecked += ids.length;
    for (const t of taken.rows) {
      if (t.since < cutoff) {
        r.listedViolations++;
        this.note(`listed car ${t.id} for ${city} ${from}–${to} though taken since ${t.since.toISOString()} (sent ${new Date(sentEpochMs).toISOString()})`);
      } else {
        r.takenWithinTtl++;
        r.maxTakenAgeS = Math.max(r.maxTakenAgeS, (sentEpochMs - t.since.getTime()) / 1000);
      }
    }
    // Free cars now, cheapest first, up to `limit`, that the answer should have ranked.
    const truth = await cheapestWalk(this.c, `
      SELECT c.id, c.daily_price FROM car c
      WHERE c.city = $1 AND NOT EXISTS (
        SELECT 1 FROM booking b WHERE b.car_id = c.id AND b.kind = 'car' AND b.${ACTIVE}
          AND b.blocked && tstzrange($2::timestamptz, $3::timestamptz + make_interval(mins => c.turnaround_minutes), '[)')
        OFFSET 0)
      ORDER BY c.daily_price, c.id LIMIT $4`, [city, from, to, limit]);
    const last = answer.cars.at(-1);
    const listed = new Set(ids);
    const ranksBefore = (id: number, price: number) =>
      answer.cars.length < limit || !last || price < last.dailyPrice || (price === last.dailyPrice && id < last.id);
    const missing = truth.rows.map((t) => ({ id: Number(t.id), price: Number(t.daily_price) }))
      .filter((t) => !listed.has(t.id) && ranksBefore(t.id, t.price));
    r.omittedChecked += truth.rows.length;
    if (missing.length === 0) return;
    const freed = await this.c.query<{ car_id: string }>(`
      SELECT DISTINCT b.car_id FROM booking b JOIN car c ON c.id = b.car_id
      WHERE b.car_id = ANY($1::bigint[]) AND b.kind = 'car' AND NOT b.${ACTIVE} AND b.updated_at >= $4
        AND b.blocked && tstzrange($2::timestamptz, $3::timestamptz + make_interval(mins => c.turnaround_minutes), '[)')`,
    [missing.map((m) => m.id), from, to, cutoff]);
    const freedIds = new Set(freed.rows.map((f) => Number(f.car_id)));
    for (const m of missing) {
      if (freedIds.has(m.id)) r.freedWithinTtl++;
      else {
        r.omittedViolations++;
        this.note(`omitted free car ${m.id} for ${city} ${from}–${to} (sent ${new Date(sentEpochMs).toISOString()})`);
      }
    }
  }
}

/**
 * Proves the staleness checker can fail: an answer listing a car whose calendar has been taken for days, and an
 * empty answer where free cars exist, must each be flagged. Returns what it saw.
 */
export async function stalenessSelfTest(c: pg.Client): Promise<{ detectsTaken: boolean; detectsOmitted: boolean }> {
  const { rows } = await c.query<{ id: string; city: string; daily_price: string; lo: Date }>(`
    SELECT c.id, c.city, c.daily_price, lower(b.period) AS lo FROM booking b JOIN car c ON c.id = b.car_id
    WHERE b.kind = 'car' AND b.status = 'CONFIRMED' AND lower(b.period) > now() + interval '1 day'
      AND b.created_at < now() - interval '1 hour'
    LIMIT 1`);
  const row = rows[0];
  if (!row) return { detectsTaken: false, detectsOmitted: false };
  const from = row.lo.toISOString();
  const to = new Date(row.lo.getTime() + 3_600_000).toISOString();
  const path = `/cars?city=${encodeURIComponent(row.city)}&from=${from}&to=${to}&limit=50`;
  const taken = new StalenessChecker(c, 30);
  taken.sample(path, 200, JSON.stringify({ cars: [{ id: Number(row.id), dailyPrice: Number(row.daily_price) }] }), Date.now());
  const omitted = new StalenessChecker(c, 30);
  omitted.sample(path, 200, JSON.stringify({ cars: [] }), Date.now());
  return { detectsTaken: (await taken.done()).listedViolations === 1, detectsOmitted: (await omitted.done()).omittedViolations > 0 };
}
