import { createSigner } from 'fast-jwt';
import { parseConfig, ConfigError } from '../shared/config.js';

// `npm run -s token -- <customer|host|operator> <sub> [ttlSeconds=86400]`: prints a bearer token signed
// with the JWT_SECRET `npm start` uses (same environment, same development secrets file).
const ROLES = ['customer', 'host', 'operator'] as const;

/** An HS256 token with the contract's claims (fast-jwt, the library the api verifies with). */
export async function signToken(secret: string, role: string, sub: string, ttlS = 86_400): Promise<string> {
  // iat is now, exp = iat + ttl (fast-jwt takes expiresIn in milliseconds).
  return createSigner({ key: secret, algorithm: 'HS256', sub, expiresIn: ttlS * 1000 })({ role });
}

function usage(problem: string): never {
  console.error(`${problem}\nusage: npm run -s token -- <${ROLES.join('|')}> <sub: positive integer> [ttlSeconds]`);
  process.exit(2);
}

const isEntry = process.argv[1] !== undefined && import.meta.url === (await import('node:url')).pathToFileURL(process.argv[1]).href;
if (isEntry) {
  const [role, sub, ttl = '86400'] = process.argv.slice(2);
  if (!ROLES.includes(role as (typeof ROLES)[number])) usage(`role must be one of ${ROLES.join(', ')}`);
  if (!sub || !/^[1-9]\d*$/.test(sub)) usage('sub must be a positive integer');
  if (!/^[1-9]\d*$/.test(ttl)) usage('ttlSeconds must be a positive integer');
  try {
    console.log(await signToken(parseConfig().JWT_SECRET, role!, sub, Number(ttl)));
  } catch (e) {
    console.error(e instanceof ConfigError ? e.message : String(e));
    process.exit(2);
  }
}
