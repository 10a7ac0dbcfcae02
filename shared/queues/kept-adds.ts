/**
 * Job adds that failed, kept by the process to be added again (shared/queues/producer.ts), by job id, oldest first.
 * Bounded: beyond `cap` the oldest are dropped (the reconciler arms them from PostgreSQL once overdue), so an outage
 * costs the process a bounded amount of memory however long it lasts. Keeping a job id again moves it to the end.
 */
export class KeptAdds<K extends string, J> {
  private readonly kept = new Map<string, { kind: K; job: J }>();

  constructor(private readonly cap: number) {}

  get size(): number {
    return this.kept.size;
  }

  keep(kind: K, jobs: readonly { id: string; job: J }[]): void {
    for (const { id, job } of jobs) {
      this.kept.delete(id);
      this.kept.set(id, { kind, job });
    }
    for (const id of this.kept.keys()) {
      if (this.kept.size <= this.cap) break;
      this.kept.delete(id);
    }
  }

  /** Takes (removes) the oldest kept jobs, at most `perKind` of each kind. */
  take(perKind: number): Map<K, J[]> {
    const byKind = new Map<K, J[]>();
    for (const [id, { kind, job }] of this.kept) {
      const page = byKind.get(kind) ?? [];
      if (page.length >= perKind) continue;
      page.push(job);
      byKind.set(kind, page);
      this.kept.delete(id);
    }
    return byKind;
  }
}
