// Hotel dates are calendar dates (YYYY-MM-DD) in the hotel's own time zone. Arithmetic on them is done on the
// UTC calendar, where every day has 24 hours: a daylight-saving change in the hotel's zone never shifts a date.

const DAY_MS = 86_400_000;

/** `date` plus `n` days. */
export const addDays = (date: string, n: number): string =>
  new Date(Date.parse(`${date}T00:00:00Z`) + n * DAY_MS).toISOString().slice(0, 10);

/** The `count` consecutive dates starting at `from`. */
export const datesFrom = (from: string, count: number): string[] => Array.from({ length: count }, (_, i) => addDays(from, i));

const formats = new Map<string, Intl.DateTimeFormat>();
/** Per zone, the last answer and the UTC second it was for (formatToParts costs ~10 µs, once per quote and hold). */
const lastToday = new Map<string, { second: number; date: string }>();

/**
 * The date it is at `now` on the hotel's wall clock (its IANA zone, daylight saving included). Every zone's offset
 * is a whole number of seconds, so its date can change only on a whole UTC second: one answer serves its second.
 */
export function hotelToday(now: Date, timeZone: string): string {
  const second = Math.floor(now.getTime() / 1000);
  const last = lastToday.get(timeZone);
  if (last?.second === second) return last.date;
  let f = formats.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' });
    formats.set(timeZone, f);
  }
  const parts = f.formatToParts(now);
  const get = (t: Intl.DateTimeFormatPartTypes) => parts.find((p) => p.type === t)!.value;
  const date = `${get('year').padStart(4, '0')}-${get('month')}-${get('day')}`;
  lastToday.set(timeZone, { second, date });
  return date;
}
