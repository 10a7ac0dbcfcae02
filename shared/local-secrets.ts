import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Secrets have no public defaults. In development (NODE_ENV unset or `development`) the ones not set in
 * the environment are generated once and kept in a git-ignored file at the repository root, so `npm start`,
 * every process it spawns, `npm run token` and `npm run seed` agree on them. Production never reads it.
 */
export const SECRET_NAMES = ['JWT_SECRET', 'PAYMENT_WEBHOOK_SECRET', 'PSP_API_KEY', 'DASHBOARD_PASSWORD'] as const;
export type SecretName = (typeof SECRET_NAMES)[number];
export type Env = Record<string, string | undefined>;

/** 256 random bits, URL-safe (43 characters: above the 32 production asks for). */
export const randomSecret = (): string => randomBytes(32).toString('base64url');

/** The nearest folder above this module holding package.json (the same for `tsx` and `dist/`). */
export function repoRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!fs.existsSync(path.join(dir, 'package.json'))) {
    const up = path.dirname(dir);
    if (up === dir) return process.cwd();
    dir = up;
  }
  return dir;
}

export const defaultSecretsFile = (): string => path.join(repoRoot(), '.secrets.local.json');

function readSecrets(file: string): Partial<Record<SecretName, string>> | null {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
  try {
    const parsed = JSON.parse(text) as Record<string, unknown>;
    return Object.fromEntries(SECRET_NAMES.filter((n) => typeof parsed[n] === 'string' && parsed[n]).map((n) => [n, parsed[n]]));
  } catch {
    throw new Error(`${file} is not valid JSON: delete it to generate new development secrets`);
  }
}

/**
 * Returns the file's secrets, creating it with fresh values first when missing. Creation is atomic and
 * happens once: the full file is written aside and hard-linked into place, which fails when another
 * process got there first (then its file is read). A file lacking some name (an older version) is
 * completed by an atomic rename that keeps the values it has.
 */
export function loadLocalSecrets(file: string): { secrets: Record<SecretName, string>; created: boolean } {
  for (let attempt = 0; attempt < 5; attempt++) {
    const existing = readSecrets(file);
    if (existing && SECRET_NAMES.every((n) => existing[n])) return { secrets: existing as Record<SecretName, string>, created: false };
    const next = { ...Object.fromEntries(SECRET_NAMES.map((n) => [n, randomSecret()])), ...existing };
    const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(tmp, `${JSON.stringify(next, null, 2)}\n`, { mode: 0o600 });
    try {
      if (existing) fs.renameSync(tmp, file);
      else fs.linkSync(tmp, file);
      return { secrets: next as Record<SecretName, string>, created: !existing };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    } finally {
      fs.rmSync(tmp, { force: true });
    }
  }
  throw new Error(`could not create ${file}`);
}

/** In development, fills the secrets the environment does not set from the local file. */
export function withLocalSecrets(env: Env): Env {
  if ((env.NODE_ENV || 'development') !== 'development') return env;
  if (SECRET_NAMES.every((n) => env[n])) return env;
  const { secrets } = loadLocalSecrets(env.LOCAL_SECRETS_FILE || defaultSecretsFile());
  const out = { ...env };
  for (const n of SECRET_NAMES) if (!out[n]) out[n] = secrets[n];
  return out;
}
