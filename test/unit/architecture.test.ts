import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { closureOf, importsOf, isRedisClient, ROOT, tsFiles, type Import } from '../helpers/imports.js';

// The layering rules of ARCHITECTURE.md, checked on the sources: a forbidden import or an overlong
// production file fails here, so the rules stay true.

const PRODUCTION = ['api', 'shared', 'workers', 'dashboards', 'sandbox', 'scripts'];
const MAX_LINES = 300;

const files = PRODUCTION.flatMap(tsFiles);
const imports = files.flatMap(importsOf);
const under = (dir: string) => (p: string) => p === dir || p.startsWith(`${dir}/`);

/** Imports from files under `from` that reach a file matching `forbidden`, as "a -> b" lines. */
function violations(from: (p: string) => boolean, forbidden: (i: Import) => boolean): string[] {
  return imports.filter((i) => from(i.from) && forbidden(i)).map((i) => `${i.from} -> ${i.target}`);
}
const reaches = (...dirs: string[]) => (i: Import) => i.relative && dirs.some((d) => under(d)(i.target));

describe('architecture', () => {
  it('reads the imports it checks', () => {
    expect(files.length).toBeGreaterThan(50);
    expect(imports.some((i) => i.from === 'api/app.ts' && i.target === 'api/routes/bookings.ts')).toBe(true);
  });

  it('shared/ imports nothing from api/, workers/, dashboards/ or sandbox/', () => {
    expect(violations(under('shared'), reaches('api', 'workers', 'dashboards', 'sandbox'))).toEqual([]);
  });

  it('api/ and dashboards/ import nothing from workers/ or sandbox/', () => {
    expect(violations((p) => under('api')(p) || under('dashboards')(p), reaches('workers', 'sandbox'))).toEqual([]);
  });

  it('workers/ import nothing from api/, dashboards/ or sandbox/', () => {
    expect(violations(under('workers'), reaches('api', 'dashboards', 'sandbox'))).toEqual([]);
  });

  it('routes import no shared/db/ (they call use cases)', () => {
    expect(violations(under('api/routes'), reaches('shared/db'))).toEqual([]);
  });

  it('shared/db/ imports only shared/db/ and shared/domain/ (besides packages): SQL sits below everything else', () => {
    expect(violations(under('shared/db'), (i) => i.relative && !under('shared/db')(i.target) && !under('shared/domain')(i.target))).toEqual([]);
  });

  it('no sql.unsafe in shared/: writes use sql.typeAlias(\'void\'), reads sql.type(zod)', () => {
    const unsafe = files.filter((f) => under('shared')(f) && /\bsql\.unsafe\b/.test(readFileSync(path.join(ROOT, f), 'utf8')));
    expect(unsafe).toEqual([]);
  });

  it('the domain imports only the domain: no packages, no I/O', () => {
    expect(violations(under('shared/domain'), (i) => !i.relative || !under('shared/domain')(i.target))).toEqual([]);
  });

  it('the sandbox provider uses only the provider contract and process plumbing of shared/', () => {
    const allowed = ['shared/psp', 'shared/logger.ts', 'shared/config.ts', 'shared/process.ts'];
    expect(violations(under('sandbox'), (i) => reaches('api', 'workers', 'dashboards')(i)
      || (reaches('shared')(i) && !allowed.some((a) => under(a)(i.target))))).toEqual([]);
  });

  it('the outbox pump reaches no Redis client: nothing it imports, however indirectly, is ioredis or bullmq', () => {
    const { files: seen, packages } = closureOf('workers/pump.ts');
    expect(seen.has('workers/pump-pass.ts') && packages.has('kafkajs')).toBe(true);
    expect([...packages].filter(isRedisClient)).toEqual([]);
  });

  it('use cases: effects (shared/usecases/effects/) import no entries, only effects, transact and deps', () => {
    const allowed = (t: string) => !under('shared/usecases')(t) || under('shared/usecases/effects')(t)
      || ['shared/usecases/transact.ts', 'shared/usecases/deps.ts'].includes(t);
    expect(violations(under('shared/usecases/effects'), (i) => i.relative && !allowed(i.target))).toEqual([]);
    expect(files.filter(under('shared/usecases/effects')).length).toBeGreaterThan(4);
  });

  it('use cases own their transactions through transact() (no raw deps.db.transaction: its obligations would get no job)', () => {
    const raw = files.filter(under('shared/usecases')).filter((f) => f !== 'shared/usecases/transact.ts')
      .filter((f) => /\.transaction\(/.test(readFileSync(path.join(ROOT, f), 'utf8')));
    expect(raw).toEqual([]);
  });

  it('a notified event is written with its notifications: each writeEvent of a notified type is followed by notify', () => {
    const notified = ['booking.confirmed', 'booking.expired', 'booking.cancelled', 'booking.changed', 'refund.succeeded'];
    const missing = files.filter(under('shared')).flatMap((f) => {
      const text = readFileSync(path.join(ROOT, f), 'utf8');
      return notified.filter((t) => text.includes(`writeEvent(tx, '${t}'`) && !text.includes(`notify(tx, { type: '${t}'`)).map((t) => `${f}: ${t}`);
    });
    expect(missing).toEqual([]);
  });

  it('workers go through use cases: only the outbox pump reaches shared/db/', () => {
    const pump = ['workers/pump.ts', 'workers/pump-pass.ts'];
    expect(violations((p) => under('workers')(p) && !pump.includes(p), reaches('shared/db'))).toEqual([]);
  });

  it(`no production file is over ${MAX_LINES} lines`, () => {
    const long = files
      .map((f) => ({ f, lines: readFileSync(path.join(ROOT, f), 'utf8').split('\n').length }))
      .filter((x) => x.lines > MAX_LINES)
      .map((x) => `${x.f}: ${x.lines}`);
    expect(long).toEqual([]);
  });
});
