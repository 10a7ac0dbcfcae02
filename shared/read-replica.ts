import { createDb, type DatabasePool } from './db/pool.js';
import { primaryWalPosition, replicaReplayPosition } from './db/replica.js';
import { dbReadFallbacks, dbReplicaLag } from './metrics/work.js';
import { logger } from './logger.js';

/** Why a read that could have gone to the replica went to the primary. */
export type FallbackReason = 'lagging' | 'down' | 'error';

/** The read replica as the use cases see it: its pool while it is fresh enough, and a way to report it failing. */
export interface ReadReplica {
  /** The replica's pool when its data is at most the lag bound old, else null (the caller reads the primary). */
  pool(): DatabasePool | null;
  /** A read on the replica failed: counted, and the replica is not used again until a probe finds it fresh. */
  failed(e: unknown): void;
  /** Seconds the replica's data is behind the primary at the last probe (Infinity: unknown or down). */
  lag(): number;
  close(): Promise<void>;
}

export const PROBE_INTERVAL_MS = 500;

interface Sample {
  at: number;
  lsn: bigint;
}

/**
 * How stale the replica is, measured from the primary's side so that an idle primary, a stopped WAL receiver and
 * paused replay all read right: every probe records the primary's WAL position with the time, then asks the replica
 * how far it has replayed. The replica holds everything the primary had at the newest sample at or below its replay
 * position, so its data is at most `now − that sample's time` old. No such sample: older than the whole history.
 */
export function lagFromSamples(samples: readonly Sample[], replayed: bigint, now: number): number {
  for (let i = samples.length - 1; i >= 0; i--) if (samples[i]!.lsn <= replayed) return (now - samples[i]!.at) / 1000;
  return samples.length ? (now - samples[0]!.at) / 1000 + PROBE_INTERVAL_MS / 1000 : Infinity;
}

/**
 * Opens the replica's pool and probes it every PROBE_INTERVAL_MS. Reads go to it while the last probe found it
 * at most `maxLagS` behind (so a read is at most maxLagS + one probe interval stale); otherwise, and when it does not
 * answer, they go to the primary and `db_read_fallbacks_total` counts them.
 */
export async function openReadReplica(primary: DatabasePool, url: string, maxLagS: number, opts: { poolSize?: number } = {}): Promise<ReadReplica> {
  // A replica that is down must cost a read little: connections give up after 1 s (the primary's pool waits 5).
  // slonik connects once on creating a pool: a replica that is down when this process starts (stopped, restarting)
  // must not stop the process from starting. No pool yet: every probe tries to make one, reads go to the primary.
  const open = () => createDb(url, { maximumPoolSize: opts.poolSize ?? 4, connectionTimeout: 1000 }).catch(() => null);
  let replica: DatabasePool | null = await open();
  const samples: Sample[] = [];
  const keep = Math.ceil((maxLagS * 1000) / PROBE_INTERVAL_MS) + 2;
  let lag = Infinity;
  let state: 'fresh' | 'lagging' | 'down' = 'down';
  let stopped = false;

  const setState = (next: typeof state) => {
    if (next !== state) logger.info({ replica: next, lagSeconds: Number.isFinite(lag) ? lag : null }, `read replica ${next}`);
    state = next;
  };
  async function probe(): Promise<void> {
    try {
      samples.push({ at: Date.now(), lsn: await primaryWalPosition(primary) });
      if (samples.length > keep) samples.shift();
    } catch {
      return; // The primary is not answering: nothing to compare against; reads fail or not on the primary anyway.
    }
    try {
      replica ??= await open();
      if (!replica) throw new Error('replica not reachable');
      const r = await replicaReplayPosition(replica);
      lag = !r.inRecovery ? 0 : r.replayed === null ? Infinity : lagFromSamples(samples, r.replayed, Date.now());
      setState(lag <= maxLagS ? 'fresh' : 'lagging');
    } catch {
      lag = Infinity;
      setState('down');
    }
    dbReplicaLag.set(Number.isFinite(lag) ? lag : -1);
  }
  await probe();
  const loop = (async () => {
    while (!stopped) {
      await new Promise((r) => setTimeout(r, PROBE_INTERVAL_MS).unref());
      if (!stopped) await probe();
    }
  })();

  return {
    pool() {
      if (state === 'fresh' && replica) return replica;
      dbReadFallbacks.inc({ reason: state });
      return null;
    },
    failed(e) {
      dbReadFallbacks.inc({ reason: 'error' });
      logger.warn({ err: (e as Error).message }, 'read on the replica failed; reading the primary until a probe finds it fresh');
      setState('down');
    },
    lag: () => lag,
    async close() {
      stopped = true;
      await loop;
      // Connections the replica dropped while down (a crash, a restart) make slonik's end() throw; they are gone anyway.
      await replica?.end().catch(() => {});
    },
  };
}
