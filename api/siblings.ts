import cluster from 'node:cluster';

// What one API worker asks of the others (API_WORKERS > 1), relayed by the cluster's primary (api/cluster.ts):
// - `catch-up`: read what was committed before the ask into their search indexes, so that a catalogue write answered
//   by one worker shows in the next search of every worker, whichever gets the connection;
// - `metrics`: their metrics as JSON, so that /metrics, served by whichever worker the scrape reaches, counts every
//   worker's requests (prom-client's AggregatorRegistry.aggregate merges them), and the counters of workers gone.
// A sibling that does not answer within the time limit (dying, restarting) is left out: the ask never fails.

export type SiblingOp = 'catch-up' | 'metrics';

/** Worker → primary: ask every other worker; `own`: the asker's own answer to `op`, for the primary to keep (metrics). */
export interface SiblingRequest { kind: 'sibling-request'; id: number; op: SiblingOp; timeoutMs: number; own?: unknown }
/** Primary → a worker: a sibling asks. */
export interface SiblingAsk { kind: 'sibling-ask'; id: number; op: SiblingOp }
/** A worker → primary: its answer to an ask. */
export interface SiblingAnswer { kind: 'sibling-answer'; id: number; payload: unknown }
/** Primary → the asking worker: the answers that came in time. */
export interface SiblingReply { kind: 'sibling-reply'; id: number; payloads: unknown[] }
/** A worker → primary: it answers asks from now on (a worker still starting is not asked, so nobody waits on it). */
export interface SiblingHello { kind: 'sibling-hello' }

const isMessage = <K extends string>(m: unknown, kind: K): m is { kind: K } =>
  typeof m === 'object' && m !== null && (m as { kind?: unknown }).kind === kind;

/** True in an API worker of a cluster (API_WORKERS > 1), where siblings can be asked. */
export const hasSiblings = (): boolean => cluster.isWorker && typeof process.send === 'function';

let nextId = 0;
const waiting = new Map<number, (payloads: unknown[]) => void>();
let listening = false;

function listen(): void {
  if (listening) return;
  listening = true;
  process.on('message', (m: unknown) => {
    if (!isMessage(m, 'sibling-reply')) return;
    const { id, payloads } = m as SiblingReply;
    waiting.get(id)?.(payloads);
    waiting.delete(id);
  });
}

/**
 * The other workers' answers to `op` (those in within `timeoutMs`); [] outside a cluster. `own`, this worker's own
 * answer, goes to the primary with the ask (for metrics: api/cluster.ts keeps each worker's last).
 */
export function askSiblings(op: SiblingOp, timeoutMs: number, own?: unknown): Promise<unknown[]> {
  if (!hasSiblings()) return Promise.resolve([]);
  listen();
  const id = nextId++;
  return new Promise((resolve) => {
    // The primary answers within timeoutMs; this guard covers a primary that is gone.
    const guard = setTimeout(() => {
      waiting.delete(id);
      resolve([]);
    }, timeoutMs + 500);
    guard.unref();
    waiting.set(id, (payloads) => {
      clearTimeout(guard);
      resolve(payloads);
    });
    const request: SiblingRequest = { kind: 'sibling-request', id, op, timeoutMs, own };
    process.send!(request, undefined, undefined, (err) => {
      if (!err) return;
      waiting.get(id)?.([]);
      waiting.delete(id);
    });
  });
}

/** Answers the siblings' asks in this worker with `handlers` (a failing handler answers null). */
export function answerSiblings(handlers: Record<SiblingOp, () => Promise<unknown>>): void {
  if (!hasSiblings()) return;
  process.on('message', (m: unknown) => {
    if (!isMessage(m, 'sibling-ask')) return;
    const { id, op } = m as SiblingAsk;
    void handlers[op]().catch(() => null).then((payload) => {
      const answer: SiblingAnswer = { kind: 'sibling-answer', id, payload };
      if (process.connected) process.send!(answer, undefined, undefined, () => {});
    });
  });
  const hello: SiblingHello = { kind: 'sibling-hello' };
  process.send!(hello, undefined, undefined, () => {});
}

export { isMessage as isSiblingMessage };
