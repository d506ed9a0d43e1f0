// The four durable steps every peer runs per Environment, the same shape as Sandlot's lifecycle:
// register (the Environment row), the provision effect (a row in a simulated provider's table),
// observe (the Environment becomes Active) and the release effect (resource deleted, Environment
// Released). Each step is one single-statement write transaction on PostgreSQL, like one of ours;
// the engines wrap each in their own durable step so a replay skips it.
import pg from 'pg';

export interface PeerDatabase {
  register(id: string): Promise<void>;
  provision(id: string): Promise<void>;
  observe(id: string): Promise<void>;
  release(id: string): Promise<void>;
  /** How many Environments whose id starts with `prefix` reached Released. */
  released(prefix: string): Promise<number>;
  close(): Promise<void>;
}

export const peerSchema = 'peer';

/**
 * A throw-away database per peer and run (recreated by the peer's server, dropped by its driver),
 * unique so two benches running at once never drop each other's.
 */
export function peerDatabaseName(peer: 'dbos' | 'restate'): string {
  return `bench_${peer}_${process.pid}_${Date.now().toString(36)}`;
}

const schemaSql = `
  CREATE SCHEMA IF NOT EXISTS ${peerSchema};
  CREATE TABLE IF NOT EXISTS ${peerSchema}.environments (
    id text PRIMARY KEY, state text NOT NULL, updated_at timestamptz NOT NULL DEFAULT now());
  CREATE TABLE IF NOT EXISTS ${peerSchema}.resources (
    id text PRIMARY KEY, environment_id text NOT NULL, state text NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now());`;

/** Connection settings for a throw-away database on the bench's PostgreSQL (trust auth). */
export interface PeerConnection {
  /** 127.0.0.1, or the Unix socket directory when running inside a network namespace. */
  host: string;
  port: number;
  user: string;
  database: string;
}

export function peerConnection(database: string, overSocket = false): PeerConnection {
  const host = overSocket
    ? (process.env['BENCH_PG_SOCKET_DIR'] ?? '/var/run/postgresql')
    : (process.env['BENCH_PG_HOST'] ?? '127.0.0.1');
  return {
    host,
    port: Number(process.env['BENCH_PG_PORT'] ?? 5432),
    user: process.env['BENCH_PG_USER'] ?? 'postgres',
    database,
  };
}

/** Drops and recreates `connection.database` (connecting to `postgres` to do so). */
export async function recreateDatabase(connection: PeerConnection): Promise<void> {
  const admin = new pg.Client({ ...connection, database: 'postgres' });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${connection.database} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${connection.database}`);
  } finally {
    await admin.end();
  }
}

export async function dropDatabase(connection: PeerConnection): Promise<void> {
  const admin = new pg.Client({ ...connection, database: 'postgres' });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${connection.database} WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}

export async function openPeerDatabase(connection: PeerConnection, max = 20): Promise<PeerDatabase> {
  const pool = new pg.Pool({ ...connection, max });
  // An idle connection the server closes (say the database is dropped) must not crash the process.
  pool.on('error', () => undefined);
  await pool.query(schemaSql);
  const write = async (sql: string, id: string) => {
    await pool.query(sql, [id]);
  };
  return {
    register: (id) =>
      write(`INSERT INTO ${peerSchema}.environments (id, state) VALUES ($1, 'Registered')`, id),
    provision: (id) =>
      write(`INSERT INTO ${peerSchema}.resources (id, environment_id, state) VALUES ($1, $1, 'Running')`, id),
    observe: (id) =>
      write(`UPDATE ${peerSchema}.environments SET state = 'Active', updated_at = now() WHERE id = $1`, id),
    release: (id) =>
      write(
        `WITH deleted AS (UPDATE ${peerSchema}.resources SET state = 'Deleted', updated_at = now() WHERE id = $1)
         UPDATE ${peerSchema}.environments SET state = 'Released', updated_at = now() WHERE id = $1`,
        id,
      ),
    async released(prefix) {
      const result = await pool.query<{ n: string }>(
        `SELECT count(*) AS n FROM ${peerSchema}.environments WHERE state = 'Released' AND starts_with(id, $1)`,
        [prefix],
      );
      return Number(result.rows[0]?.n ?? 0);
    },
    close: () => pool.end(),
  };
}
