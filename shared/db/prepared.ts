import pg from 'pg';

// The hottest statements (a car hold, a quote's read and insert, the outbox pump's passes, the search indexes'
// feeds) go through plain node-postgres as named statements: each connection parses and plans them once, and the
// client does none of slonik's per-query work. Measured here: ~26–40 µs of client CPU per query against 80–200 µs
// through slonik.
// Everything else keeps slonik (typed results, interceptors).

/** Named (prepared) statements on one connection. */
export interface PreparedQueries {
  /** Runs the statement `name` (prepared on first use per connection) and returns its rows. */
  query<R>(name: string, text: string, values: readonly unknown[]): Promise<R[]>;
}

/** A pool of named statements. */
export interface PreparedDb extends PreparedQueries {
  /** Runs `fn` in a transaction on one connection: committed when it returns, rolled back when it throws. */
  transaction<T>(fn: (tx: PreparedQueries) => Promise<T>): Promise<T>;
  end(): Promise<void>;
}

/** The database could not be reached or dropped the connection (no SQLSTATE): callers answer 503. */
export class DatabaseUnavailableError extends Error {
  override name = 'DatabaseUnavailableError';
}

/**
 * SQLSTATEs that say the connection itself is gone or unusable: class 08 (connection exception) and 57P01–57P03
 * (terminated by an administrator or a crash, or the server not accepting connections yet). The server sends them
 * before it closes the socket, so they arrive like any statement's error.
 */
export const isConnectionSqlState = (state: string) => state.startsWith('08') || /^57P0[123]$/.test(state);

/** node-postgres's errors from the server carry a 5-character SQLSTATE; a connection-level one is not the statement's. */
export const isStatementError = (e: unknown) => {
  const state = String((e as { code?: unknown })?.code ?? '');
  return /^[0-9A-Z]{5}$/.test(state) && !isConnectionSqlState(state);
};

// Ids and minor-unit amounts (int8) fit in a double, as in createDb.
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === 20 ? Number : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

export function createPreparedDb(url: string, max: number): PreparedDb {
  const pool = new pg.Pool({
    connectionString: url, max, idleTimeoutMillis: 60_000, connectionTimeoutMillis: 5_000, types,
    options: '-c statement_timeout=15000',
  });
  pool.on('error', () => {}); // an idle client's connection dropped: the pool replaces it
  const run = async <R>(c: pg.PoolClient, name: string, text: string, values: readonly unknown[]) =>
    (await c.query<R & pg.QueryResultRow>({ name, text, values: values as unknown[] })).rows as R[];
  const unavailable = (e: unknown) => new DatabaseUnavailableError(String((e as Error)?.message ?? e), { cause: e });
  /**
   * A connection for `fn`. Given back healthy unless `fn` says it is broken (`retire`): not pool.query, which
   * gives the connection back with the query's error, and pg-pool then closes it — a new backend (fork,
   * authentication, re-preparing) for every refused hold (SQLSTATE 23P01).
   */
  const withClient = async <T>(fn: (c: pg.PoolClient, retire: (e: unknown) => never) => Promise<T>): Promise<T> => {
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (e) {
      throw unavailable(e);
    }
    let broken: Error | undefined;
    const retire = (e: unknown): never => {
      broken = e instanceof Error ? e : new Error(String(e));
      throw unavailable(e);
    };
    try {
      return await fn(client, retire);
    } finally {
      client.release(broken);
    }
  };
  return {
    query: <R>(name: string, text: string, values: readonly unknown[]) => withClient(async (c, retire) => {
      try {
        return await run<R>(c, name, text, values);
      } catch (e) {
        // A statement's error (SQLSTATE) leaves the connection fine; anything else is the connection's.
        return isStatementError(e) ? Promise.reject(e) : retire(e);
      }
    }),
    transaction: <T>(fn: (tx: PreparedQueries) => Promise<T>) => withClient(async (c, retire) => {
      try {
        await c.query('BEGIN');
      } catch (e) {
        retire(e);
      }
      try {
        const result = await fn({ query: <R>(name: string, text: string, values: readonly unknown[]) => run<R>(c, name, text, values) });
        await c.query('COMMIT');
        return result;
      } catch (e) {
        // Rolled back: the connection is fine whatever went wrong in `fn`; if not even that works, it is not.
        if (!(await c.query('ROLLBACK').then(() => true, () => false))) retire(e);
        throw e;
      }
    }),
    end: () => pool.end(),
  };
}
