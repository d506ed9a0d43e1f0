// The `Database` over a pg pool. A lost connection (a PostgreSQL restart or failover) must never
// end the process: every client has an `error` listener from the moment it connects, a
// broken client is destroyed rather than returned to the pool, and the failure reaches the caller
// as DatabaseUnavailableError (503). Serialization failures and deadlocks retry the transaction a
// bounded number of times; values PostgreSQL refuses (class 22) become InvalidValueError (400).
import pg from 'pg';
import { DatabaseUnavailableError, asDatabaseError, classifyDatabaseError } from './database-errors.ts';
import { statementNameOf, type Database, type Queryable, type QueryResult } from './db.ts';

export interface PgDatabaseOptions {
  connectionString: string;
  /** Sets search_path on every connection; tests use one schema per file. */
  schema?: string;
  max?: number;
  /** Told once per connection lost (idle or checked out); the process logs it and goes on. */
  onConnectionLost?: (error: Error) => void;
  /** Attempts of a transaction that fails with a serialization failure or deadlock (default 3). */
  conflictAttempts?: number;
}

function wrap(client: pg.Pool | pg.PoolClient): Queryable {
  return {
    async query<R>(sql: string, params?: readonly unknown[]): Promise<QueryResult<R>> {
      try {
        const values = params as unknown[] | undefined;
        const name = statementNameOf(sql);
        const result = await (name === undefined
          ? client.query(sql, values)
          : client.query({ name, text: sql, ...(values === undefined ? {} : { values }) }));
        return { rows: result.rows as R[], rowCount: result.rowCount ?? 0 };
      } catch (error) {
        throw asDatabaseError(error);
      }
    },
    async exec(sql: string): Promise<void> {
      try {
        await client.query(sql);
      } catch (error) {
        throw asDatabaseError(error);
      }
    },
  };
}

export function createPgDatabase(options: PgDatabaseOptions): Database {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max ?? 10,
    ...(options.schema === undefined ? {} : { options: `-c search_path=${options.schema}` }),
  });
  const lost = (error: Error) => options.onConnectionLost?.(error);
  // An idle client that loses its connection is dropped by the pool; the next query reconnects.
  pool.on('error', lost);
  // Between the pool handing a client over and `once` attaching its own listener, the client has
  // none: a connection the server ends in the chunk that made it ready (a restart) would emit an
  // unhandled 'error' and end the process. A listener for the client's whole life closes that gap;
  // the failure still reaches the transaction, whose first statement finds the connection gone.
  pool.on('connect', (client) => {
    client.on('error', (error) => {
      // Alone only in that gap: at other times the pool's idle listener or `once`'s reports it.
      if (client.listenerCount('error') === 1) lost(error);
    });
  });
  const outer = wrap(pool);
  const attempts = Math.max(1, options.conflictAttempts ?? 3);

  async function once<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (error) {
      throw asDatabaseError(error);
    }
    let broken: Error | undefined;
    const onError = (error: Error) => {
      broken = error;
      lost(error);
    };
    client.on('error', onError);
    try {
      await wrap(client).query('BEGIN');
      const result = await fn(wrap(client));
      await wrap(client).query('COMMIT');
      return result;
    } catch (error) {
      const failed = asDatabaseError(error);
      if (failed instanceof DatabaseUnavailableError) broken ??= failed;
      else await client.query('ROLLBACK').catch(() => undefined);
      throw failed;
    } finally {
      client.off('error', onError);
      // A client whose connection failed is destroyed, never handed to the next caller.
      client.release(broken ?? false);
    }
  }

  return {
    kind: 'postgres',
    query: (sql, params) => outer.query(sql, params),
    exec: (sql) => outer.exec(sql),
    async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
      for (let attempt = 1; ; attempt++) {
        try {
          return await once(fn);
        } catch (error) {
          const cause = error instanceof Error ? error.cause : undefined;
          if (attempt >= attempts || classifyDatabaseError(cause ?? error) !== 'conflict') throw error;
        }
      }
    },
    async close(): Promise<void> {
      await pool.end();
    },
  };
}
