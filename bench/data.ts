/**
 * The benchmark catalogue: cars with their calendars, hotels with 365 nights of inventory, loaded with COPY.
 *
 *   npm run bench:data -- --cars 20000 --bookings 1000000
 *   npm run bench:data -- --cars 2000 --bookings 10000 --room-types 200 --db bench_try   # small, into bench_try
 *
 * Options (defaults): --seed (1) --cars (20000) --bookings (1000000) --hot-cars (300) --room-types (2000)
 *   --nights (365) --anchor (today, UTC, YYYY-MM-DD) --force (rebuild the template even if it exists)
 *   --db NAME (also copy the template into database NAME, replacing it).
 * The same options give the same rows (deterministic by --seed). The result is a template database
 * `bench_tpl_<hash>_<anchor>` that bench:peak and bench:scale copy in seconds; see bench/dataset/generate.ts for the
 * shape of the data. No ANALYZE and no VACUUM are run: the system must be fast without planner statistics.
 */
import { parseArgs } from 'node:util';
import { cloneDatabase, DEFAULT_DATASET, ensureTemplate } from './dataset/load.js';
import type { DatasetOptions } from './dataset/generate.js';

type ArgSpec = Record<string, { type: 'string' | 'boolean' }>;

/** Parses the dataset options plus a caller's own (`extra`); unknown options are an error. */
export function datasetArgs(argv: string[], extra: ArgSpec = {}): { options: DatasetOptions; rest: Record<string, string | boolean | undefined> } {
  const { values } = parseArgs({
    args: argv, allowPositionals: false, strict: true,
    options: {
      ...extra,
      seed: { type: 'string' }, cars: { type: 'string' }, bookings: { type: 'string' }, 'hot-cars': { type: 'string' },
      'room-types': { type: 'string' }, nights: { type: 'string' }, anchor: { type: 'string' },
    },
  });
  const all = values as Record<string, string | boolean | undefined>;
  const num = (k: string, def: number) => {
    const v = all[k];
    if (v === undefined) return def;
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0) throw new Error(`--${k} must be a non-negative integer (got ${String(v)})`);
    return n;
  };
  const anchor = typeof values.anchor === 'string' ? values.anchor : DEFAULT_DATASET.anchor;
  if (!/^\d{4}-\d{2}-\d{2}$/.test(anchor)) throw new Error('--anchor must be YYYY-MM-DD');
  return {
    options: {
      seed: num('seed', DEFAULT_DATASET.seed), cars: num('cars', DEFAULT_DATASET.cars), bookings: num('bookings', DEFAULT_DATASET.bookings),
      hotCars: num('hot-cars', DEFAULT_DATASET.hotCars), roomTypes: num('room-types', DEFAULT_DATASET.roomTypes),
      nights: num('nights', DEFAULT_DATASET.nights), anchor,
    },
    rest: values as Record<string, string | boolean | undefined>,
  };
}

async function main() {
  const { options, rest } = datasetArgs(process.argv.slice(2), { force: { type: 'boolean' }, db: { type: 'string' } });
  console.log(`bench:data ${JSON.stringify(options)}`);
  const template = await ensureTemplate(options, console.log, rest.force === true);
  if (typeof rest.db === 'string') {
    if (!/^bench_\w+$/.test(rest.db)) throw new Error('--db must start with bench_');
    const t = performance.now();
    await cloneDatabase(template, rest.db);
    console.log(`copied into ${rest.db} in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
