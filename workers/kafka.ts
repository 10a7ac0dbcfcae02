import { Kafka, logLevel, type KafkaConfig, type Producer } from 'kafkajs';
import { EVENT_TYPES, topicName } from '../shared/events/topics.js';
import { logger } from '../shared/logger.js';
import { backoffMs, type Backoff } from '../shared/domain/backoff.js';

/** `extra`: further client settings (tests pass a `socketFactory` that injects network faults). */
export function createKafka(brokers: string[], clientId = 'booking-pump', extra: Partial<KafkaConfig> = {}) {
  return new Kafka({ clientId, brokers, logLevel: logLevel.NOTHING, retry: { retries: 5, initialRetryTime: 200 }, ...extra });
}

/**
 * How a new topic is replicated on a cluster of `brokers`: 3 copies with min.insync.replicas=2 from 3 brokers on, so
 * a send acknowledged with acks=all (the pump's) is on two brokers at least and one broker may die without losing an
 * acknowledged event or refusing a send; on fewer brokers as many copies as there are (a single node: 1).
 */
export function topicReplication(brokers: number): { replicationFactor: number; configEntries: { name: string; value: string }[] } {
  const replicationFactor = Math.max(1, Math.min(3, brokers));
  return { replicationFactor, configEntries: [{ name: 'min.insync.replicas', value: String(replicationFactor >= 3 ? 2 : 1) }] };
}

export async function ensureTopics(kafka: Kafka, prefix: string): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const missing = EVENT_TYPES.map((t) => topicName(prefix, t)).filter((t) => !existing.has(t));
    if (missing.length) {
      const replication = topicReplication((await admin.describeCluster()).brokers.length);
      await admin.createTopics({ topics: missing.map((topic) => ({ topic, numPartitions: 3, ...replication })), waitForLeaders: true });
    }
  } finally {
    await admin.disconnect();
  }
}

/** What a pump pass needs to publish: a producer (only its sendBatch) and the topic prefix. */
export interface KafkaLane {
  producer: Pick<Producer, 'sendBatch'>;
  prefix: string;
}

/** Reconnects and pauses after a failed send: 1 s doubling to 30 s (the one backoff, shared/domain/backoff.ts). */
const KAFKA_BACKOFF: Backoff = { baseMs: 1000, capMs: 30_000 };

/**
 * An idempotent producer kept connected in the background, so no pump pass ever waits on a broker that is not
 * there: `lane()` is null until connected, and for a backoff (1 s doubling to 30 s) after a failed send.
 *
 * A failed send retires the producer and a new one (a new producer id) takes over. kafkajs takes a failed produce
 * request's sequence numbers back, although the broker may have written the batch before the answer was lost. The
 * next batch to that partition then reuses those numbers, and if it has as many messages the broker takes it for a
 * duplicate: it acknowledges it and drops it (test/integration/kafka-sequence-rollback.test.ts pins this). The pump
 * would mark those events published although they are not in Kafka. A new producer starts its own sequences, so
 * nothing it sends can be taken for what the old one sent.
 */
export class KafkaPublisher {
  private readonly kafka: Kafka;
  private producer: Producer;
  private connected = false;
  private stopped = false;
  private connecting: Promise<void> | null = null;
  private pausedUntil = 0;
  /** Failed sends in a row. */
  private failures = 0;
  /** Producers retired after a failed send, disconnecting (stop() waits for them). */
  private readonly retiring = new Set<Promise<void>>();

  constructor(
    brokers: string[], private readonly prefix: string, private readonly onReady: () => void = () => {},
    kafkaConfig: Partial<KafkaConfig> = {},
  ) {
    this.kafka = createKafka(brokers, undefined, kafkaConfig);
    this.producer = this.newProducer();
  }

  private newProducer(): Producer {
    const producer = this.kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: true });
    producer.on(producer.events.DISCONNECT, () => {
      if (producer !== this.producer) return; // a retired producer
      this.connected = false;
      this.start();
    });
    return producer;
  }

  /** Connects (retrying with backoff) unless connected or connecting already. */
  start(): void {
    if (this.stopped || this.connected || this.connecting) return;
    this.connecting = (async () => {
      for (let attempt = 1; !this.stopped && !this.connected; attempt++) {
        const producer = this.producer;
        try {
          await producer.connect();
          await ensureTopics(this.kafka, this.prefix);
          if (producer !== this.producer) continue; // retired while connecting: connect its successor
          this.connected = true;
          this.onReady();
        } catch (err) {
          logger.warn({ err: String(err) }, 'kafka not reachable; events wait in the outbox');
          await new Promise((r) => setTimeout(r, backoffMs(attempt, KAFKA_BACKOFF)));
        }
      }
    })().finally(() => {
      this.connecting = null;
    });
  }

  /** The lane for a pass, or null while not connected or backing off after a failure. */
  lane(): KafkaLane | null {
    if (!this.connected || Date.now() < this.pausedUntil) return null;
    return { producer: this.producer, prefix: this.prefix };
  }

  succeeded(): void {
    this.failures = 0;
  }

  /** After a failed send: pause, and replace the producer (see the class comment). */
  failed(): void {
    this.failures++;
    this.pausedUntil = Date.now() + backoffMs(this.failures, KAFKA_BACKOFF);
    const retired = this.producer;
    this.producer = this.newProducer();
    this.connected = false;
    // A send the pass gave up on may still be retrying inside the retired producer: whatever it writes is a
    // duplicate of rows still unmarked, which a later pass publishes again.
    const disconnecting = retired.disconnect().catch(() => {});
    this.retiring.add(disconnecting);
    void disconnecting.finally(() => this.retiring.delete(disconnecting));
    this.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.connecting?.catch(() => {});
    await Promise.all([this.producer.disconnect().catch(() => {}), ...this.retiring]);
  }
}
