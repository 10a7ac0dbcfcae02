import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { Kafka, logLevel } from 'kafkajs';
import { parseConfig } from '../shared/config.js';
import { EVENT_TYPES, topicName } from '../shared/events/topics.js';
import { LOCAL_BROKER } from './local-kafka.js';

// `npm run -s events [-- --from-beginning] [--max N] [--booking ID]`: prints the booking events on Kafka,
// one line each: occurredAt, topic, key, then the JSON value. Brokers as `npm start` uses them (KAFKA_BROKERS, else
// the local 127.0.0.1:9092). A fresh consumer group each run: nothing is committed for anyone else.
const { values } = parseArgs({
  options: {
    'from-beginning': { type: 'boolean', default: false },
    max: { type: 'string' },
    booking: { type: 'string' },
  },
});
const max = values.max ? Number(values.max) : Infinity;
const config = parseConfig();
const raw = process.env.KAFKA_BROKERS?.trim();
const brokers = raw && raw !== 'none' ? config.kafkaBrokers : [LOCAL_BROKER];

const kafka = new Kafka({ clientId: 'booking-events-cli', brokers, logLevel: logLevel.NOTHING });
const consumer = kafka.consumer({ groupId: `events-cli-${randomUUID()}` });
let seen = 0;
const stop = async (code = 0) => {
  await consumer.disconnect().catch(() => {});
  process.exit(code);
};
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());

try {
  await consumer.connect();
  await consumer.subscribe({ topics: EVENT_TYPES.map((t) => topicName(config.KAFKA_TOPIC_PREFIX, t)), fromBeginning: values['from-beginning'] });
} catch (e) {
  console.error(`cannot read events from Kafka at ${brokers.join(',')}: ${String(e)}`);
  await stop(1);
}
console.error(`listening on ${brokers.join(',')} (${values['from-beginning'] ? 'from the beginning' : 'new events only'}); Ctrl-C to stop`);
await consumer.run({
  eachMessage: async ({ topic, message }) => {
    const key = message.key?.toString() ?? '';
    const value = message.value?.toString() ?? '';
    const event = JSON.parse(value) as { bookingId?: unknown; occurredAt?: string };
    if (values.booking && String(event.bookingId) !== values.booking) return;
    // Ordered per booking within a topic; across topics, occurredAt tells the sequence.
    console.log(`${event.occurredAt ?? ''} ${topic.padEnd(20)} key=${key.padEnd(6)} ${value}`);
    if (++seen >= max) void stop();
  },
});
