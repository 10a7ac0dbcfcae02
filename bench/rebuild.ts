/**
 * Rebuild after FLUSHALL: how long the reconciler takes to arm again the job of every open hold once Redis lost
 * them (CONTRACT "Jobs": bull-board shows every owed job again within 10 s; each hold still expires within 1 s).
 *
 *   npm run bench:rebuild
 *   HOLDS=5000 npm run bench:rebuild        # quick smoke run
 *
 * A fresh database with HOLDS open holds (written in bulk by SQL: 1,000 cars, non-overlapping periods), a
 * redis-server of the bench's own (no persistence), and the expiry process's reconciler in this process. Its first
 * pass finds no canary and arms every hold (the rollout case); then FLUSHALL, and the next pass rebuilds. Printed:
 * the rebuild's wall time and rate, the delayed jobs counted after it, and this process's CPU.
 *
 * Env (defaults): HOLDS (100000), KEEP_DB (0).
 */
import { spawn } from 'node:child_process';
import pg from 'pg';
import { parseConfig } from '../shared/config.js';
import { closeDeps, createDeps } from '../shared/runtime.js';
import { openQueueStore } from '../shared/queues/job-store.js';
import { createReconciler } from '../shared/usecases/reconcile.js';
import { QUEUES } from '../shared/queues/registry.js';
import { noJobs } from '../shared/queues/producer.js';
import { cleanupOnSignal, envInt, fmt, freePort, freshDb, machineNote, printTable, runTag, sleep } from './lib.js';

const HOLDS = envInt('HOLDS', 100_000);
const CARS = 1000;

async function main() {
  const tag = runTag();
  console.log(`bench:rebuild  ${machineNote()}\nHOLDS=${HOLDS}`);
  const db = await freshDb(tag);
  const port = await freePort();
  const redisServer = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const config = parseConfig({ DATABASE_URL: db.url, REDIS_URL: `redis://127.0.0.1:${port}/0`, QUEUE_PREFIX: `rb${tag}`, PSP_URL: 'http://127.0.0.1:9', LOG_LEVEL: 'warn' });
  const sql = new pg.Pool({ connectionString: db.url, max: 2 });
  const deps = await createDeps(config, { jobs: noJobs, poolSize: 4 });
  const store = openQueueStore(config);
  const cleanup = cleanupOnSignal(async () => {
    await store.close().catch(() => {});
    await closeDeps(deps).catch(() => {});
    await sql.end().catch(() => {});
    redisServer.kill('SIGKILL');
    await db.drop();
  });
  try {
    await sql.query(`INSERT INTO car (host_id, plate, model, city, daily_price, deposit_amount, currency, turnaround_minutes)
      SELECT 1, 'RB-' || g, 'Model', 'Hanoi', 500000, 2000000, 'VND', 0 FROM generate_series(1, ${CARS}) g`);
    const perCar = Math.ceil(HOLDS / CARS);
    const t0 = performance.now();
    await sql.query(`
      INSERT INTO booking (kind, status, customer_id, car_id, period, deposit_amount, total_amount, currency, hold_expires_at, next_expiry_check_at)
      SELECT 'car', 'HOLD', 1000 + i, c, tstzrange(now() + make_interval(days => 2, hours => 2 * k), now() + make_interval(days => 2, hours => 2 * k + 1), '[)'),
             2000000, 500000, 'VND', now() + interval '1 hour' + make_interval(secs => i % 600), now() + interval '1 hour' + make_interval(secs => i % 600)
      FROM generate_series(1, ${CARS}) c, generate_series(0, ${perCar - 1}) k, LATERAL (SELECT (c - 1) * ${perCar} + k AS i) x
      WHERE x.i < ${HOLDS}`);
    console.log(`wrote ${HOLDS} open holds in ${fmt((performance.now() - t0) / 1000, 1)} s`);
    for (let i = 0; i < 100 && (await store.producers.connection.ping().catch(() => null)) !== 'PONG'; i++) await sleep(100);
    const reconciler = createReconciler(deps, store);
    const grace = QUEUES.expiry.reconcile.graceMs;
    const rows: (string | number)[][] = [['pass', 'jobs armed', 'wall s', 'jobs/s', 'CPU s (this process)', 'delayed after']];
    for (const name of ['first pass (no canary yet)', 'after FLUSHALL']) {
      if (name === 'after FLUSHALL') await store.producers.connection.flushall();
      const cpu0 = process.cpuUsage();
      const w0 = performance.now();
      const report = await reconciler.pass('expiry', grace);
      const wall = (performance.now() - w0) / 1000;
      const cpu = process.cpuUsage(cpu0);
      const delayed = (await store.producers.queues.expiry.getJobCounts('delayed')).delayed ?? 0;
      rows.push([name, report.rebuilt, fmt(wall, 2), fmt(report.rebuilt / wall, 0), fmt((cpu.user + cpu.system) / 1e6, 2), delayed]);
    }
    printTable('rebuild of the expiry queue from PostgreSQL (one reconciler pass)', rows);
    const info = String(await store.producers.connection.info('memory')).match(/used_memory_human:(\S+)/)?.[1];
    console.log(`Redis memory with ${HOLDS} delayed expiry jobs: ${info}`);
  } finally {
    await cleanup();
  }
}

await main();
