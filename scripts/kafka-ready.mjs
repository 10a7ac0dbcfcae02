#!/usr/bin/env node
// Exit 0 once a Kafka broker answers (admin connect + describeCluster + listTopics), else 1.
// Usage: node scripts/kafka-ready.mjs [waitSeconds=10] [brokers=$KAFKA_BROKERS|127.0.0.1:9092]
import { Kafka, logLevel } from 'kafkajs';

const waitMs = Number(process.argv[2] ?? 10) * 1000;
const brokers = (process.argv[3] || process.env.KAFKA_BROKERS || '127.0.0.1:9092')
  .split(',').map((s) => s.trim()).filter(Boolean);
const deadline = Date.now() + waitMs;
const kafka = new Kafka({
  clientId: 'kafka-ready',
  brokers,
  connectionTimeout: 1000,
  requestTimeout: 3000,
  retry: { retries: 0 },
  logLevel: logLevel.NOTHING,
});

async function probe() {
  const admin = kafka.admin();
  try {
    await admin.connect();
    const cluster = await admin.describeCluster();
    await admin.listTopics();
    return cluster;
  } finally {
    await admin.disconnect().catch(() => {});
  }
}

let lastError;
for (;;) {
  try {
    const cluster = await probe();
    const nodes = cluster.brokers.map((b) => `${b.nodeId}@${b.host}:${b.port}`).join(',');
    console.log(`kafka ready: cluster ${cluster.clusterId}, brokers ${nodes}`);
    process.exit(0);
  } catch (err) {
    lastError = err;
  }
  if (Date.now() >= deadline) break;
  await new Promise((r) => setTimeout(r, 500));
}
console.error(`kafka not ready at ${brokers.join(',')}: ${lastError?.message ?? lastError}`);
process.exit(1);
