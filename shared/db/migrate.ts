import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { runner } from 'node-pg-migrate';

const here = path.dirname(fileURLToPath(import.meta.url));
// Works both from source (shared/db) and from the build (dist/shared/db).
const candidates = [path.resolve(here, '../../migrations'), path.resolve(here, '../../../migrations')];

async function migrationsDir(): Promise<string> {
  const dir = candidates.find((d) => existsSync(d));
  if (!dir) throw new Error('migrations folder not found');
  return dir;
}

/** Creates the database when missing; concurrent callers race harmlessly on the catalog's unique name. */
export async function ensureDatabase(databaseUrl: string): Promise<void> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.slice(1));
  url.pathname = '/postgres';
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (rowCount) return;
    await client.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`).catch((e: { code?: string }) => {
      // 42P04 duplicate_database; 23505 when two CREATEs race on pg_database's unique index.
      if (e.code !== '42P04' && e.code !== '23505') throw e;
    });
  } finally {
    await client.end();
  }
}

/** What a migration run did: the migrations it applied now, and how many the database has in all. */
export interface MigrationRun {
  applied: string[];
  total: number;
}

/** Applies pending migrations under node-pg-migrate's advisory lock, so concurrent starts apply each once. */
export async function migrate(databaseUrl: string, log: (msg: string) => void = () => {}): Promise<MigrationRun> {
  await ensureDatabase(databaseUrl);
  const dir = await migrationsDir();
  const ran = await runner({
    databaseUrl,
    dir,
    direction: 'up',
    migrationsTable: 'pgmigrations',
    count: Infinity,
    singleTransaction: true,
    advisoryLockMode: 'wait',
    // Numbers are reserved per piece of work and may land out of order (017 and 018 after 019 and 020): a database
    // that already ran a later one still applies an earlier one it lacks. Each migration stands on its own.
    checkOrder: false,
    log,
    logger: { debug: () => {}, info: log, warn: log, error: log },
  });
  return { applied: ran.map((m) => m.name), total: readdirSync(dir).filter((f) => f.endsWith('.sql')).length };
}

/**
 * Whether the PostgreSQL server of `databaseUrl` answers (through its `postgres` database, as ensureDatabase
 * connects): null when it does, else why not in a few words, for a message that names DATABASE_URL.
 */
export async function probeDatabase(databaseUrl: string, timeoutMs = 5000): Promise<string | null> {
  const url = new URL(databaseUrl);
  url.pathname = '/postgres';
  const client = new pg.Client({ connectionString: url.toString(), connectionTimeoutMillis: timeoutMs });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('SELECT 1');
    return null;
  } catch (e) {
    return describeConnectError(e as NodeJS.ErrnoException & { code?: string });
  } finally {
    await client.end().catch(() => {});
  }
}

function describeConnectError(e: NodeJS.ErrnoException & { code?: string }): string {
  switch (e.code) {
    case 'ECONNREFUSED': return 'nothing listens there (connection refused)';
    case 'ENOTFOUND': case 'EAI_AGAIN': return 'its host name does not resolve';
    case 'ETIMEDOUT': return 'no answer (timed out)';
    case '28P01': case '28000': return `it refused the credentials (${e.message})`;
    default: return /timeout/i.test(e.message) ? 'no answer (timed out)' : e.message || String(e);
  }
}
