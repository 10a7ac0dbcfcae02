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

/**
 * The real clock, which a test can stop at an instant for a while: a boundary judged to the second (a webhook
 * timestamp 301 s off) then cannot race the next second ticking between the test's reading and the server's.
 */
export function pinnableClock(): Clock & { pin(at: Date | number): void; release(): void } {
  let pinned: number | null = null;
  return {
    now: () => new Date(pinned ?? Date.now()),
    pin: (at) => { pinned = new Date(at).getTime(); },
    release: () => { pinned = null; },
  };
}
