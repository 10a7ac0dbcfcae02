import { createPool, createSqlTag, SchemaValidationError, type DatabasePool, type Interceptor, type QueryResultRow } from 'slonik';
import { z } from 'zod';

export type { DatabasePool, DatabaseTransactionConnection, CommonQueryMethods } from 'slonik';

/**
 * The SQL tag of every query. `sql.type(zod)` for a query that returns rows; `sql.typeAlias('void')`
 * for a write that returns none (its rowCount still tells how many rows it touched).
 */
export const sql = createSqlTag({ typeAliases: { void: z.object({}).strict() } });

// slonik's sql.type(zod) validates nothing on its own: this interceptor makes it parse every row.
const resultParser: Interceptor = {
  name: 'result-parser',
  transformRow: (context, query, row) => {
    if (!context.resultParser) return row;
    const parsed = context.resultParser.safeParse(row);
    if (!parsed.success) throw new SchemaValidationError(query, row as never, parsed.error.issues as never);
    return parsed.data as QueryResultRow;
  },
};

export async function createDb(url: string, options: { maximumPoolSize?: number; connectionTimeout?: number } = {}): Promise<DatabasePool> {
  return createPool(url, {
    maximumPoolSize: options.maximumPoolSize ?? 20,
    interceptors: [resultParser],
    // Ids and minor-unit amounts fit in a double; instants leave the database as ISO strings.
    typeParsers: [
      { name: 'int8', parse: (v: string) => Number(v) },
      { name: 'numeric', parse: (v: string) => Number(v) },
      { name: 'timestamptz', parse: (v: string) => new Date(v).toISOString() },
      { name: 'date', parse: (v: string) => v },
    ],
    // No DISCARD ALL on release: nothing here keeps session state (locks and set_config are
    // transaction-scoped, LISTEN has its own client), and the reset cost a round trip per checkout.
    // (An undefined reset races in slonik 47: "Client is pending release".)
    resetConnection: async () => {},
    statementTimeout: 15_000,
    connectionTimeout: options.connectionTimeout ?? 5_000,
    // slonik closes a connection idle for 5 s by default: under bursty load that is a new PostgreSQL backend
    // (a fork, authentication, the session SETs) every few seconds per pool slot. Keep them for a minute.
    idleTimeout: 60_000,
  });
}

/** One round trip: true when the database answers. */
export async function pingDatabase(db: DatabasePool): Promise<boolean> {
  return db.oneFirst(sql.type(z.object({ ok: z.boolean() }))`SELECT true AS ok`);
}
