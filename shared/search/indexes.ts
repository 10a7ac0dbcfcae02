import { CarCalendar, type IndexedCar } from '../domain/car-calendar.js';
import { StayCalendar } from '../domain/stay-calendar.js';
import type { PreparedDb } from '../db/prepared.js';
import {
  carsById, catalogueHead, eachPair, ledgerHead, loadCarIntervals, loadCars, loadNights, loadRoomTypes, newRoomTypes, outboxHead, tailCalendarChanges,
  tailCatalogue, tailNightChanges, tuples, xidsOfOtherDatabases, type CalendarChange, type Snapshot, type TailRead,
} from '../db/search-feed.js';
import { logger } from '../logger.js';
import { TailCursor, ended } from './tail-cursor.js';
import { reloadCars, reloadNights } from './reload.js';

// The API's in-memory search indexes: the car calendars (fed from the outbox's booking events, the catalogue from
// the cars' catalogue_version) and the free rooms per night (fed from the inventory ledger), polled every `pollMs`.
// A search reads them only while their last successful poll is younger than `maxAgeMs` (below SEARCH_CACHE_TTL_S);
// otherwise it falls back to SQL. Every `rebuildEveryMs` they are reloaded from the tables in place, a safety net
// for any change not in the feeds. Everything here runs on the API's event loop, between requests: no step may
// cost O(cars) at once (a reload of 20,000 cars and a re-sort held every request for 60–200 ms); bulk work is
// done in slices of a few ms (`inSlices`), and the catalogue follows the changed cars only.

export interface SearchIndexOptions {
  pollMs: number;
  maxAgeMs: number;
  /** Reload the catalogues (cars, room types) this often: new ones appear within it. */
  catalogueEveryMs: number;
  rebuildEveryMs: number;
  /** Rows per tail read. */
  tailLimit?: number;
}

/** How long a rebuild waits for the transactions in progress at its start (then it proceeds; see rebuild). */
const SETTLE_MAX_MS = 10_000;
const OTHER_DB_CHECK_MS = 1_000;
/** How long a catalogue write waits for the indexes to read it (it is committed either way). */
const CATCH_UP_MAX_MS = 1_000;
const DAY_MS = 86_400_000;

type HeldChange = Extract<CalendarChange, { kind: 'held' | 'changed' }>;

/** One index, its feed and its timers. */
interface Feed<C> {
  name: string;
  calendar: C | null;
  cursor: TailCursor;
  syncedAt: number;
  rebuildAt: number;
  catalogueAt: number;
}

export class SearchIndexes {
  private readonly carFeed: Feed<CarCalendar> = { name: 'cars', calendar: null, cursor: new TailCursor(0), syncedAt: 0, rebuildAt: 0, catalogueAt: 0 };
  /** Where the car catalogue's feed (cars by catalogue_version) resumes. */
  private catalogueCursor = new TailCursor(0);
  private readonly stayFeed: Feed<StayCalendar> = { name: 'stays', calendar: null, cursor: new TailCursor(0), syncedAt: 0, rebuildAt: 0, catalogueAt: 0 };
  /** Nights before this day are not in the stay index (they are history): such searches go to SQL. */
  private stayFromDay = Infinity;
  private timer: NodeJS.Timeout | null = null;
  /** The polls, one after the other; `next` is the one queued behind the running one (shared by its callers). */
  private chain: Promise<void> = Promise.resolve();
  private next: Promise<void> | null = null;
  private stopped = false;
  private lastWarn = 0;
  private startedAt: number | null = null;

  constructor(private readonly db: PreparedDb, private readonly o: SearchIndexOptions) {}

  start(): void {
    this.startedAt = Date.now();
    const loop = async () => {
      if (this.stopped) return;
      await this.pollAfterNow();
      if (!this.stopped) this.timer = setTimeout(() => void loop(), this.o.pollMs);
    };
    void loop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.chain;
  }

  /**
   * Resolves once a poll that started after the call has finished (or after `maxWaitMs`): every change committed
   * before the call is then in the indexes (but for one behind a transaction still open, which the tail waits
   * for). A catalogue write calls it before answering, so this API process's next search sees it.
   */
  async catchUp(maxWaitMs = CATCH_UP_MAX_MS): Promise<void> {
    // Not serving yet (the first build runs): searches read SQL meanwhile, nothing to wait for.
    if (this.stopped || (!this.carFeed.calendar && !this.stayFeed.calendar)) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.pollAfterNow(), new Promise((r) => (timer = setTimeout(r, maxWaitMs)))]);
    clearTimeout(timer);
  }

  /** A poll that starts after this call: the one queued behind the running poll, or a new one. */
  private pollAfterNow(): Promise<void> {
    if (!this.next) {
      const p = this.chain.then(() => {
        this.next = null;
        return this.poll();
      });
      this.next = p;
      this.chain = p.catch(() => {});
    }
    return this.next;
  }

  /**
   * Both calendars built (their first load done): until then every search reads PostgreSQL, which at a peak is
   * more than it can take (the API is not ready before, see /ready).
   */
  built(): boolean {
    return this.carFeed.calendar !== null && this.stayFeed.calendar !== null;
  }

  /** Built, or its first load has taken longer than `maxMs` since start (then searches keep reading PostgreSQL). */
  builtOrGaveUp(maxMs: number, now = Date.now()): boolean {
    return this.built() || (this.startedAt !== null && now - this.startedAt > maxMs);
  }

  /** The car calendar when fresh enough to answer from, else null. */
  cars(now = Date.now()): CarCalendar | null {
    return this.fresh(this.carFeed, now);
  }

  /** The stay calendar when fresh enough and holding the night `fromDay`, else null. */
  stays(fromDay: number, now = Date.now()): StayCalendar | null {
    return fromDay >= this.stayFromDay ? this.fresh(this.stayFeed, now) : null;
  }

  private fresh<C>(f: Feed<C>, now: number): C | null {
    return f.calendar && now - f.syncedAt <= this.o.maxAgeMs ? f.calendar : null;
  }

  /** One round: each feed rebuilt when due, else its catalogue reloaded when due and its tail read. */
  async poll(): Promise<void> {
    for (const [feed, round] of [[this.carFeed, () => this.carRound()], [this.stayFeed, () => this.stayRound()]] as const) {
      try {
        await round();
      } catch (err) {
        if (Date.now() - this.lastWarn > 5_000) {
          this.lastWarn = Date.now();
          logger.warn({ err: String(err), index: feed.name }, 'search index not refreshed; searches fall back to SQL once it is too old');
        }
      }
    }
  }

  private async carRound(): Promise<void> {
    const f = this.carFeed;
    const now = Date.now();
    if (!f.calendar || now >= f.rebuildAt) {
      const start = await this.settledHead(outboxHead);
      const catalogueStart = await this.settledHead(catalogueHead);
      // The first build fills a calendar nobody reads yet; later rebuilds work on the live one in place, in slices
      // (see rebuildCars), so no request waits for them and no old calendar is left to the garbage collector.
      const cal = f.calendar ?? new CarCalendar();
      cal.rebase(now);
      await reloadCars(this.db, cal, !f.calendar);
      const cursor = new TailCursor(start);
      this.catalogueCursor = new TailCursor(catalogueStart);
      await this.readTail(this.catalogueCursor, (after, limit) => tailCatalogue(this.db, after, limit), (r) => this.applyCatalogue(cal, r.entries));
      const syncedAt = await this.tailCars(cal, cursor);
      if (!f.calendar) logger.info({ index: f.name, cars: cal.carIds().length, ms: Date.now() - now }, 'search index built');
      Object.assign(f, { calendar: cal, cursor, syncedAt, rebuildAt: now + this.o.rebuildEveryMs });
      return;
    }
    const cal = f.calendar;
    // The cars inserted or updated since the last read (none, most polls: one probe of the version index).
    await this.readTail(this.catalogueCursor, (after, limit) => tailCatalogue(this.db, after, limit), (r) => this.applyCatalogue(cal, r.entries));
    f.syncedAt = await this.tailCars(cal, f.cursor);
  }

  private applyCatalogue(cal: CarCalendar, cars: readonly IndexedCar[]): void {
    for (const c of cars) cal.upsertCar(c);
  }

  private async stayRound(): Promise<void> {
    const f = this.stayFeed;
    const now = Date.now();
    if (!f.calendar || now >= f.rebuildAt) {
      const start = await this.settledHead(ledgerHead);
      // In place after the first build, as for cars: each night is overwritten with its count as read (nights
      // are never deleted, so none is left behind), the tail from `start` then brings what changed meanwhile.
      const cal = f.calendar ?? new StayCalendar();
      const roomTypes = await loadRoomTypes(this.db);
      cal.setRoomTypes(roomTypes);
      // Two days back covers "today" in every time zone; earlier nights are history and stay in SQL.
      const fromDay = Math.floor(now / DAY_MS) - 2;
      cal.setWindow(fromDay);
      await reloadNights(this.db, cal, roomTypes, fromDay);
      const cursor = new TailCursor(start);
      const syncedAt = await this.readTail(cursor, (after, limit) => tailNightChanges(this.db, after, limit), (r) => this.applyNights(cal, r.entries));
      if (!f.calendar) logger.info({ index: f.name, roomTypes: roomTypes.length, ms: Date.now() - now }, 'search index built');
      Object.assign(f, { calendar: cal, cursor, syncedAt, rebuildAt: now + this.o.rebuildEveryMs, catalogueAt: now + this.o.catalogueEveryMs });
      this.stayFromDay = fromDay;
      return;
    }
    if (now >= f.catalogueAt) {
      f.calendar.setRoomTypes(await loadRoomTypes(this.db));
      f.catalogueAt = now + this.o.catalogueEveryMs;
    } else {
      const added = await newRoomTypes(this.db, f.calendar.maxRoomTypeId);
      if (added.length) f.calendar.addRoomTypes(added);
    }
    const cal = f.calendar;
    f.syncedAt = await this.readTail(f.cursor, (after, limit) => tailNightChanges(this.db, after, limit), (r) => this.applyNights(cal, r.entries));
  }

  /**
   * The table's highest id, once every transaction in progress when it was read has ended: every row at or
   * below it is then final, and a load that starts now reflects them all (see TailCursor for the rule).
   * Waits at most SETTLE_MAX_MS for transactions of this database (others cannot write its tables).
   */
  private async settledHead(head: (db: PreparedDb) => Promise<{ snapshot: Snapshot; maxId: number }>): Promise<number> {
    const first = await head(this.db);
    let waitFor = first.snapshot.xip;
    const t0 = Date.now();
    while (waitFor.length > 0 && Date.now() - t0 < SETTLE_MAX_MS) {
      const now = (await head(this.db)).snapshot;
      waitFor = waitFor.filter((x) => !ended(now, x));
      if (waitFor.length && Date.now() - t0 > OTHER_DB_CHECK_MS) {
        const other = await xidsOfOtherDatabases(this.db, waitFor);
        waitFor = waitFor.filter((x) => !other.has(x));
      }
      if (waitFor.length) await new Promise((r) => setTimeout(r, 50));
    }
    if (waitFor.length) logger.warn({ xids: waitFor.map(String) }, 'search index rebuilt while transactions were still open; the next rebuild covers them');
    return first.maxId;
  }

  /** Tail reads until one comes back short of the limit; returns when the last one started. */
  private async readTail<E>(cursor: TailCursor, read: (after: number, limit: number) => Promise<TailRead<E>>, apply: (r: TailRead<E>) => void): Promise<number> {
    const limit = this.o.tailLimit ?? 20_000;
    for (;;) {
      const startedAt = Date.now();
      const r = await read(cursor.cursor, limit);
      apply(r);
      cursor.read(r.maxId, r.snapshot);
      const long = cursor.waitingLongerThan(OTHER_DB_CHECK_MS);
      if (long.length) cursor.ignore(await xidsOfOtherDatabases(this.db, long));
      if (r.count < limit) return startedAt;
    }
  }

  /** Applies calendar changes in id order; holds (and changes) onto cars newer than the catalogue wait in `unknown`. */
  private applyCars(cal: CarCalendar, changes: readonly CalendarChange[], unknown: Map<number, HeldChange>): void {
    for (const c of changes) {
      if (c.kind === 'freed') {
        cal.remove(c.bookingId);
        unknown.delete(c.bookingId);
        continue;
      }
      // A change replaces the booking's interval (it may move to another car): the old one goes first.
      if (c.kind === 'changed') cal.remove(c.bookingId);
      const turnaround = cal.turnaroundMs(c.carId);
      if (turnaround === null) unknown.set(c.bookingId, c);
      else cal.add(c.bookingId, c.carId, c.from, c.to + turnaround);
    }
  }

  /** Tails the outbox into `cal`; a hold on a car the catalogue feed has not read yet reads that car first. */
  private async tailCars(cal: CarCalendar, cursor: TailCursor): Promise<number> {
    const unknown = new Map<number, HeldChange>();
    const syncedAt = await this.readTail(cursor, (after, limit) => tailCalendarChanges(this.db, after, limit), (r) => this.applyCars(cal, r.entries, unknown));
    if (unknown.size) {
      // A car committed after this round's catalogue read: read just those cars (not the whole catalogue).
      for (const car of await carsById(this.db, [...new Set([...unknown.values()].map((c) => c.carId))])) cal.upsertCar(car);
      for (const c of unknown.values()) {
        const turnaround = cal.turnaroundMs(c.carId);
        if (turnaround !== null) cal.add(c.bookingId, c.carId, c.from, c.to + turnaround);
      }
    }
    return syncedAt;
  }

  private applyNights(cal: StayCalendar, rows: readonly number[][]): void {
    for (const [, roomTypeId, day, free] of rows) cal.setNight(roomTypeId!, day!, free!);
  }
}
