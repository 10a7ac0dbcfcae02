import cluster, { type Worker } from 'node:cluster';
import { runProcess } from '../shared/process.js';
import { logger } from '../shared/logger.js';
import { isSiblingMessage, type SiblingAnswer, type SiblingAsk, type SiblingOp, type SiblingReply, type SiblingRequest } from './siblings.js';
import { CarriedCounters } from './carried-counters.js';

/**
 * API_WORKERS > 1: this process forks that many API workers sharing the port (node:cluster hands each new
 * connection to the next worker; a keep-alive connection stays with its worker), restarts one that dies, and
 * on SIGTERM stops them all — each finishes its requests as a single API process does. One Node thread tops out
 * near one core; at the peak (3,000 searches/s plus holds) the API needs more than that on a 2-core machine.
 * Each worker keeps its own search indexes (tens of MB, a few small queries a second). The workers ask each other
 * through this process (relaySiblingAsks): a catalogue write waits for every worker's index, and /metrics counts
 * every worker.
 */
export async function runApiWorkers(n: number): Promise<void> {
  await runProcess('api', async () => {
    let stopping = false;
    const fork = () => {
      // A worker's supervisor is this process (shared/supervision.ts): with the supervisor's pid inherited from
      // `npm start`, a worker (whose parent is this process) took itself for orphaned and exited at once.
      const w = cluster.fork(process.env.SUPERVISOR_PID ? { SUPERVISOR_PID: String(process.pid) } : {});
      w.on('exit', (code, signal) => {
        if (stopping) return;
        logger.warn({ code, signal }, 'api worker exited; starting another in 1 s');
        setTimeout(() => !stopping && fork(), 1000).unref();
      });
    };
    relaySiblingAsks();
    for (let i = 0; i < n; i++) fork();
    return async () => {
      stopping = true;
      const alive = Object.values(cluster.workers ?? {}).filter((w) => w !== undefined);
      await Promise.all(alive.map((w) => new Promise<void>((resolve) => {
        w.once('exit', () => resolve());
        w.process.kill('SIGTERM');
      })));
    };
  });
}

/**
 * Relays a worker's ask (api/siblings.ts) to every other live worker and sends it back the answers that arrived
 * within the ask's time limit.
 */
function relaySiblingAsks(): void {
  let nextId = 0;
  /** Workers that said hello: they answer asks (a worker still starting, or gone, is not waited for). */
  const answering = new Set<number>();
  /** Asks in flight: who still owes an answer, and the answers in, by worker. */
  const open = new Map<number, { from: Worker; id: number; op: SiblingOp; pending: Set<number>; answers: Map<number, unknown>; timer: NodeJS.Timeout }>();
  const carried = new CarriedCounters();
  const finish = (key: number) => {
    const ask = open.get(key);
    if (!ask) return;
    open.delete(key);
    clearTimeout(ask.timer);
    const payloads = [...ask.answers.values()];
    // Metrics: a worker that did not answer in time counts with its last report's counters, and workers gone with
    // theirs, so that no sum goes down from one scrape to the next.
    if (ask.op === 'metrics') payloads.push(...carried.lastOf(ask.pending), ...carried.departed());
    const reply: SiblingReply = { kind: 'sibling-reply', id: ask.id, payloads };
    if (ask.from.isConnected()) ask.from.send(reply, undefined, () => {});
  };
  cluster.on('exit', (worker) => {
    answering.delete(worker.id);
    carried.gone(worker.id);
    for (const [key, ask] of open) {
      // Its answer, if any, is its last report, now among the departed: counted there, not twice.
      ask.answers.delete(worker.id);
      if (ask.pending.delete(worker.id) && ask.pending.size === 0) finish(key);
    }
  });
  cluster.on('message', (worker, m: unknown) => {
    if (isSiblingMessage(m, 'sibling-hello')) answering.add(worker.id);
    else if (isSiblingMessage(m, 'sibling-request')) {
      const { id, op, timeoutMs, own } = m as SiblingRequest;
      if (op === 'metrics') carried.seen(worker.id, own);
      const others = Object.values(cluster.workers ?? {})
        .filter((w): w is Worker => !!w && w !== worker && w.isConnected() && answering.has(w.id));
      const key = nextId++;
      open.set(key, { from: worker, id, op, pending: new Set(others.map((w) => w.id)), answers: new Map(), timer: setTimeout(() => finish(key), timeoutMs) });
      const ask: SiblingAsk = { kind: 'sibling-ask', id: key, op };
      for (const w of others) w.send(ask, undefined, () => {});
      if (others.length === 0) finish(key);
    } else if (isSiblingMessage(m, 'sibling-answer')) {
      const { id, payload } = m as SiblingAnswer;
      const ask = open.get(id);
      if (!ask || !ask.pending.delete(worker.id)) return;
      if (ask.op === 'metrics') carried.seen(worker.id, payload);
      ask.answers.set(worker.id, payload);
      if (ask.pending.size === 0) finish(id);
    }
  });
}
