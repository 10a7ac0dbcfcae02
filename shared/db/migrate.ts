import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { runner } from 'node-pg-migrate';

const here = path.dirname(fileURLToPath(import.meta.url));
// Works both from source (shared/db) and from the build (dist/shared/db).
const candidates = [path.resolve(here, '../../migrations'), path.resolve(here, '../../../migrations')];

async function migrationsDir(): Promise<string> {
  const { existsSync } = await import('node:fs');
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

/** Applies pending migrations under node-pg-migrate's advisory lock, so concurrent starts apply each once. */
export async function migrate(databaseUrl: string, log: (msg: string) => void = () => {}): Promise<void> {
  await ensureDatabase(databaseUrl);
  await runner({
    databaseUrl,
    dir: await migrationsDir(),
    direction: 'up',
    migrationsTable: 'pgmigrations',
    count: Infinity,
    singleTransaction: true,
    advisoryLockMode: 'wait',
    log,
    logger: { debug: () => {}, info: log, warn: log, error: log },
  });
}
