import { parseConfig } from '../shared/config.js';
import { migrate } from '../shared/db/migrate.js';

const cfg = parseConfig();
await migrate(cfg.DATABASE_URL, (m) => console.log(m));
console.log('migrations applied');
