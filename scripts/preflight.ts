import net from 'node:net';
import type { Config } from '../shared/config.js';
import type { ProcessSpec } from './procfile.js';

// What `npm start` checks before it starts anything, so that what cannot work is refused at once, naming the
// variable to change, instead of children that crash on a busy port and restart for ever.

/** A port one of the supervised processes will listen on, and the variable that sets it. */
export interface PortClaim {
  port: number;
  variable: 'PORT' | 'DASHBOARD_PORT' | 'PSP_PORT';
  process: string;
  /** As the process binds it: undefined = every interface (Koa's `listen(port)`). */
  host?: string;
}

/** The ports of the processes `npm start` is about to run (the api, the dashboard, and the sandbox when it runs). */
export function portClaims(config: Pick<Config, 'PORT' | 'DASHBOARD_PORT' | 'PSP_PORT' | 'PSP_HOST'>, specs: readonly ProcessSpec[]): PortClaim[] {
  const names = new Set(specs.map((s) => s.name));
  const claims: PortClaim[] = [];
  if (names.has('api')) claims.push({ port: config.PORT, variable: 'PORT', process: 'api' });
  if (names.has('dashboard')) claims.push({ port: config.DASHBOARD_PORT, variable: 'DASHBOARD_PORT', process: 'dashboard' });
  if (names.has('psp')) claims.push({ port: config.PSP_PORT, variable: 'PSP_PORT', process: 'psp', host: config.PSP_HOST });
  return claims;
}

/** Binds the port as its process would, then lets it go: null when free, else the error code (EADDRINUSE, EACCES). */
function tryListen(claim: PortClaim): Promise<string | null> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
    server.listen({ port: claim.port, host: claim.host, exclusive: true }, () => server.close(() => resolve(null)));
  });
}

/** One sentence per claim that cannot be had: two processes given one port, or a port something else holds. */
export async function portProblems(claims: readonly PortClaim[]): Promise<string[]> {
  const problems: string[] = [];
  const seen = new Map<number, PortClaim>();
  for (const c of claims) {
    const other = seen.get(c.port);
    if (other) {
      problems.push(`port ${c.port} is given to both ${other.process} (${other.variable}) and ${c.process} (${c.variable}): set one of them to another port`);
      continue;
    }
    seen.set(c.port, c);
    const error = await tryListen(c);
    if (error === 'EADDRINUSE') {
      problems.push(`port ${c.port} (${c.variable}) is in use: is another \`npm start\` running? Stop it, or set ${c.variable} to a free port`);
    } else if (error) {
      problems.push(`port ${c.port} (${c.variable}) cannot be listened on (${error}): set ${c.variable} to another port`);
    }
  }
  return problems;
}

/** A connection URL fit to print: its password replaced by `***`. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(not a URL)';
  }
}

/** `host:port` of a connection URL, with the scheme's default port when it names none. */
export function hostPortOf(url: string, defaultPort: number): string {
  const u = new URL(url);
  return `${u.hostname}:${u.port || defaultPort}`;
}
