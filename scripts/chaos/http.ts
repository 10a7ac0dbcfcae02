import { createSigner } from 'fast-jwt';

// The workload's HTTP client: JSON in and out, every answer tallied by operation and status, every 5xx kept with
// when it happened (a 503 while a dependency is down is allowed; any other 5xx is a finding).

export interface Answer {
  status: number;
  json: any;
  headers: Headers;
}

export interface ServerError {
  at: number;
  status: number;
  op: string;
  path: string;
  body: string;
}

export function createStats() {
  const ops: Record<string, number> = {};
  const answers: Record<string, number> = {};
  const serverErrors: ServerError[] = [];
  let transportErrors = 0;
  return {
    ops, answers, serverErrors,
    transportErrors: () => transportErrors,
    op: (name: string) => void (ops[name] = (ops[name] ?? 0) + 1),
    answer(op: string, status: number) {
      const k = `${op} ${status}`;
      answers[k] = (answers[k] ?? 0) + 1;
    },
    transportError: () => void transportErrors++,
  };
}
export type Stats = ReturnType<typeof createStats>;

export function tokens(secret: string) {
  const sign = createSigner({ key: secret, algorithm: 'HS256', expiresIn: 6 * 3600 * 1000 });
  const cache = new Map<string, string>();
  return (sub: number, role: 'customer' | 'host' | 'operator') => {
    const k = `${role}:${sub}`;
    let t = cache.get(k);
    if (!t) cache.set(k, (t = sign({ sub: String(sub), role })));
    return t;
  };
}

export function apiClient(stats: Stats) {
  return async function call(
    base: string, op: string, method: string, path: string,
    o: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
  ): Promise<Answer | null> {
    const headers: Record<string, string> = { ...o.headers };
    if (o.token) headers.authorization = `Bearer ${o.token}`;
    if (o.body !== undefined) headers['content-type'] = 'application/json';
    try {
      const res = await fetch(base + path, {
        method, headers, body: o.body === undefined ? undefined : JSON.stringify(o.body), redirect: 'manual',
        signal: AbortSignal.timeout(15_000),
      });
      const text = await res.text();
      stats.answer(op, res.status);
      if (res.status >= 500) stats.serverErrors.push({ at: Date.now(), status: res.status, op, path, body: text.slice(0, 300) });
      let json: any;
      try {
        json = text ? JSON.parse(text) : undefined;
      } catch {
        json = undefined;
      }
      return { status: res.status, json, headers: res.headers };
    } catch {
      stats.transportError();
      return null;
    }
  };
}
export type ApiCall = ReturnType<typeof apiClient>;
