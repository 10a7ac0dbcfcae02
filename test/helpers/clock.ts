import type { Clock } from '../../shared/domain/clock.js';

/** A clock tests can move by hand. */
export function fixedClock(start: Date | string): Clock & { set(d: Date | string): void; advance(ms: number): void } {
  let t = new Date(start).getTime();
  return {
    now: () => new Date(t),
    set: (d) => { t = new Date(d).getTime(); },
    advance: (ms) => { t += ms; },
  };
}
