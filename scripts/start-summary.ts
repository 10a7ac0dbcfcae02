import type { Config } from '../shared/config.js';
import type { MigrationRun } from '../shared/db/migrate.js';
import { hostPortOf } from './preflight.js';

// The few lines `npm start` prints once everything is started: where each thing is, never a secret's value.

export interface StartFacts {
  config: Config;
  migrations: MigrationRun;
  /** Kafka's state in a few words. */
  kafka: string;
  /** The development secrets file the secrets came from, or null when the environment set them all. */
  secretsFile: string | null;
  /** Whether the sandbox provider runs (PSP_URL unset). */
  sandbox: boolean;
}

export function summaryLines(f: StartFacts): string[] {
  const c = f.config;
  const database = decodeURIComponent(new URL(c.DATABASE_URL).pathname.slice(1));
  const api = `http://127.0.0.1:${c.PORT}`;
  const dashboard = `http://127.0.0.1:${c.DASHBOARD_PORT}`;
  const applied = f.migrations.applied;
  const names = applied.length <= 3 ? applied.join(', ') : `${applied[0]} … ${applied.at(-1)}`;
  return [
    `database ${database} on ${hostPortOf(c.DATABASE_URL, 5432)}: ${f.migrations.total} migrations, ${applied.length} applied now${applied.length ? ` (${names})` : ''}`,
    `kafka: ${f.kafka}`,
    `api        ${api}${c.PUBLIC_BASE_URL.replace(/\/+$/, '') === api ? '' : ` (public URL ${c.PUBLIC_BASE_URL})`}; interactive docs ${api}/docs`,
    `dashboard  ${dashboard}/admin/queues (bull-board; HTTP Basic, user ${c.DASHBOARD_USER}, password DASHBOARD_PASSWORD)`,
    `operator   ${dashboard}/admin/bookings (a booking's story and its jobs; same credentials)`,
    f.sandbox ? `payments   the sandbox provider on ${c.pspUrl} (checkout pages there)` : `payments   the provider at ${c.pspUrl} (PSP_URL)`,
    f.secretsFile
      ? `secrets    development secrets in ${f.secretsFile} (git-ignored; \`npm run -s token\` and the README read it; delete it to rotate)`
      : 'secrets    from the environment',
  ];
}
