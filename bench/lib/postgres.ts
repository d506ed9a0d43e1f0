// The benchmark's PostgreSQL: a throw-away database `bench_<time>` on the test server, and the
// probes read around each measured point, all read-only so that they commit no write themselves:
// the next transaction ID (pg_current_snapshot()'s xmax: reading it assigns no ID, unlike
// txid_current()), the commits of every other database (a non-zero count means someone else shared
// the server during the window, and cluster-wide figures such as the ID delta include their work),
// and the PostgreSQL processes whose CPU is ours (backends on our database and the WAL writer,
// background writer and checkpointer).
import pg from 'pg';
import { testDatabaseUrl } from '../../test/support/databases.ts';
import { onInterrupt } from './interrupt.ts';

export interface BenchDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

const adminUrl = (database: string, server = testDatabaseUrl): string => {
  const url = new URL(server);
  url.pathname = `/${database}`;
  return url.toString();
};

/** Creates an empty database `bench_<yyyymmddhhmmss>_<random>` on the test server (or `server`). */
export async function createBenchDatabase(server = testDatabaseUrl): Promise<BenchDatabase> {
  const stamp = new Date().toISOString().replace(/\D/g, '').slice(0, 14);
  const name = `bench_${stamp}_${Math.random().toString(36).slice(2, 6)}`;
  const admin = new pg.Client({ connectionString: adminUrl('postgres', server) });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  let dropping: Promise<void> | undefined;
  const drop = () =>
    (dropping ??= (async () => {
      forget();
      const client = new pg.Client({ connectionString: adminUrl('postgres', server) });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    })());
  const forget = onInterrupt(`database ${name}`, drop);
  return { name, url: adminUrl(name, server), drop };
}

export interface PgWindowMark {
  nextXid: bigint;
  /** xact_commit + xact_rollback of every other database. */
  otherCommits: number;
}

export interface PgProbe {
  mark(): Promise<PgWindowMark>;
  /** PIDs of the server processes that work for our database (see the header). */
  pids(): Promise<number[]>;
  versions(): Promise<{ server: string }>;
  /**
   * Write transactions the simulated provider has made in `schema` so far: one per call-log row and
   * one per resource created or deleted (each its own autocommit statement, outside the control
   * plane's transactions). Subtracted from the ID delta, that leaves the control plane's own.
   */
  providerWrites(schema: string): Promise<number>;
  close(): Promise<void>;
}

export async function openProbe(database: BenchDatabase): Promise<PgProbe> {
  const client = new pg.Client({ connectionString: database.url });
  // A connection the server ends (the database dropped on an interruption) is not a crash.
  client.on('error', () => undefined);
  await client.connect();
  return {
    async mark() {
      const { rows } = await client.query<{ xid: string; other: string }>(
        `SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS xid,
                (SELECT coalesce(sum(xact_commit + xact_rollback), 0)::text
                   FROM pg_stat_database WHERE datname <> current_database()) AS other`,
      );
      const row = rows[0];
      return { nextXid: BigInt(row?.xid ?? '0'), otherCommits: Number(row?.other ?? 0) };
    },
    async pids() {
      const { rows } = await client.query<{ pid: number }>(
        `SELECT pid FROM pg_stat_activity
          WHERE pid <> pg_backend_pid()
            AND (datname = current_database()
                 OR backend_type IN ('walwriter', 'background writer', 'checkpointer'))`,
      );
      return rows.map((row) => row.pid);
    },
    async versions() {
      const { rows } = await client.query<{ v: string }>("SELECT current_setting('server_version') AS v");
      return { server: rows[0]?.v ?? 'unknown' };
    },
    async providerWrites(schema) {
      const table = (name: string) => `${client.escapeIdentifier(schema)}.${name}`;
      const { rows: present } = await client.query<{ calls: boolean; resources: boolean }>(
        `SELECT to_regclass($1) IS NOT NULL AS calls, to_regclass($2) IS NOT NULL AS resources`,
        [table('simulated_provider_calls'), table('simulated_resources')],
      );
      const has = present[0];
      if (has === undefined || !has.calls || !has.resources) return 0;
      const { rows } = await client.query<{ n: string }>(
        `SELECT ((SELECT count(*) FROM ${table('simulated_provider_calls')})
               + (SELECT count(*) + count(*) FILTER (WHERE deleted) FROM ${table('simulated_resources')}))::text AS n`,
      );
      return Number(rows[0]?.n ?? 0);
    },
    close: () => client.end(),
  };
}
