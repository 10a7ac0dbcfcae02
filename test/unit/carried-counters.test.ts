import fc from 'fast-check';
import { AggregatorRegistry, Counter, Gauge, Histogram, Registry, type MetricObjectWithValues, type MetricValue } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { CarriedCounters } from '../../api/carried-counters.js';

// What a scrape of an API cluster sums (api/metrics.ts): each live worker's metrics, and what CarriedCounters keeps of
// the workers gone. Prometheus reads any drop of a counter as a reset, so the sum must never go down when a worker
// exits and a fresh one (counting from 0) takes its place.

type Json = MetricObjectWithValues<MetricValue<string>>[];

/** One worker's registry: a request counter, a latency histogram and a gauge, as the API's. */
function worker() {
  const registry = new Registry();
  const requests = new Counter({ name: 'requests_total', help: 'r', registers: [registry] });
  const latency = new Histogram({ name: 'latency_seconds', help: 'l', buckets: [0.1, 1], registers: [registry] });
  const inFlight = new Gauge({ name: 'in_flight', help: 'g', registers: [registry] });
  return { registry, requests, latency, inFlight, json: async () => (await registry.getMetricsAsJSON()) as Json };
}

const valueOf = (json: Json, name: string, suffix = ''): number =>
  json.find((m) => m.name === name)?.values.filter((v) => (v as { metricName?: string }).metricName === undefined || (v as { metricName?: string }).metricName === `${name}${suffix}`)
    .reduce((a, v) => a + v.value, 0) ?? 0;

/**
 * A scrape as api/cluster.ts relays it: the live workers answer (those in `late` miss the deadline and count with
 * their last report), `exiting` answers and then exits before the scrape is summed (its answer is dropped: its last
 * report is carried instead), and the carried ones are added.
 */
async function scrape(carried: CarriedCounters, live: Map<number, ReturnType<typeof worker>>, late = new Set<number>(), exiting?: number): Promise<Json> {
  const answers = new Map<number, Json>();
  for (const [id, w] of live) {
    if (late.has(id)) continue;
    const json = await w.json();
    carried.seen(id, json);
    answers.set(id, json);
  }
  if (exiting !== undefined) {
    carried.gone(exiting);
    answers.delete(exiting);
    live.delete(exiting);
  }
  return (await AggregatorRegistry.aggregate([...answers.values(), ...carried.lastOf(late), ...carried.departed()]).getMetricsAsJSON()) as Json;
}

describe('CarriedCounters (api/carried-counters.ts)', () => {
  it('keeps a gone worker\'s counters and histograms in the sum, not its gauges', async () => {
    const carried = new CarriedCounters();
    const live = new Map([[1, worker()], [2, worker()]]);
    live.get(1)!.requests.inc(5);
    live.get(2)!.requests.inc(7);
    live.get(1)!.latency.observe(0.05);
    live.get(1)!.inFlight.set(3);
    live.get(2)!.inFlight.set(4);
    const before = await scrape(carried, live);
    expect(valueOf(before, 'requests_total')).toBe(12);

    carried.gone(1);
    live.delete(1);
    live.set(3, worker());
    const after = await scrape(carried, live);
    expect(valueOf(after, 'requests_total')).toBe(12);
    expect(valueOf(after, 'latency_seconds', '_count')).toBe(1);
    expect(valueOf(after, 'in_flight')).toBe(4);
  });

  it('never lets a counter\'s sum go down, whatever the order of increments, scrapes and exits', async () => {
    const step = fc.oneof(
      fc.record({ kind: fc.constant('inc' as const), slot: fc.nat(3), by: fc.integer({ min: 1, max: 5 }) }),
      fc.record({ kind: fc.constant('scrape' as const), late: fc.subarray([0, 1, 2, 3]), exiting: fc.option(fc.nat(3)) }),
      fc.record({ kind: fc.constant('restart' as const), slot: fc.nat(3) }),
    );
    await fc.assert(fc.asyncProperty(fc.array(step, { maxLength: 60 }), async (steps) => {
      const carried = new CarriedCounters();
      let nextId = 0;
      const slots = Array.from({ length: 4 }, () => nextId++);
      const live = new Map(slots.map((id) => [id, worker()]));
      let last = 0;
      const restart = (slot: number) => {
        carried.gone(slots[slot]!);
        live.delete(slots[slot]!);
        slots[slot] = nextId++;
        live.set(slots[slot]!, worker());
      };
      for (const s of [...steps, { kind: 'scrape' as const, late: [], exiting: null }]) {
        if (s.kind === 'inc') live.get(slots[s.slot]!)!.requests.inc(s.by);
        else if (s.kind === 'restart') restart(s.slot);
        else {
          // A late worker is one that missed the deadline; one exiting mid-scrape answered first.
          const late = new Set(s.late.map((slot) => slots[slot]!).filter((id) => id !== (s.exiting === null ? undefined : slots[s.exiting])));
          const exiting = s.exiting === null ? undefined : slots[s.exiting]!;
          const sum = valueOf(await scrape(carried, live, late, exiting), 'requests_total');
          if (s.exiting !== null) {
            slots[s.exiting] = nextId++;
            live.set(slots[s.exiting]!, worker());
          }
          expect(sum).toBeGreaterThanOrEqual(last);
          last = sum;
        }
      }
      // Once a merge of the departed (beyond 8 of them) has run, the sum is the same.
      await new Promise((r) => setTimeout(r, 0));
      expect(valueOf(await scrape(carried, live), 'requests_total')).toBe(last);
    }), { numRuns: 200 });
  });
});
