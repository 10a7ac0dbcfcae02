import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// The search walk reads each entry's fields in a loop over the city's cars: one hidden class for every entry keeps
// those loads monomorphic. Built from spread literals, each entry got a map of its own and a search cost ~7× more in
// the running API (docs/benchmarks.md). V8's own answer, asked through --allow-natives-syntax in a child process.
describe('the car calendar\'s entries', () => {
  it('share one hidden class, however their cars and intervals came in', () => {
    const probe = fileURLToPath(new URL('./probes/car-entry-maps.ts', import.meta.url));
    const out = execFileSync(process.execPath, ['--allow-natives-syntax', '--import', 'tsx', probe], { encoding: 'utf8' });
    expect(JSON.parse(out.trim().split('\n').pop()!)).toEqual({ entries: 300, maps: 1 });
  }, 30_000);
});
