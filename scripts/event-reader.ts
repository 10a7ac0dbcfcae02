import { randomUUID } from 'node:crypto';
import { Kafka, logLevel, type Admin, type Consumer } from 'kafkajs';

// Reads booking events from Kafka for the `events` command: what is there now (up to the end offsets each partition
// had when reading began), then, when asked, what comes after. A fresh consumer group each run: nothing is
// committed for anyone else.

export interface KafkaEvent {
  topic: string;
  key: string;
  value: string;
  eventId: string | null;
  bookingId: number | null;
  occurredAt: string;
}

export interface EventReader {
  /** Subscribes to the topics that exist (of `topics`); resolves once every partition read so far is caught up. */
  start(onBatch: (events: KafkaEvent[]) => Promise<void>): Promise<void>;
  /** True once every partition has been read to the end offset it had when reading began. */
  caughtUp(): boolean;
  stop(): Promise<void>;
}

function parse(topic: string, key: string, value: string): KafkaEvent {
  let v: { eventId?: unknown; bookingId?: unknown; occurredAt?: unknown } = {};
  try {
    v = JSON.parse(value) as typeof v;
  } catch {
    // not one of ours: no event id, so no deployment claims it
  }
  return {
    topic, key, value,
    eventId: typeof v.eventId === 'string' ? v.eventId : null,
    bookingId: typeof v.bookingId === 'number' ? v.bookingId : null,
    occurredAt: typeof v.occurredAt === 'string' ? v.occurredAt : '',
  };
}

export function eventReader(brokers: string[], topics: readonly string[], fromBeginning: boolean): EventReader {
  const kafka = new Kafka({ clientId: 'booking-events-cli', brokers, logLevel: logLevel.NOTHING, retry: { retries: 2 } });
  const admin: Admin = kafka.admin();
  // A short fetch wait: reading ends at the end offsets, and a caught-up fetch would otherwise wait 5 s for more.
  const consumer: Consumer = kafka.consumer({ groupId: `events-cli-${randomUUID()}`, maxWaitTimeInMs: 200, heartbeatInterval: 1000 });
  // topic:partition → the offset reading must pass to be caught up (new events only: none to catch up on).
  const pending = new Map<string, bigint>();
  return {
    async start(onBatch) {
      await admin.connect();
      const existing = new Set(await admin.listTopics());
      const ours = topics.filter((t) => existing.has(t));
      if (fromBeginning) {
        for (const t of ours) {
          for (const p of await admin.fetchTopicOffsets(t)) {
            if (BigInt(p.high) > BigInt(p.low)) pending.set(`${t}:${p.partition}`, BigInt(p.high));
          }
        }
      }
      await admin.disconnect();
      if (ours.length === 0) return;
      await consumer.connect();
      await consumer.subscribe({ topics: ours, fromBeginning });
      await consumer.run({
        eachBatch: async ({ batch, resolveOffset, heartbeat }) => {
          const events = batch.messages.map((m) => parse(batch.topic, m.key?.toString() ?? '', m.value?.toString() ?? ''));
          await onBatch(events);
          const last = batch.messages.at(-1);
          if (last) {
            resolveOffset(last.offset);
            const end = pending.get(`${batch.topic}:${batch.partition}`);
            if (end !== undefined && BigInt(last.offset) + 1n >= end) pending.delete(`${batch.topic}:${batch.partition}`);
          }
          await heartbeat();
        },
      });
    },
    caughtUp: () => pending.size === 0,
    async stop() {
      await consumer.disconnect().catch(() => {});
      await admin.disconnect().catch(() => {});
    },
  };
}
