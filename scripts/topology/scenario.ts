// A run on a topology: open-loop load (load.ts) with the faults at scheduled times, then quiet (nothing owed), then
// check:invariants (the same checks as scripts/check-invariants.ts, in process) and Kafka order per booking.
// Used by test/integration/topology.test.ts (short) and bench/topology.ts (long).
import pg from 'pg';
import { formatResults, runChecks, type CheckResult } from '../invariants/index.js';
import { verifyKafkaOrder, type KafkaOrderResult } from './kafka-order.js';
import { createCars, runLoad, type Samples } from './load.js';
import { rollingRestart } from './apis.js';
import type { Topology } from './topology.js';
import { owedState } from '../chaos/quiet.js';

export type FaultKind = 'redis-master' | 'kafka-broker' | 'api' | 'replica';
export const FAULT_KINDS: FaultKind[] = ['redis-master', 'kafka-broker', 'api', 'replica'];

export interface FaultPlan {
  kind: FaultKind;
  /** seconds into the load */
  at: number;
  /** seconds the broker / API / replica stays down (redis-master: its replica takes over, the killed one stays dead) */
  down?: number;
  /** api: a rolling restart of every API after the killed one is back */
  rolling?: boolean;
}

export interface FaultWindow {
  kind: FaultKind;
  what: string;
  /** seconds into the load */
  from: number;
  to: number;
}

export interface ScenarioResult {
  samples: Samples;
  windows: FaultWindow[];
  /** jobs-armed while holds were still owed, some seconds after the Redis failover */
  armedAfterFailover: CheckResult | null;
  /** for each hold that expired: seconds from its holdExpiresAt to the commit of its expiry (the booking.expired row) */
  expiryLateness: number[];
  quiet: { quiet: boolean; waitedS: number; state: Record<string, number> };
  invariants: CheckResult[];
  violations: number;
  kafka: KafkaOrderResult;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function runScenario(t: Topology, o: {
  cars: number; holdRate: number; searchRate: number; seconds: number; faults: FaultPlan[]; log: (m: string) => void;
  /** after the load: how long to wait for quiet at most */
  quietTimeoutS?: number;
}): Promise<ScenarioResult> {
  const env = t.env;
  const city = `TOPO${Date.now() % 100000}`;
  const carIds = await createCars(t.url, env.JWT_SECRET!, city, o.cars);
  o.log(`${carIds.length} cars in ${city}; load: ${o.holdRate} holds/s + ${o.searchRate} searches/s for ${o.seconds} s; faults: ${o.faults.map((f) => `${f.kind}@${f.at}s`).join(', ') || 'none'}`);
  const windows: FaultWindow[] = [];
  let armedAfterFailover: CheckResult | null = null;
  const t0 = Date.now();
  const now = () => (Date.now() - t0) / 1000;
  const redisNodes = env.REDIS_CLUSTER_NODES;
  const faultRuns = o.faults.map(async (f) => {
    await sleep(f.at * 1000);
    const from = now();
    try {
      if (f.kind === 'redis-master') {
        const r = await t.killRedisMaster();
        windows.push({ kind: f.kind, what: `master :${r.killed} killed, :${r.promoted} promoted after ${(now() - from).toFixed(1)} s`, from, to: now() + 5 });
        o.log(`fault ${windows.at(-1)!.what}`);
        // What the failover dropped is re-armed by the reconciler: every owed obligation has its job again.
        await sleep(15_000);
        armedAfterFailover = (await runChecks({
          databaseUrl: env.DATABASE_URL!, graceS: Number(env.PAYMENT_GRACE_S ?? 600), psp: null, kafka: null,
          redis: { url: 'redis://127.0.0.1:6379', clusterNodes: redisNodes, prefix: env.QUEUE_PREFIX ?? 'bull' }, only: ['jobs-armed'],
        }))[0] ?? null;
        o.log(`jobs-armed 15 s after the failover: checked ${armedAfterFailover?.checked ?? 0}, ${armedAfterFailover?.violations.length ?? 0} violations${armedAfterFailover?.violations.length ? `: ${armedAfterFailover.violations.slice(0, 3).join('; ')}` : ''}`);
        return;
      } else if (f.kind === 'kafka-broker') {
        await t.killBroker(2);
        await sleep((f.down ?? 20) * 1000);
        await t.restartBroker(2);
        windows.push({ kind: f.kind, what: `broker 2 killed, back after ${(now() - from).toFixed(1)} s`, from, to: now() + 5 });
      } else if (f.kind === 'api') {
        await t.killApi(0);
        await sleep((f.down ?? 5) * 1000);
        await t.restartApi(0);
        let what = `api1 killed (SIGKILL), back in the pool after ${(now() - from).toFixed(1)} s`;
        if (f.rolling && t.haproxy) {
          const h = t.haproxy;
          const r0 = now();
          await rollingRestart(t.apis, env, async (name) => (await h.states())[name] === 'UP');
          what += `; rolling restart of ${t.apis.length} in ${(now() - r0).toFixed(1)} s`;
        }
        windows.push({ kind: f.kind, what, from, to: now() + 5 });
      } else {
        await t.stopReplica();
        await sleep((f.down ?? 20) * 1000);
        await t.startReplica();
        windows.push({ kind: f.kind, what: `replica stopped (immediate), started after ${(now() - from).toFixed(1)} s`, from, to: now() + 5 });
      }
      o.log(`fault ${windows.at(-1)!.what}`);
    } catch (e) {
      windows.push({ kind: f.kind, what: `FAILED: ${(e as Error).message}`, from, to: now() });
      o.log(`fault ${f.kind} failed: ${(e as Error).message}`);
    }
  });
  const samples = await runLoad({
    url: t.url, jwtSecret: env.JWT_SECRET!, carIds, city, holdRate: o.holdRate, searchRate: o.searchRate, seconds: o.seconds,
    onSecond: (s, prev) => { if (Math.floor(s / 30) > Math.floor(prev / 30)) o.log(`${s} s`); },
  });
  await Promise.all(faultRuns);
  o.log('load done; waiting for quiet (every hold settled, outbox published, nothing owed)');
  const db = new pg.Pool({ connectionString: env.DATABASE_URL, max: 1 });
  const q0 = Date.now();
  let state: Record<string, number> = {};
  let quiet = false;
  let steady = 0;
  let expiryLateness: number[] = [];
  try {
    while ((Date.now() - q0) / 1000 < (o.quietTimeoutS ?? Number(env.HOLD_TTL_S ?? 900) + Number(env.PAYMENT_GRACE_S ?? 600) + 60)) {
      state = await owedState(db, env.PSP_URL!).catch(() => state);
      const done = Object.keys(state).length > 0 && Object.values(state).every((v) => v === 0);
      steady = done ? steady || Date.now() : 0;
      if (steady && Date.now() - steady >= 3000) {
        quiet = true;
        break;
      }
      await sleep(500);
    }
    // hold_expires_at is cleared when a booking leaves HOLD: the deadline is the one its booking.held event announced.
    const { rows } = await db.query(`SELECT extract(epoch FROM e.created_at - (h.payload->>'holdExpiresAt')::timestamptz)::float AS late
      FROM outbox e JOIN outbox h ON h.message_key = e.message_key AND h.topic = 'booking.held' WHERE e.topic = 'booking.expired'`);
    expiryLateness = rows.map((r) => Number(r.late));
  } finally {
    await db.end();
  }
  o.log(quiet ? `quiet after ${((Date.now() - q0) / 1000).toFixed(1)} s` : `NOT quiet: ${JSON.stringify(state)}`);
  const invariants = await runChecks({
    databaseUrl: env.DATABASE_URL!, graceS: Number(env.PAYMENT_GRACE_S ?? 600), psp: { url: env.PSP_URL!, apiKey: env.PSP_API_KEY! },
    kafka: { brokers: env.KAFKA_BROKERS!.split(','), prefix: env.KAFKA_TOPIC_PREFIX ?? '' },
    redis: { url: env.REDIS_URL ?? 'redis://127.0.0.1:6379', clusterNodes: redisNodes, prefix: env.QUEUE_PREFIX ?? 'bull' },
  });
  o.log(`check:invariants\n${formatResults(invariants, 5)}`);
  const kafka = await verifyKafkaOrder(env.DATABASE_URL!, env.KAFKA_BROKERS!.split(','), env.KAFKA_TOPIC_PREFIX ?? '');
  o.log(`Kafka: ${kafka.events} events of ${kafka.bookings} bookings, ${kafka.lost.length} lost, ${kafka.outOfOrder.length} out of order`);
  return {
    samples, windows, armedAfterFailover, expiryLateness, quiet: { quiet, waitedS: (Date.now() - q0) / 1000, state }, invariants,
    violations: invariants.reduce((n, r) => n + r.violations.length, 0), kafka,
  };
}
