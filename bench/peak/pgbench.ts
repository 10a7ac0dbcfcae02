/**
 * The raw floor: pgbench running the hold INSERT alone (exclusion constraint, derive-blocked trigger, no outbox,
 * no HTTP), prepared, `clients` connections, on the same database right after the system stopped. The same cars and
 * the same 1 h – 365 d / 1–72 h periods as the generator's holds; conflicts end in ON CONFLICT DO NOTHING (which
 * accepts exclusion constraints) instead of an error, so no pgbench client aborts.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';

export interface FloorResult {
  clients: number;
  seconds: number;
  tps: number;
  latencyMs: number;
  raw: string;
}

export const pgbenchScript = (cars: number, windowDays: number) => `\\set car random(1, ${cars})
\\set start random(1, ${windowDays * 24})
\\set stop :start + random(1, 72)
\\set days (:stop - :start + 23) / 24
INSERT INTO booking (kind, status, customer_id, car_id, period, deposit_amount, total_amount, currency, hold_expires_at, next_expiry_check_at)
SELECT 'car', 'HOLD', 1, c.id,
       tstzrange(date_trunc('hour', now()) + make_interval(hours => :start), date_trunc('hour', now()) + make_interval(hours => :stop), '[)'),
       c.deposit_amount, c.daily_price * :days, c.currency, now() + interval '15 minutes', now() + interval '15 minutes'
FROM car c WHERE c.id = :car
ON CONFLICT DO NOTHING;
`;

/** Runs pgbench; `onStart` gets its pid (for the CPU sampler). */
export function runPgbench(url: string, o: { cars: number; windowDays: number; clients: number; seconds: number; file: string },
  onStart: (pid: number) => void): Promise<FloorResult> {
  writeFileSync(o.file, pgbenchScript(o.cars, o.windowDays));
  return new Promise((resolve, reject) => {
    const child = spawn('pgbench', ['-n', '-M', 'prepared', '-c', String(o.clients), '-j', '2', '-T', String(o.seconds), '-f', o.file, url],
      { stdio: ['ignore', 'pipe', 'pipe'] });
    onStart(child.pid!);
    let out = '';
    child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
    child.stderr.on('data', (d: Buffer) => { out += d.toString(); });
    child.on('error', reject);
    child.on('exit', (code) => {
      const tps = /tps = ([\d.]+) \(without initial connection time\)/.exec(out);
      const lat = /latency average = ([\d.]+) ms/.exec(out);
      if (code !== 0 || !tps) reject(new Error(`pgbench failed (${code}):\n${out.slice(-2000)}`));
      else resolve({ clients: o.clients, seconds: o.seconds, tps: Number(tps[1]), latencyMs: Number(lat?.[1] ?? NaN), raw: out.trim() });
    });
  });
}
