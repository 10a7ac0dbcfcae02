// A PostgreSQL 15 streaming replica for reads, made with pg_basebackup, and (for a host whose PostgreSQL refuses
// replication connections, as a shared one may) a private primary to make it from. Clusters live in private data
// directories and listen on 127.0.0.1 only. Used by `npm run topology` and by the tests.
//
//   tsx scripts/topology/postgres.ts up | down | status      (TOPOLOGY_DIR, PG_PRIMARY_PORT, PG_REPLICA_PORT)
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';

const BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin';
// PostgreSQL refuses to run as root: as root the clusters belong to (and run as) the postgres user.
const AS_ROOT = process.getuid?.() === 0;

export interface Cluster {
  dir: string;
  port: number;
  url: string;
}

function run(cmd: string, args: string[], opts: { quiet?: boolean } = {}): string {
  const [file, argv] = AS_ROOT ? ['runuser', ['-u', 'postgres', '--', path.join(BIN, cmd), ...args]] : [path.join(BIN, cmd), args];
  try {
    return execFileSync(file, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    const err = e as { stderr?: string; stdout?: string };
    if (opts.quiet) return '';
    throw new Error(`${cmd} ${args.join(' ')} failed:\n${err.stderr ?? ''}${err.stdout ?? ''}`);
  }
}

function ownedDir(dir: string): void {
  fs.mkdirSync(path.dirname(dir), { recursive: true, mode: 0o755 });
  fs.mkdirSync(dir, { mode: 0o700 });
  if (AS_ROOT) execFileSync('chown', ['-R', 'postgres:postgres', dir]);
}

const urlOf = (port: number) => `postgres://postgres@127.0.0.1:${port}/postgres`;

/** Settings of every cluster here: its port, the loopback only, its own socket directory. */
function localSettings(dir: string, port: number): string {
  return [
    `port = ${port}`, "listen_addresses = '127.0.0.1'", `unix_socket_directories = '${dir}'`,
    // A replica that stops for a while catches up from its slot; a lost one costs at most this much disk.
    'max_slot_wal_keep_size = 1GB', "log_min_messages = 'warning'",
  ].join('\n');
}

/** initdb + start: a primary that accepts replication connections from 127.0.0.1. Idempotent. */
export function startPrimary(dir: string, port: number, opts: { durable?: boolean } = {}): Cluster {
  if (!fs.existsSync(path.join(dir, 'PG_VERSION'))) {
    ownedDir(dir);
    run('initdb', ['-D', dir, '-U', 'postgres', '--auth=trust', '--no-instructions', '-E', 'UTF8', '--locale=C']);
    fs.appendFileSync(path.join(dir, 'postgresql.conf'), `\n${localSettings(dir, port)}\n`
      + "wal_level = replica\nmax_wal_senders = 10\nmax_replication_slots = 10\nmax_connections = 200\n"
      // Tests and the one-host topology trade crash safety for speed unless asked; replication is unaffected.
      + (opts.durable ? '' : 'fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n'));
    fs.appendFileSync(path.join(dir, 'pg_hba.conf'), '\nhost replication all 127.0.0.1/32 trust\n');
  }
  start(dir);
  return { dir, port, url: urlOf(port) };
}

/**
 * pg_basebackup from `primary` into `dir`, then start it as a hot standby streaming from a physical slot
 * (`slot`), so WAL it has not received while stopped waits for it on the primary. Idempotent.
 */
export function makeReplica(primary: { host?: string; port: number }, dir: string, port: number, slot: string): Cluster {
  if (!fs.existsSync(path.join(dir, 'PG_VERSION'))) {
    ownedDir(dir);
    run('pg_basebackup', [
      '-h', primary.host ?? '127.0.0.1', '-p', String(primary.port), '-U', 'postgres', '-D', dir,
      '-R', '-X', 'stream', '-c', 'fast', '-C', '-S', slot, '--no-password',
    ]);
    // The copied postgresql.conf is the primary's: the replica's own port and socket go last, so they win.
    fs.appendFileSync(path.join(dir, 'postgresql.conf'), `\n${localSettings(dir, port)}\nhot_standby = on\nhot_standby_feedback = on\n`);
  }
  start(dir);
  return { dir, port, url: urlOf(port) };
}

export function isRunning(dir: string): boolean {
  return fs.existsSync(dir) && spawnSync(AS_ROOT ? 'runuser' : path.join(BIN, 'pg_ctl'),
    AS_ROOT ? ['-u', 'postgres', '--', path.join(BIN, 'pg_ctl'), 'status', '-D', dir] : ['status', '-D', dir], { stdio: 'ignore' }).status === 0;
}

export function start(dir: string): void {
  if (!isRunning(dir)) run('pg_ctl', ['-D', dir, '-l', path.join(dir, 'server.log'), '-w', '-t', '60', 'start']);
}

/** Stops a cluster: `immediate` is a crash (what a fault test wants), `fast` a clean shutdown. */
export function stop(dir: string, mode: 'fast' | 'immediate' = 'fast'): void {
  if (isRunning(dir)) run('pg_ctl', ['-D', dir, '-m', mode, '-w', '-t', '60', 'stop']);
}

/** Stops the cluster and deletes its data directory. */
export function destroy(dir: string): void {
  stop(dir, 'immediate');
  fs.rmSync(dir, { recursive: true, force: true });
}

/** Holds (or resumes) WAL replay on a replica: it keeps receiving but its data stops moving, as a lagging one's does. */
export async function setReplayPaused(replicaUrl: string, paused: boolean): Promise<void> {
  const client = new pg.Client({ connectionString: replicaUrl });
  await client.connect();
  try {
    await client.query(paused ? 'SELECT pg_wal_replay_pause()' : 'SELECT pg_wal_replay_resume()');
  } finally {
    await client.end();
  }
}

/** The topology's PostgreSQL: a private primary and its replica, under TOPOLOGY_DIR. */
export function topologyPostgres(env: NodeJS.ProcessEnv = process.env) {
  const root = env.TOPOLOGY_DIR ?? '/tmp/booking-topology';
  const primaryPort = Number(env.PG_PRIMARY_PORT ?? 55432);
  const replicaPort = Number(env.PG_REPLICA_PORT ?? 55433);
  return {
    primaryDir: path.join(root, 'pg-primary'), replicaDir: path.join(root, 'pg-replica'), primaryPort, replicaPort,
    up() {
      const primary = startPrimary(this.primaryDir, primaryPort);
      const replica = makeReplica({ port: primaryPort }, this.replicaDir, replicaPort, 'booking_read_replica');
      return { DATABASE_URL: primary.url.replace(/postgres$/, 'booking'), DATABASE_READ_URL: replica.url.replace(/postgres$/, 'booking') };
    },
    down() {
      destroy(this.replicaDir);
      destroy(this.primaryDir);
    },
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const t = topologyPostgres();
  const cmd = process.argv[2] ?? 'status';
  if (cmd === 'up') {
    for (const [k, v] of Object.entries(t.up())) console.log(`export ${k}=${v}`);
  } else if (cmd === 'down') {
    t.down();
  } else {
    console.log(`primary :${t.primaryPort} ${isRunning(t.primaryDir) ? 'running' : 'stopped'}; replica :${t.replicaPort} ${isRunning(t.replicaDir) ? 'running' : 'stopped'}`);
  }
}
