/**
 * The car search's walk alone, on a copy of a bench:data catalogue: the search indexes' first build, then SEARCHES
 * searches drawn as bench:peak draws them (a city by its share of cars, any whole hour in the next 90 days, 1–7 days,
 * limit 50), timed in this process. Prints µs per search (the walk and the join of each car's JSON) and the answer's
 * mean length. How "the walk" figures of docs/benchmarks.md ("Peak, round two") were measured.
 *
 *   TEMPLATE=bench_tpl_<hash>_<day> npx tsx bench/search-walk.ts
 *
 * Env (defaults): TEMPLATE (required), SEARCHES (20000), ROUNDS (5).
 */
import { cloneDatabase, dropDatabase } from './dataset/load.js';
import { CITIES, DAY_H, HOUR_MS, int, pickWeighted, rngFor } from './dataset/generate.js';
import { createPreparedDb } from '../shared/db/prepared.js';
import { SearchIndexes } from '../shared/search/indexes.js';
import { envelope } from '../shared/domain/json-bytes.js';
import { envInt, envStr } from './lib.js';

const CARS = envelope('cars');

async function main() {
  const name = `bench_walk_${process.pid}`;
  const db = createPreparedDb(await cloneDatabase(envStr('TEMPLATE', ''), name), 4);
  try {
    const idx = new SearchIndexes(db, { pollMs: 200, maxAgeMs: 3_600_000, catalogueEveryMs: 3_600_000, rebuildEveryMs: 3_600_000 });
    await idx.poll();
    const cal = idx.cars();
    if (!cal) throw new Error('no car calendar after the first build');
    const rng = rngFor(1, 100);
    const hour = Math.ceil(Date.now() / HOUR_MS) * HOUR_MS;
    const queries = Array.from({ length: envInt('SEARCHES', 20_000) }, () => {
      const from = hour + int(rng, 0, 90 * DAY_H - 1) * HOUR_MS;
      return { city: pickWeighted(rng, CITIES).name, from, to: from + int(rng, 1, 7) * DAY_H * HOUR_MS };
    });
    for (let round = 1; round <= envInt('ROUNDS', 5); round++) {
      let bytes = 0;
      const t = process.cpuUsage();
      for (const q of queries) bytes += cal.searchJson(q.city, q.from, q.to, 50, CARS).length;
      const u = process.cpuUsage(t);
      console.log(`round ${round}: ${((u.user + u.system) / queries.length).toFixed(1)} µs of CPU per search, answers ${(bytes / queries.length).toFixed(0)} bytes on average`);
    }
  } finally {
    await db.end();
    await dropDatabase(name);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
