import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';
import { uniformInt } from 'pure-rand/distribution/uniformInt';
import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64';

/** The chaos run's one source of randomness: the same --seed gives the same workload and fault schedule. */
export function seeded(seed: number) {
  const g = xoroshiro128plus(seed);
  const next = () => uniformFloat64(g);
  const int = (min: number, max: number) => uniformInt(g, min, max);
  const pick = <T>(xs: readonly T[]): T => xs[int(0, xs.length - 1)]!;
  const chance = (p: number) => next() < p;
  /** A key of `w`, with probability proportional to its weight. */
  const weighted = <K extends string>(w: Record<K, number>): K => {
    const entries = Object.entries<number>(w) as [K, number][];
    let r = next() * entries.reduce((s, [, x]) => s + x, 0);
    for (const [k, x] of entries) if ((r -= x) < 0) return k;
    return entries[0]![0];
  };
  /** A copy of `xs` in a seeded order. */
  const shuffle = <T>(xs: readonly T[]): T[] => {
    const a = [...xs];
    for (let i = a.length - 1; i > 0; i--) {
      const j = int(0, i);
      [a[i], a[j]] = [a[j]!, a[i]!];
    }
    return a;
  };
  return { next, int, pick, chance, weighted, shuffle };
}
export type Rng = ReturnType<typeof seeded>;
