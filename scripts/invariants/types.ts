// What every invariant of `npm run check:invariants` gets and gives back (scripts/check-invariants.ts).

/** One delivery the test notification receiver saw (a line of its log, JSON). */
export interface NotifyDelivery {
  /** The Idempotency-Key header, when the sender set one. */
  idempotencyKey?: string | null;
  eventId?: string;
  channel?: string;
}

export interface CheckContext {
  /** Read-only queries inside one REPEATABLE READ snapshot. */
  query: <R = Record<string, unknown>>(text: string, params?: unknown[]) => Promise<R[]>;
  /** PAYMENT_GRACE_S: how long past holdExpiresAt a HOLD may be kept while a payment may be in flight. */
  graceS: number;
  /** The provider (PSP_URL, PSP_API_KEY), when configured. */
  psp: { url: string; apiKey: string } | null;
  /** Kafka (KAFKA_BROKERS, KAFKA_TOPIC_PREFIX), when configured. */
  kafka: { brokers: string[]; prefix: string } | null;
  /** The notification receiver's deliveries (NOTIFY_LOG), when given. */
  notifyLog: NotifyDelivery[] | null;
  /** Redis (REDIS_URL, REDIS_CLUSTER_NODES) and the queues' prefix (QUEUE_PREFIX), when given: the jobs are checked too. */
  redis: { url: string; clusterNodes?: string; prefix: string } | null;
}

export interface InvariantReport {
  checked: number;
  /** One line per violation (the printer shows the first few). */
  violations: string[];
  /** Why part of the check could not run (e.g. no Kafka configured); not a violation. */
  note?: string;
}

export interface Invariant {
  /** Stable name printed on its line and used by tests (`--only`). */
  name: string;
  check(ctx: CheckContext): Promise<InvariantReport>;
}

/** Runs `fn` over `items` with at most `limit` at a time. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}
