// HAProxy (the Debian package's /usr/sbin/haproxy) in front of N API processes, health-checked on /ready.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export interface Backend {
  name: string;
  port: number;
}

/** How fast a stopping API leaves the pool: 2 failed checks 500 ms apart (SHUTDOWN_DELAY_S must exceed it). */
export const CHECK_INTER_MS = 500;
export const CHECK_FALL = 2;
export const CHECK_RISE = 2;

/**
 * The configuration: one frontend on 127.0.0.1:`port`, round robin over the APIs, each checked with GET /ready
 * (200 = in the pool; an API that was asked to stop answers 503 at once and keeps serving SHUTDOWN_DELAY_S, so the
 * balancer takes it out before it closes its listener), and a stats page (CSV at /stats;csv) on `statsPort`.
 * No reused server connections (`http-server-close`): a request never lands on a kept-alive socket the API is closing.
 * A request that could not be delivered at all (connection refused or closed before any answer) is sent again to
 * another API: it never reached one, so it is not repeated.
 */
export function haproxyConfig(o: { port: number; statsPort: number; backends: readonly Backend[] }): string {
  return `global
  maxconn 4096
  log stderr format short local0 warning

defaults
  mode http
  log global
  option httplog
  option http-server-close
  option redispatch 1
  retries 3
  retry-on conn-failure empty-response
  timeout connect 1s
  timeout client 30s
  timeout server 30s
  timeout http-request 10s

frontend api
  bind 127.0.0.1:${o.port}
  default_backend apis

backend apis
  balance roundrobin
  option httpchk GET /ready
  http-check expect status 200
  default-server inter ${CHECK_INTER_MS} fall ${CHECK_FALL} rise ${CHECK_RISE}
${o.backends.map((b) => `  server ${b.name} 127.0.0.1:${b.port} check`).join('\n')}

listen stats
  bind 127.0.0.1:${o.statsPort}
  stats enable
  stats uri /stats
`;
}

export interface Haproxy {
  child: ChildProcess;
  /** Each API's state as HAProxy sees it (UP, DOWN, …), from the stats CSV. */
  states(): Promise<Record<string, string>>;
  stop(): Promise<void>;
}

/** Checks the configuration, then runs HAProxy in the foreground as a child of this process. */
export async function startHaproxy(dir: string, o: Parameters<typeof haproxyConfig>[0]): Promise<Haproxy> {
  fs.mkdirSync(dir, { recursive: true });
  const cfg = path.join(dir, 'haproxy.cfg');
  fs.writeFileSync(cfg, haproxyConfig(o));
  const bin = process.env.HAPROXY_BIN ?? 'haproxy';
  const check = spawn(bin, ['-c', '-q', '-f', cfg], { stdio: 'inherit' });
  const code = await new Promise<number | null>((r) => check.on('exit', r));
  if (code !== 0) throw new Error(`haproxy -c refused ${cfg}`);
  const child = spawn(bin, ['-db', '-f', cfg], { stdio: ['ignore', 'ignore', 'pipe'] });
  child.stderr!.on('data', () => {});
  const states = async () => {
    const csv = await (await fetch(`http://127.0.0.1:${o.statsPort}/stats;csv`)).text();
    const rows = csv.split('\n').filter((l) => l.startsWith('apis,') && !l.startsWith('apis,BACKEND'));
    return Object.fromEntries(rows.map((l) => l.split(',')).map((f) => [f[1]!, f[17]!]));
  };
  for (let i = 0; ; i++) {
    try {
      await states();
      break;
    } catch (e) {
      if (i > 50 || child.exitCode !== null) throw new Error(`haproxy did not start: ${(e as Error).message}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    child, states,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
