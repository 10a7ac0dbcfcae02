import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SECRET_NAMES, withLocalSecrets } from '../../shared/local-secrets.js';
import { verifiedClaims } from '../helpers/http.js';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');
// A child process as `npm start` runs them: NODE_ENV unset (development), only the file's path given.
const inChild = (script: string, env: Record<string, string>) =>
  run(process.execPath, ['--import', 'tsx', ...script.split(' ')], { cwd: ROOT, env: { PATH: process.env.PATH!, LOG_LEVEL: 'silent', ...env } });

describe('development secrets file', () => {
  let dir: string;
  let file: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'secrets-'));
    file = path.join(dir, '.secrets.local.json');
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('is created once, private, with strong values, and reused after', () => {
    const first = withLocalSecrets({ LOCAL_SECRETS_FILE: file });
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    const stored = JSON.parse(fs.readFileSync(file, 'utf8'));
    for (const n of SECRET_NAMES) {
      expect(first[n]).toBe(stored[n]);
      expect(first[n]!.length).toBeGreaterThanOrEqual(32);
    }
    const before = fs.readFileSync(file, 'utf8');
    const second = withLocalSecrets({ NODE_ENV: 'development', LOCAL_SECRETS_FILE: file });
    expect(second).toEqual({ ...first, NODE_ENV: 'development' });
    expect(fs.readFileSync(file, 'utf8')).toBe(before);
    expect(fs.readdirSync(dir)).toEqual(['.secrets.local.json']);
  });

  it('never overrides a secret set in the environment, and never writes it', () => {
    const env = withLocalSecrets({ LOCAL_SECRETS_FILE: file, JWT_SECRET: 'from-the-environment' });
    expect(env.JWT_SECRET).toBe('from-the-environment');
    expect(fs.readFileSync(file, 'utf8')).not.toContain('from-the-environment');
  });

  it('is neither read nor written in production or test', () => {
    for (const NODE_ENV of ['production', 'test']) {
      expect(withLocalSecrets({ NODE_ENV, LOCAL_SECRETS_FILE: file })).toEqual({ NODE_ENV, LOCAL_SECRETS_FILE: file });
    }
    expect(fs.existsSync(file)).toBe(false);
  });

  it('completes a file that lacks a name, keeping the values it has', () => {
    fs.writeFileSync(file, JSON.stringify({ JWT_SECRET: 'kept-jwt-secret-of-some-length-xxxxxx' }));
    const env = withLocalSecrets({ LOCAL_SECRETS_FILE: file });
    expect(env.JWT_SECRET).toBe('kept-jwt-secret-of-some-length-xxxxxx');
    expect(JSON.parse(fs.readFileSync(file, 'utf8'))).toEqual(Object.fromEntries(SECRET_NAMES.map((n) => [n, env[n]])));
  });

  it('processes starting together agree on one set, and the token command signs with it', async () => {
    const probe = `--input-type=module -e import('./shared/config.js').then(m=>console.log(JSON.stringify(m.parseConfig())))`;
    const outs = await Promise.all(
      Array.from({ length: 4 }, () => run(process.execPath, ['--import', 'tsx', ...probe.split(' ')], {
        cwd: ROOT, env: { PATH: process.env.PATH!, LOCAL_SECRETS_FILE: file },
      })),
    );
    const configs = outs.map((o) => JSON.parse(o.stdout));
    const stored = JSON.parse(fs.readFileSync(file, 'utf8'));
    for (const c of configs) for (const n of SECRET_NAMES) expect(c[n]).toBe(stored[n]);

    const { stdout } = await inChild('scripts/token.ts customer 42', { LOCAL_SECRETS_FILE: file });
    const payload = verifiedClaims(stdout.trim(), stored.JWT_SECRET);
    expect(payload).toMatchObject({ sub: '42', role: 'customer' });
    expect(payload.exp - payload.iat).toBe(86_400);
  });

  it('the token command refuses a bad role or subject', async () => {
    await expect(inChild('scripts/token.ts admin 1', { LOCAL_SECRETS_FILE: file })).rejects.toMatchObject({ code: 2 });
    await expect(inChild('scripts/token.ts customer bob', { LOCAL_SECRETS_FILE: file })).rejects.toMatchObject({ code: 2 });
  });
});
