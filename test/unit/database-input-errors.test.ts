import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { DataIntegrityError, InputSyntaxError } from 'slonik';
import { describe, expect, it } from 'vitest';
import { errors, isBadInputFromDatabase, sqlStateOf } from '../../api/middleware/errors.js';

// The net under the schemas (issue 8, item 7): PostgreSQL's data exceptions (class 22) and 54000 are the
// request's fault, so 400 VALIDATION, never a 500; other database errors keep their meaning.

const pgError = (code: string) => Object.assign(new Error(`pg ${code}`), { code });

async function statusFor(err: unknown): Promise<{ status: number; body: any }> {
  const app = new Koa();
  app.silent = true;
  app.use(errors as Koa.Middleware);
  app.use(() => { throw err; });
  const server = createServer(app.callback());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/x`, { method: 'POST' });
    return { status: res.status, body: await res.json() };
  } finally {
    server.close();
  }
}

describe('database errors caused by the input', () => {
  it('reads the SQLSTATE from node-postgres errors and from slonik errors that wrap them', () => {
    expect(sqlStateOf(pgError('22008'))).toBe('22008');
    expect(sqlStateOf(new InputSyntaxError(pgError('22P02') as never, { sql: '', values: [] } as never))).toBe('22P02');
    expect(sqlStateOf(new Error('no state'))).toBeUndefined();
  });

  it.each(['22008', '22003', '22P02', '22007', '22021', '22P05', '54000'])('SQLSTATE %s → 400 VALIDATION', async (code) => {
    expect(isBadInputFromDatabase(pgError(code))).toBe(true);
    const r = await statusFor(pgError(code));
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ code: 'VALIDATION', details: { field: 'body', sqlState: code } });
  });

  it('other database errors are not the input\'s fault: 500 stays 500 (a unique violation is mapped where it is expected)', async () => {
    expect(isBadInputFromDatabase(pgError('23505'))).toBe(false);
    expect(isBadInputFromDatabase(new DataIntegrityError({ sql: '', values: [] } as never))).toBe(false);
    expect((await statusFor(pgError('42P01'))).status).toBe(500);
  });
});
