import { PGlite } from '@electric-sql/pglite';
import { asDatabaseError } from './database-errors.ts';
import type { Database, Queryable, QueryResult } from './db.ts';

interface PgliteQueryable {
  query<R>(sql: string, params?: unknown[]): Promise<{ rows: R[]; affectedRows?: number }>;
  exec(sql: string): Promise<unknown>;
}

function wrap(target: PgliteQueryable): Queryable {
  return {
    // The same classification as PostgreSQL's (a value it refuses is 400, not 500).
    async query<R>(sql: string, params?: readonly unknown[]): Promise<QueryResult<R>> {
      try {
        const result = await target.query<R>(sql, params === undefined ? undefined : [...params]);
        return { rows: result.rows, rowCount: result.affectedRows ?? result.rows.length };
      } catch (error) {
        throw asDatabaseError(error);
      }
    },
    async exec(sql: string): Promise<void> {
      try {
        await target.exec(sql);
      } catch (error) {
        throw asDatabaseError(error);
      }
    },
  };
}

/**
 * Embedded PostgreSQL (WASM). One connection per process: transactions are serialised by PGlite,
 * so concurrency semantics (advisory locks, CAS) hold trivially.
 * @param dataDir a directory to persist in, or undefined for an in-memory database
 * @param image a data directory dumped by PGlite's `dumpDataDir` to start from instead of running
 *   initdb (seconds on a busy machine); only for a directory that holds no database yet
 */
export async function createPgliteDatabase(dataDir?: string, image?: Blob): Promise<Database> {
  const pglite = await PGlite.create({
    ...(dataDir === undefined ? {} : { dataDir }),
    ...(image === undefined ? {} : { loadDataDir: image }),
  });
  const outer = wrap(pglite);
  return {
    kind: 'pglite',
    query: (sql, params) => outer.query(sql, params),
    exec: (sql) => outer.exec(sql),
    transaction: <T>(fn: (tx: Queryable) => Promise<T>): Promise<T> =>
      pglite.transaction((tx) => fn(wrap(tx))),
    close: () => pglite.close(),
  };
}
