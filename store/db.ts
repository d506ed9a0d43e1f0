// One small database interface that a `pg` Pool and PGlite both satisfy. Code that runs inside a
// transaction must use the `tx` it was given, never the outer Database: PGlite has one connection,
// so a query on the outer handle while a transaction is open would wait forever.

export interface QueryResult<R> {
  rows: R[];
  rowCount: number;
}

export interface Queryable {
  query<R = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<QueryResult<R>>;
  /** Runs a script of several statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
}

export interface Database extends Queryable {
  readonly kind: 'postgres' | 'pglite';
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

// Hot statements are named once, and the pg driver prepares each name once per connection: later
// runs skip PostgreSQL's parse and plan and send only Bind/Execute. PGlite ignores the names.
const statementNames = new Map<string, string>();

/** Registers `sql` as a named prepared statement (a module-level constant; never a dynamic string). */
export function prepared(name: string, sql: string): string {
  const taken = statementNames.get(sql);
  if (taken !== undefined && taken !== name) throw new Error(`statement already named ${taken}`);
  statementNames.set(sql, name);
  return sql;
}

/** The prepared statement name of `sql`, when it has one. */
export function statementNameOf(sql: string): string | undefined {
  return statementNames.get(sql);
}
