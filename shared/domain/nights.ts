import { validation } from './errors.js';

// Hotel nights are calendar dates (YYYY-MM-DD) in the hotel's own time zone; a range [from, to) excludes `to`.

export const DAY_MS = 86_400_000;

/** Number of nights in [from, to); zero or negative when `to` is not after `from`. */
export const nightsBetween = (from: string, to: string): number =>
  Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / DAY_MS);

/** An operator's range of nights (inventory; later rate calendars) spans at most this many nights. */
export const MAX_RANGE_NIGHTS = 366;

/**
 * The nights of [from, to), or 400 VALIDATION on the `to` field when there are none or more than `max`.
 * `names` are the request's field names (`checkIn`/`checkOut` for a stay) and what the range is.
 */
export function checkNightRange(
  from: string,
  to: string,
  max: number,
  names: { from: string; to: string; what: string },
): number {
  const n = nightsBetween(from, to);
  if (n < 1) throw validation(names.to, `${names.to} must be after ${names.from}`);
  if (n > max) throw validation(names.to, `${names.what} spans at most ${max} nights`);
  return n;
}
