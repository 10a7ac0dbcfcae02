// A city's cars (by their place in its price order) against time cut into fixed buckets: bit (car, bucket) is set
// when one of the car's blocked intervals overlaps the bucket. A search reads it to skip, 32 cars at a time, every
// car that is busy in a bucket lying wholly inside the searched period: such a car cannot be free (its interval
// overlaps that bucket, and so the period). The cars left are checked exactly, so the bits only ever need to be
// true when set: a bit missing costs an exact check, never a wrong answer.

/** Bucket length: 4 hours (a 1-day search spans at least 5 whole buckets). */
export const BUCKET_MS = 4 * 3_600_000;
/** Buckets kept from the base: 400 days. Periods beyond them are checked car by car. */
export const BUCKETS = 6 * 400;

export class BusyBits {
  /** 32-car words; bits[word * BUCKETS + bucket] (a word's buckets side by side: a search reads them in a row). */
  private readonly bits: Int32Array;
  readonly words: number;

  /**
   * @param maxTurnaroundMs the longest turnaround of the city's cars: a car busy in no bucket touching
   *   [from, to + maxTurnaroundMs) is free for [from, to) without asking its intervals.
   */
  constructor(readonly base: number, readonly cars: number, readonly maxTurnaroundMs: number) {
    this.words = Math.ceil(cars / 32);
    this.bits = new Int32Array(this.words * BUCKETS);
  }

  /** Buckets [b0, b1) overlapping [lo, hi), clamped to the kept ones. */
  touching(lo: number, hi: number): [number, number] {
    if (!(hi > lo)) return [0, 0];
    const b0 = Math.max(0, Math.floor((lo - this.base) / BUCKET_MS));
    const b1 = Math.min(BUCKETS, Math.ceil((hi - this.base) / BUCKET_MS));
    return [b0, b1];
  }

  /** Sets the bits of car `pos` for every bucket [lo, hi) overlaps (an empty interval marks none: a bit must be true). */
  mark(pos: number, lo: number, hi: number): void {
    const [b0, b1] = this.touching(lo, hi);
    const row = (pos >>> 5) * BUCKETS;
    const bit = 1 << (pos & 31);
    for (let b = b0; b < b1; b++) this.bits[row + b]! |= bit;
  }

  /**
   * Clears car `pos`'s bits for the buckets [lo, hi) overlaps, and returns the time they span: the caller marks
   * again the car's other intervals reaching into it (they may share the end buckets).
   */
  clear(pos: number, lo: number, hi: number): [number, number] {
    const [b0, b1] = this.touching(lo, hi);
    const row = (pos >>> 5) * BUCKETS;
    const keep = ~(1 << (pos & 31));
    for (let b = b0; b < b1; b++) this.bits[row + b]! &= keep;
    return [this.base + b0 * BUCKET_MS, this.base + b1 * BUCKET_MS];
  }

  /** Whether every bucket [lo, hi) overlaps is kept (bits then say all there is about [lo, hi)). */
  covers(lo: number, hi: number): boolean {
    return lo >= this.base && hi <= this.base + BUCKETS * BUCKET_MS;
  }

  /** Buckets lying wholly inside [from, to) (empty when none is kept). */
  inside(from: number, to: number): [number, number] {
    const b0 = Math.max(0, Math.ceil((from - this.base) / BUCKET_MS));
    const b1 = Math.min(BUCKETS, Math.floor((to - this.base) / BUCKET_MS));
    return b1 > b0 ? [b0, b1] : [0, 0];
  }

  /** Bit k set: car word * 32 + k is busy in one of the buckets [b0, b1). */
  busyIn(word: number, b0: number, b1: number): number {
    const row = word * BUCKETS;
    let m = 0;
    for (let b = row + b0; b < row + b1; b++) m |= this.bits[b]!;
    return m;
  }
}

/** What the walk reads of a car: its blocked intervals [lo, hi) sorted and disjoint, its turnaround, its place. */
export interface WalkedCar {
  lo: number[];
  hi: number[];
  turnaroundMs: number;
  pos: number;
}

/** Index of the first interval whose end is after `t` (intervals sorted, disjoint). */
export function firstEndingAfter(hi: readonly number[], t: number): number {
  let a = 0;
  let b = hi.length;
  while (a < b) {
    const m = (a + b) >>> 1;
    if (hi[m]! > t) b = m;
    else a = m + 1;
  }
  return a;
}

/**
 * The cars of `list` (one city, in price order, `bits` made for it) free for [from, to + their turnaround), in
 * order, at most `limit`.
 */
export function walkFree<C extends WalkedCar>(list: readonly C[], bits: BusyBits, from: number, to: number, limit: number): C[] {
  const out: C[] = [];
  // Buckets wholly inside [from, to): every car's period [from, to + turnaround) contains them, so a car busy in
  // one is taken. Buckets touching [from, to + the longest turnaround): a car busy in none is free.
  const [b0, b1] = bits.inside(from, to);
  const end = to + bits.maxTurnaroundMs;
  const [t0, t1] = bits.covers(from, end) ? bits.touching(from, end) : [0, 0];
  for (let w = 0; w < bits.words; w++) {
    const inner = bits.busyIn(w, b0, b1);
    let maybe = ~inner;
    const left = list.length - (w << 5);
    if (left < 32) maybe &= (1 << left) - 1;
    const idle = t1 > t0 ? ~(inner | bits.busyIn(w, t0, b0 > t0 ? b0 : t1) | (b1 > b0 ? bits.busyIn(w, b1, t1) : 0)) : 0;
    while (maybe !== 0) {
      const low = maybe & -maybe;
      maybe ^= low;
      const e = list[(w << 5) + 31 - Math.clz32(low)]!;
      if ((idle & low) === 0) {
        const i = firstEndingAfter(e.hi, from);
        if (i < e.lo.length && e.lo[i]! < to + e.turnaroundMs) continue;
      }
      out.push(e);
      if (out.length >= limit) return out;
    }
  }
  return out;
}
