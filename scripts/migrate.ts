import { parseConfig } from '../shared/config.js';
import { migrate, probeDatabase } from '../shared/db/migrate.js';
import { hostPortOf, redactUrl } from './preflight.js';

// The Procfile's `release`: applies pending migrations (creating the database if missing). Exits 2 naming
// DATABASE_URL when PostgreSQL does not answer.
const cfg = parseConfig();
const why = await probeDatabase(cfg.DATABASE_URL);
if (why) {
  console.error(`cannot reach PostgreSQL at ${hostPortOf(cfg.DATABASE_URL, 5432)}: ${why}. Start PostgreSQL there, or set DATABASE_URL (now ${redactUrl(cfg.DATABASE_URL)})`);
  process.exit(2);
}
const run = await migrate(cfg.DATABASE_URL, (m) => console.log(m));
console.log(`migrations applied: ${run.applied.length} now, ${run.total} in all`);
