import { parseArgs } from 'node:util';
import { parseConfig } from '../shared/config.js';
import { createDb } from '../shared/db/pool.js';
import { probeDatabase } from '../shared/db/migrate.js';
import { EVENT_TYPES, topicName } from '../shared/events/topics.js';
import { eventsOfBooking, eventsOfThisDeployment } from '../shared/usecases/timeline.js';
import { LOCAL_BROKER } from './local-kafka.js';
import { eventReader, type KafkaEvent } from './event-reader.js';
import { redactUrl } from './preflight.js';

// `npm run -s events [-- --from-beginning] [--booking ID] [--follow] [--max N]`: this deployment's events on Kafka,
// one line each: occurredAt, topic, key, then the JSON value. Brokers as `npm start` uses them (KAFKA_BROKERS, else
// the local 127.0.0.1:9092). Only events this deployment's database wrote are shown (a broker may be shared by
// other deployments and test runs with the same topic names); what was on Kafka when reading began is printed in
// time order (occurredAt), and the command ends there unless --follow. `--booking ID`: that booking's events, from
// the beginning; it ends once every event the database recorded for it has been seen (or says which are missing).
const { values } = parseArgs({
  options: {
    'from-beginning': { type: 'boolean', default: false },
    follow: { type: 'boolean', default: false },
    max: { type: 'string' },
    booking: { type: 'string' },
  },
});
const max = values.max ? Number(values.max) : Infinity;
const booking = values.booking === undefined ? null : Number(values.booking);
if (booking !== null && !(Number.isSafeInteger(booking) && booking > 0)) {
  console.error(`--booking: a booking id is a positive integer (got ${values.booking})`);
  process.exit(2);
}
const config = parseConfig();
const raw = process.env.KAFKA_BROKERS?.trim();
const brokers = raw && raw !== 'none' ? config.kafkaBrokers : [LOCAL_BROKER];
const unreachable = await probeDatabase(config.DATABASE_URL);
if (unreachable) {
  console.error(`cannot reach PostgreSQL (DATABASE_URL ${redactUrl(config.DATABASE_URL)}): ${unreachable}; it tells this deployment's events apart`);
  process.exit(2);
}
const db = await createDb(config.DATABASE_URL, { maximumPoolSize: 2 });
const expected = booking === null ? null : new Set(await eventsOfBooking({ db }, booking));
if (expected?.size === 0) {
  console.error(`booking ${booking} has no events in this deployment's database (${redactUrl(config.DATABASE_URL)})`);
  await db.end();
  process.exit(1);
}

const fromBeginning = values['from-beginning'] || booking !== null;
const follow = values.follow || !fromBeginning; // new events only: nothing to end on, so it follows
const reader = eventReader(brokers, EVENT_TYPES.map((t) => topicName(config.KAFKA_TOPIC_PREFIX, t)), fromBeginning);
const seen = new Set<string>();
let buffered: KafkaEvent[] = [];
let live = false;
let printed = 0;

async function stop(code = 0): Promise<never> {
  await reader.stop();
  await db.end().catch(() => {});
  process.exit(code);
}
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());

function print(e: KafkaEvent) {
  console.log(`${e.occurredAt} ${e.topic.padEnd(20)} key=${e.key.padEnd(6)} ${e.value}`);
  if (++printed >= max) void stop();
}
const byTime = (a: KafkaEvent, b: KafkaEvent) => a.occurredAt.localeCompare(b.occurredAt) || a.topic.localeCompare(b.topic) || (a.eventId ?? '').localeCompare(b.eventId ?? '');

async function onBatch(events: KafkaEvent[]) {
  const candidates = events.filter((e) => e.eventId && (booking === null || (e.bookingId === booking && expected!.has(e.eventId))));
  const ours = await eventsOfThisDeployment({ db }, candidates.map((e) => ({ eventId: e.eventId!, bookingId: e.bookingId })));
  // At least once: a redelivered event is shown once.
  const fresh = candidates.filter((e) => ours.has(e.eventId!) && !seen.has(e.eventId!));
  for (const e of fresh) seen.add(e.eventId!);
  if (live) fresh.sort(byTime).forEach(print);
  else buffered.push(...fresh);
}

try {
  await reader.start(onBatch);
} catch (e) {
  console.error(`cannot read events from Kafka at ${brokers.join(',')}: ${(e as Error).message}`);
  await stop(1);
}
console.error(`reading ${brokers.join(',')} (${fromBeginning ? 'from the beginning' : 'new events only'}${follow ? '; Ctrl-C to stop' : ''})`);

// What was there when reading began, in time order; for a booking, until every event it recorded has come
// (the pump may still be relaying the last ones), at most 15 s longer.
const t0 = Date.now();
const done = () => reader.caughtUp() && (expected === null || [...expected].every((id) => seen.has(id)));
while (!done() && Date.now() - t0 < 30_000 && !(reader.caughtUp() && expected !== null && Date.now() - t0 > 15_000)) {
  await new Promise((r) => setTimeout(r, 100));
}
live = true;
buffered.sort(byTime).forEach(print);
buffered = [];
if (expected) {
  const missing = [...expected].filter((id) => !seen.has(id));
  console.error(missing.length
    ? `${missing.length} of booking ${booking}'s ${expected.size} events are not on Kafka yet (they wait in the outbox until the pump relays them): ${missing.join(', ')}`
    : `all ${expected.size} events of booking ${booking}, oldest first`);
} else if (!reader.caughtUp()) {
  console.error('stopped reading before the end of every topic (30 s)');
}
if (!follow) await stop(0);
