import type { CarCalendar } from '../domain/car-calendar.js';
import type { IndexedRoomType, StayCalendar } from '../domain/stay-calendar.js';
import type { PreparedDb } from '../db/prepared.js';
import { eachPair, loadCarIntervals, loadCars, loadNights, tuples } from '../db/search-feed.js';

// The search indexes' reloads from the tables (the first build and the rebuild every few minutes), on the API's
// event loop between requests: read page by page and applied in slices of a few ms, so that neither a long task
// nor a large result (which every young-generation collection copies while it is alive) holds the requests.

/** Cars (and their intervals) per read of a reload; room types per read of the nights. */
const REBUILD_PAGE = 1_000;
const NIGHTS_PAGE = 100;

/** How long a slice of bulk work may hold the event loop before it yields to the requests waiting. */
const SLICE_MS = 4;

/**
 * Runs `fn` over the items, yielding to the event loop every SLICE_MS: a rebuild parses ~9 MB of text at 1 M
 * bookings (and 730 k nights for the hotels), which done at once would hold every request of this API process
 * for 100+ ms. By time, not by count: an item may be one night or a room type's 365.
 */
export async function inSlices<T>(items: readonly T[], fn: (item: T) => void, sliceMs = SLICE_MS): Promise<void> {
  let since = performance.now();
  for (let i = 0; i < items.length; i++) {
    fn(items[i]!);
    if ((i & 7) === 7 && performance.now() - since >= sliceMs) {
      await new Promise((r) => setImmediate(r));
      since = performance.now();
    }
  }
}

/**
 * Every car and every active interval read again from the tables into `cal`. In place: a car's intervals are
 * replaced by what was read, so until the tail (replayed from the head settled before the reads) has run, a hold
 * taken in the last moments may be missing — for the rebuild's duration, well within the TTL. Cars gone from the
 * table leave. A search between two slices sees each car either before or after its reload.
 */
export async function reloadCars(db: PreparedDb, cal: CarCalendar, first: boolean): Promise<void> {
  // Page by page (REBUILD_PAGE cars, then their intervals), each dropped before the next is read: no result
  // large enough for the young generation's collections to copy it again and again (see loadCars).
  const seen = new Set<number>();
  const withIntervals = new Set<number>();
  for (let after = 0; ;) {
    const page = await loadCars(db, after, REBUILD_PAGE);
    if (page.length === 0) break;
    const to = page[page.length - 1]!.id;
    await inSlices(page, (c) => {
      seen.add(c.id);
      cal.upsertCar(c);
    });
    await inSlices(await loadCarIntervals(db, after, to), (r) => {
      withIntervals.add(r.carId);
      cal.load(r.carId, tuples(r.list));
    });
    after = to;
    if (page.length < REBUILD_PAGE) break;
  }
  if (first) return;
  cal.retainCars(seen);
  // Cars whose every interval has ended or gone: nothing came back for them.
  await inSlices(cal.carIds(), (id) => !withIntervals.has(id) && cal.load(id, []));
}

/** Every night from `fromDay` on of these room types, read again into `cal` (in place: each night overwritten). */
export async function reloadNights(db: PreparedDb, cal: StayCalendar, roomTypes: readonly IndexedRoomType[], fromDay: number): Promise<void> {
  const ids = roomTypes.map((r) => r.roomTypeId).sort((a, b) => a - b);
  for (let i = 0; i < ids.length; i += NIGHTS_PAGE) {
    const to = i + NIGHTS_PAGE < ids.length ? ids[i + NIGHTS_PAGE - 1]! : Number.MAX_SAFE_INTEGER;
    await inSlices(await loadNights(db, fromDay, i === 0 ? 0 : ids[i - 1]!, to), (r) => {
      eachPair(r.list, (day, free) => cal.setNight(r.roomTypeId, day, free));
    });
  }
}
