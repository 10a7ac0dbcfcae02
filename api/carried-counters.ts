import { AggregatorRegistry, type MetricObjectWithValues, type MetricValue } from 'prom-client';

type MetricsJson = MetricObjectWithValues<MetricValue<string>>[];

/** Departed workers' counters are merged into one once there are more than this many. */
const MERGE_BEYOND = 8;

/**
 * The counters of API workers that are gone, kept by the cluster's primary so /metrics' sums never go down. A summed
 * counter that dropped when one worker restarted would read to Prometheus as a reset of the whole sum: rate() would
 * count the other workers' totals again. Each worker's last reported metrics (what the last scrape summed) are kept;
 * when it exits, their counters and histograms join every later scrape's sum; while it lives but misses a scrape's
 * deadline, that scrape counts its last report's. Gauges go with their worker.
 */
export class CarriedCounters {
  private readonly last = new Map<number, MetricsJson>();
  private carried: MetricsJson[] = [];

  /** A worker's metrics as a scrape summed them (anything else, e.g. a failed answer's null, is ignored). */
  seen(workerId: number, metrics: unknown): void {
    if (Array.isArray(metrics)) this.last.set(workerId, metrics as MetricsJson);
  }

  /** The worker exited: its last counters are carried from now on. */
  gone(workerId: number): void {
    const last = this.last.get(workerId);
    this.last.delete(workerId);
    if (!last) return;
    this.carried.push(countersOf(last));
    if (this.carried.length > MERGE_BEYOND) this.merge().catch(() => {}); // unmerged, the sums are the same
  }

  /** The last reported counters of these live workers (those that did not answer a scrape in time). */
  lastOf(workerIds: Iterable<number>): MetricsJson[] {
    return [...workerIds].flatMap((id) => {
      const last = this.last.get(id);
      return last ? [countersOf(last)] : [];
    });
  }

  /** What to add to every scrape's sum: the counters of workers gone. */
  departed(): MetricsJson[] {
    return this.carried;
  }

  private async merge(): Promise<void> {
    const merging = [...this.carried];
    const merged = (await AggregatorRegistry.aggregate(merging).getMetricsAsJSON()) as MetricsJson;
    // Workers that left while merging stay beside the merged one.
    this.carried = [merged, ...this.carried.filter((m) => !merging.includes(m))];
  }
}

/** A report's counters and histograms: what may be summed after the fact (a gauge is only true while its worker lives). */
function countersOf(metrics: MetricsJson): MetricsJson {
  // prom-client's JSON names the type as a string ('counter', …), whatever its typings' enum says.
  return metrics.filter((m) => ['counter', 'histogram'].includes(String(m.type)));
}
