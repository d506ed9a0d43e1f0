// The physical limit: pgbench (/usr/bin/pgbench) running a transaction of the shape a Sandlot
// transition commits (advisory transaction lock on the Environment, read of its row, compare-and-
// swap update of its revision, an outbox-like insert), in its own throw-away tables of the bench
// database, at the same client counts, for a few seconds each. Its tps is what PostgreSQL on this
// machine can commit of such transactions; `ratio_to_pg_limit` compares our write commits/s to it.
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

const ROWS = 10_000;

const SCRIPT = `\\set id random(1, ${ROWS})
BEGIN;
SELECT pg_advisory_xact_lock(:id);
SELECT revision AS rev FROM pgb_environments WHERE id = :id \\gset
UPDATE pgb_environments SET revision = revision + 1, state = 'Active', updated_at = now()
 WHERE id = :id AND revision = :rev;
INSERT INTO pgb_outbox (environment_id, revision, payload) VALUES (:id, :rev + 1, '{"kind":"provision"}');
END;
`;

export interface PgLimitPoint {
  clients: number;
  tps: number;
  seconds: number;
}

async function prepareTables(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`
      DROP TABLE IF EXISTS pgb_environments, pgb_outbox;
      CREATE TABLE pgb_environments (id int PRIMARY KEY, revision int NOT NULL, state text NOT NULL,
                                     updated_at timestamptz NOT NULL DEFAULT now());
      CREATE TABLE pgb_outbox (id bigserial PRIMARY KEY, environment_id int NOT NULL, revision int NOT NULL,
                               payload jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
      INSERT INTO pgb_environments (id, revision, state) SELECT g, 1, 'Registered' FROM generate_series(1, ${ROWS}) g;`);
    await client.query('VACUUM ANALYZE pgb_environments');
  } finally {
    await client.end();
  }
}

async function dropTables(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('DROP TABLE IF EXISTS pgb_environments, pgb_outbox');
  } finally {
    await client.end();
  }
}

function pgbench(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.env['PGBENCH'] ?? 'pgbench', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve(output) : reject(new Error(`pgbench exited ${code}:\n${output}`)),
    );
  });
}

/** pgbench tps of the transition-shaped transaction at each client count, `seconds` each. */
export async function measurePgLimit(
  url: string,
  clientCounts: number[],
  seconds: number,
): Promise<PgLimitPoint[]> {
  await prepareTables(url);
  const dir = await mkdtemp(join(tmpdir(), 'sandlot-pgbench-'));
  const script = join(dir, 'transition.sql');
  await writeFile(script, SCRIPT);
  const target = new URL(url);
  try {
    const points: PgLimitPoint[] = [];
    for (const clients of clientCounts) {
      const output = await pgbench([
        '-n',
        '-h',
        target.hostname,
        '-p',
        target.port || '5432',
        '-U',
        decodeURIComponent(target.username || 'postgres'),
        '-f',
        script,
        '-c',
        String(clients),
        '-j',
        String(Math.min(clients, 2)),
        '-T',
        String(seconds),
        target.pathname.slice(1),
      ]);
      const tps = Number(/tps = ([\d.]+) \(without initial connection time\)/.exec(output)?.[1] ?? NaN);
      points.push({ clients, tps, seconds });
    }
    return points;
  } finally {
    await rm(dir, { recursive: true, force: true });
    await dropTables(url);
  }
}
