import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Database } from '../../store/db.ts';
import { createPgDatabase } from '../../store/pg-database.ts';
import { createPgliteDatabase } from '../../store/pglite-database.ts';
import { pgliteImage } from './prepared-once.ts';

export const testDatabaseUrl = process.env['TEST_DATABASE_URL'] ?? 'postgres://postgres@127.0.0.1:5432/test';

export interface IsolatedPostgres {
  schema: string;
  /** Opens another pool on the same schema (a second "process"). */
  open(max?: number): Database;
  drop(): Promise<void>;
}

/** A fresh schema in the test database, so test files never see each other's rows. */
export async function isolatedPostgres(): Promise<IsolatedPostgres> {
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: testDatabaseUrl });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  await admin.end();
  const opened: Database[] = [];
  return {
    schema,
    open(max = 10) {
      const db = createPgDatabase({ connectionString: testDatabaseUrl, schema, max });
      opened.push(db);
      return db;
    },
    async drop() {
      await Promise.all(opened.map((db) => db.close().catch(() => undefined)));
      const client = new pg.Client({ connectionString: testDatabaseUrl });
      await client.connect();
      await client.query(`DROP SCHEMA ${schema} CASCADE`);
      await client.end();
    },
  };
}

export interface BackendHandle {
  db: Database;
  /** Another handle on the same data (a second pool for PostgreSQL; the same instance for PGlite). */
  second(): Database;
  close(): Promise<void>;
}

export type BackendName = 'postgres' | 'pglite';
export const backends: BackendName[] = ['postgres', 'pglite'];

/**
 * A new in-memory PGlite database, empty as after initdb. Under vitest it starts from the image of
 * one that the global setup (test/support/prepared-once.ts) dumped, instead of running initdb again:
 * about 1.5 s instead of 4 s a time on this 2-core machine.
 */
export async function newPgliteDatabase(): Promise<Database> {
  const image = await pgliteImage();
  return createPgliteDatabase(undefined, image);
}

export async function openBackend(name: BackendName): Promise<BackendHandle> {
  if (name === 'pglite') {
    const db = await newPgliteDatabase();
    return { db, second: () => db, close: () => db.close() };
  }
  const iso = await isolatedPostgres();
  const db = iso.open();
  return { db, second: () => iso.open(), close: () => iso.drop() };
}

export interface ReusableBackend {
  /** A handle on an empty database: the first call opens one, later calls empty it again. */
  open(): Promise<BackendHandle>;
  /** Closes what `open` kept (in afterAll). */
  close(): Promise<void>;
}

/**
 * Like `openBackend` for a file whose cases each want an empty database, at less cost for PGlite:
 * starting PGlite (compiling its WASM and running initdb) takes seconds on a busy machine, so one
 * instance serves the file and each `open` after the first drops and recreates the `public` schema,
 * where every migration (core and simulated) puts its tables, functions, sequences and ledgers.
 * PostgreSQL already gets a fresh schema per `open` cheaply, so it opens one each time as before.
 */
export function reusableBackend(name: BackendName): ReusableBackend {
  if (name === 'postgres') return { open: () => openBackend(name), close: () => Promise.resolve() };
  let pglite: Database | null = null;
  return {
    async open() {
      if (pglite === null) pglite = await newPgliteDatabase();
      else await pglite.exec('DROP SCHEMA public CASCADE; CREATE SCHEMA public;');
      const db = pglite;
      return { db, second: () => db, close: () => Promise.resolve() };
    },
    async close() {
      await pglite?.close();
      pglite = null;
    },
  };
}
