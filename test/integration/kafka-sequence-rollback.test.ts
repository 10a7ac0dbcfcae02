import { randomBytes } from 'node:crypto';
import type { Kafka } from 'kafkajs';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/http.js';
import { lossyProduceSockets } from '../helpers/kafka-faults.js';
import { readTopicsToEnd } from '../../scripts/invariants/outbox-kafka.js';
import { createKafka, KafkaPublisher } from '../../workers/kafka.js';

// A produce request whose answer is lost after the broker wrote the batch. kafkajs takes that request's sequence
// numbers back, so its next batch to the partition reuses them; with as many messages, the broker takes it for a
// duplicate, acknowledges it and drops it. The first test pins that library behaviour on a real broker; the second
// shows the outbox pump's publisher does not lose the second batch (it replaces its producer after a failed send).

const BROKERS = ['127.0.0.1:9092'];
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});

/** A new topic of one partition: every message lands in the same partition, under one sequence. */
async function oneTopic(kafka: Kafka): Promise<string> {
  const topic = `seq-${randomBytes(5).toString('hex')}`;
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 1, replicationFactor: 1 }], waitForLeaders: true });
  await admin.disconnect();
  return topic;
}

async function valuesIn(kafka: Kafka, topic: string): Promise<string[]> {
  const ids: string[] = [];
  await readTopicsToEnd(kafka, [topic], 30_000, (m) => ids.push(m.eventId ?? '?'));
  return ids;
}
const message = (id: string) => ({ key: 'k', value: id, headers: { 'event-id': id } });

describe('a produce answer lost after the broker wrote the batch', () => {
  it('kafkajs (idempotent) then acknowledges the next batch of that size and drops it — the behaviour the publisher works around', async () => {
    const faults = lossyProduceSockets();
    const kafka = createKafka(BROKERS, 'seq-pin', { socketFactory: faults.socketFactory, retry: { retries: 1, initialRetryTime: 100 } });
    const topic = await oneTopic(kafka);
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    cleanups.push(() => producer.disconnect());

    faults.dropProduceAnswers = true;
    await expect(producer.send({ topic, acks: -1, messages: [message('A')] })).rejects.toThrow();
    expect(faults.dropped).toBeGreaterThan(0);
    faults.dropProduceAnswers = false;
    await producer.send({ topic, acks: -1, messages: [message('X')] }); // resolves: "acknowledged"

    expect(await valuesIn(createKafka(BROKERS, 'seq-pin-reader'), topic)).toEqual(['A']); // X is not there
  }, 60_000);

  it('the outbox publisher sends the next batch under a new producer: it lands', async () => {
    const faults = lossyProduceSockets();
    const kafka = createKafka(BROKERS, 'seq-publisher-admin');
    const topic = await oneTopic(kafka);
    const publisher = new KafkaPublisher(BROKERS, `p${randomBytes(4).toString('hex')}.`, () => {}, {
      socketFactory: faults.socketFactory, retry: { retries: 1, initialRetryTime: 100 },
    });
    publisher.start();
    cleanups.push(() => publisher.stop());
    const lane = async () => {
      return waitFor(async () => publisher.lane(), 30_000);
    };

    faults.dropProduceAnswers = true;
    await expect((await lane()).producer.sendBatch({ acks: -1, topicMessages: [{ topic, messages: [message('A')] }] })).rejects.toThrow();
    publisher.failed(); // what the pump does after a failed pass
    faults.dropProduceAnswers = false;
    await (await lane()).producer.sendBatch({ acks: -1, topicMessages: [{ topic, messages: [message('X')] }] });

    expect(await valuesIn(kafka, topic)).toEqual(['A', 'X']);
  }, 60_000);
});
