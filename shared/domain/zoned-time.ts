/** Offset of `timeZone` from UTC at instant `utcMs`, in ms (positive east of Greenwich). */
function offsetAt(utcMs: number, timeZone: string): number {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit',
    hour: '2-digit', minute: '2-digit', second: '2-digit',
  }).formatToParts(new Date(utcMs));
  const get = (t: string) => Number(parts.find((p) => p.type === t)?.value);
  const asUtc = Date.UTC(get('year'), get('month') - 1, get('day'), get('hour'), get('minute'), get('second'));
  return asUtc - Math.floor(utcMs / 1000) * 1000;
}

/**
 * The instant at which the wall-clock `date` `time` (YYYY-MM-DD, HH:MM[:SS]) happens in `timeZone`.
 * A wall time that happens twice (clocks set back) is its first occurrence; one skipped by a jump
 * forward resolves to the instant just after the jump (02:30 on a 02:00→03:00 night is 03:30).
 */
export function zonedWallTimeToInstant(date: string, time: string, timeZone: string): Date {
  const [y, m, d] = date.split('-').map(Number) as [number, number, number];
  const [hh, mm, ss = 0] = time.split(':').map(Number) as [number, number, number?];
  const wall = Date.UTC(y, m - 1, d, hh, mm, ss);
  // Offsets in force half a day either side cover any single transition near this wall time.
  const before = offsetAt(wall - 12 * 3_600_000, timeZone);
  const after = offsetAt(wall + 12 * 3_600_000, timeZone);
  const matching = [wall - before, wall - after].filter((t) => t + offsetAt(t, timeZone) === wall);
  if (matching.length) return new Date(Math.min(...matching));
  return new Date(wall - before);
}

export function isValidTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return tz.includes('/') || tz === 'UTC';
  } catch {
    return false;
  }
}
