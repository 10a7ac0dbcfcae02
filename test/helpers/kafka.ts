import type { PreparedDb } from '../../shared/db/prepared.js';
import { KafkaPublisher } from '../../workers/kafka.js';
import { startPump } from '../../workers/pump.js';

/** An outbox pump (workers/pump.ts) in this process, publishing to `brokers` under `prefix`. */
export function startKafkaPump(db: PreparedDb, prefix: string, brokers: string[]) {
  let pump: ReturnType<typeof startPump> | null = null;
  const kafka = new KafkaPublisher(brokers, prefix, () => pump?.kick());
  kafka.start();
  pump = startPump(db, { kafka });
  return {
    kick: pump.kick,
    async stop() {
      await pump!.stop();
      await kafka.stop();
    },
  };
}
