import type { Deps } from './deps.js';
import type { Actor } from '../domain/actor.js';
import { visibleTo } from '../domain/booking.js';
import { scrubDetail, type TimelineEntry } from '../domain/timeline.js';
import { SECRET_NAMES } from '../local-secrets.js';
import { findBooking } from '../db/bookings.js';
import { bookingEventIds, readTimelinePage, recordedEventIds } from '../db/timeline.js';
import type { DatabasePool } from '../db/pool.js';
import { staleRead } from './stale-read.js';
import { decodeTimelineCursor, encodeTimelineCursor, timelinePage } from './timeline-cursor.js';

export interface TimelinePage {
  entries: TimelineEntry[];
  nextCursor: string | null;
}

/**
 * GET /bookings/{id}/timeline: everything recorded about a booking, oldest first, a page at a time. Visible to
 * whom the booking is (owner, the car's host, operators); anyone else hears 404, as for the booking itself.
 */
export async function getTimeline(
  deps: Pick<Deps, 'db' | 'config' | 'replica'>,
  actor: Actor,
  bookingId: number,
  q: { limit: number; cursor?: string },
): Promise<TimelinePage> {
  const cursor = q.cursor === undefined ? null : decodeTimelineCursor(q.cursor);
  const page = async (db: DatabasePool) => {
    visibleTo(actor, await findBooking(db, bookingId));
    return readPage({ db, config: deps.config }, bookingId, q.limit, cursor);
  };
  // A first page may be read on the replica (stale by its lag bound). A later one is read on the primary: pages
  // neither skip nor repeat because each is read in a snapshot no older than the cursor's, and the replica's
  // may be older than the page before. A booking the replica does not have yet is looked for on the primary.
  if (cursor) return page(deps.db);
  return staleRead(deps, page, { primaryToo: (e) => e.code === 'NOT_FOUND' });
}

/** The same pages for the operator page, which has already shown the booking (operators see every booking). */
export async function readTimeline(deps: Pick<Deps, 'db' | 'config'>, bookingId: number, q: { limit: number; cursor?: string }): Promise<TimelinePage> {
  return readPage(deps, bookingId, q.limit, q.cursor === undefined ? null : decodeTimelineCursor(q.cursor));
}

async function readPage(deps: Pick<Deps, 'db' | 'config'>, bookingId: number, limit: number, cursor: ReturnType<typeof decodeTimelineCursor> | null) {
  const rows = await readTimelinePage(deps.db, { bookingId, limit, cursor });
  const { page, next } = timelinePage(rows, limit, cursor);
  const secrets = SECRET_NAMES.map((n) => deps.config[n]);
  return {
    entries: page.map((r) => ({ at: r.at, kind: r.kind, type: r.type, detail: scrubDetail(r.detail, secrets) })),
    nextCursor: next && encodeTimelineCursor(next),
  };
}

/** Of these Kafka events, the ones this deployment's database wrote (the `events` command shows only those). */
export const eventsOfThisDeployment = (deps: Pick<Deps, 'db'>, events: readonly { eventId: string; bookingId: number | null }[]) =>
  recordedEventIds(deps.db, events);

/** The ids of the events this deployment recorded about a booking. */
export const eventsOfBooking = (deps: Pick<Deps, 'db'>, bookingId: number) => bookingEventIds(deps.db, bookingId);
