import pg from 'pg';

// The hottest statements (a car hold, the search indexes' feeds) go through plain node-postgres as named
// statements: each connection parses and plans them once, and the client does none of slonik's per-query
// work. Measured here: ~26 µs of client CPU per query against 80–130 µs through slonik. Everything else keeps
// slonik (typed results, interceptors, transactions).

/** A pool of named (prepared) statements. */
export interface PreparedDb {
  /** Runs the statement `name` (prepared on first use per connection) and returns its rows. */
  query<R>(name: string, text: string, values: readonly unknown[]): Promise<R[]>;
  end(): Promise<void>;
}

/** The database could not be reached or dropped the connection (no SQLSTATE): callers answer 503. */
export class DatabaseUnavailableError extends Error {
  override name = 'DatabaseUnavailableError';
}

/** node-postgres's errors from the server carry a 5-character SQLSTATE; anything else is the connection's. */
const isServerError = (e: unknown) => /^[0-9A-Z]{5}$/.test(String((e as { code?: unknown })?.code ?? ''));

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
  return {
    // Not pool.query: it gives the connection back with the query's error, and pg-pool then closes it — a new
    // backend (fork, authentication, re-preparing) for every refused hold (SQLSTATE 23P01). A server error
    // leaves the connection fine; only a connection error retires it.
    async query<R>(name: string, text: string, values: readonly unknown[]) {
      let client: pg.PoolClient;
      try {
        client = await pool.connect();
      } catch (e) {
        throw new DatabaseUnavailableError(String((e as Error)?.message ?? e), { cause: e });
      }
      try {
        const rows = (await client.query<R & pg.QueryResultRow>({ name, text, values: values as unknown[] })).rows;
        client.release();
        return rows;
      } catch (e) {
        if (isServerError(e)) {
          client.release();
          throw e;
        }
        client.release(e as Error);
        throw new DatabaseUnavailableError(String((e as Error)?.message ?? e), { cause: e });
      }
    },
    end: () => pool.end(),
  };
}
