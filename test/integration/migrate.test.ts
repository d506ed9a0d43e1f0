import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { migrateFor } from '../../cli/migrations.ts';
import { migrateSimulated, SIMULATED_MIGRATIONS } from '../../providers/simulated/migrate.ts';
import type { Database } from '../../store/db.ts';
import { MigrationChecksumError, MigrationFailedError, MigrationFileNameError } from '../../store/errors.ts';
import { listMigrations, migrate } from '../../store/migrate.ts';
import { backends, isolatedPostgres, reusableBackend, type BackendHandle } from '../support/databases.ts';

const REPO_TABLES = ['environments', 'environment_journal', 'outbox', 'project_grants', 'run_selections'];

async function tableExists(db: Database, table: string): Promise<boolean> {
  const { rows } = await db.query<{ oid: string | null }>('SELECT to_regclass($1)::text AS oid', [table]);
  return rows[0]?.oid != null;
}

async function ledger(db: Database): Promise<{ version: number; name: string }[]> {
  const { rows } = await db.query<{ version: number; name: string }>(
    'SELECT version, name FROM schema_migrations ORDER BY version',
  );
  return rows;
}

describe.each(backends)('migrate on %s', (backend) => {
  // Each case starts on an empty database (PGlite's emptied, not restarted: see reusableBackend).
  const backends_ = reusableBackend(backend);
  let handle: BackendHandle;
  let directory: string;

  beforeEach(async () => {
    handle = await backends_.open();
    directory = await mkdtemp(join(tmpdir(), 'sandlot-migrations-'));
  });

  afterEach(async () => {
    await handle.close();
    await rm(directory, { recursive: true, force: true });
  });

  afterAll(() => backends_.close());

  async function write(files: Record<string, string>): Promise<void> {
    for (const [name, sql] of Object.entries(files)) await writeFile(join(directory, name), sql);
  }

  it('applies every repo migration in order and records each in the ledger', async () => {
    const seen: string[] = [];
    const { applied } = await migrate(handle.db, { onApplied: (name) => seen.push(name) });

    const repoFiles = (await listMigrations(new URL('../../migrations/', import.meta.url))).map(
      (m) => m.file,
    );
    expect(applied).toEqual(repoFiles);
    expect(seen).toEqual(repoFiles);
    expect((await ledger(handle.db)).map((row) => row.name)).toEqual(repoFiles);
    for (const table of REPO_TABLES) expect(await tableExists(handle.db, table), table).toBe(true);
  });

  it('is idempotent: a second run applies nothing', async () => {
    await migrate(handle.db);
    const before = await ledger(handle.db);

    expect(await migrate(handle.db)).toEqual({ applied: [] });
    expect(await ledger(handle.db)).toEqual(before);
  });

  it('rolls back a failing migration whole, and applies it once fixed', async () => {
    await write({
      '0001_ok.sql': 'CREATE TABLE first (id integer);',
      '0002_broken.sql': 'CREATE TABLE second (id integer);\nSELEC 1;',
    });

    const failure = migrate(handle.db, { directory });
    await expect(failure).rejects.toThrow(MigrationFailedError);
    await expect(failure).rejects.toThrow(/0002_broken\.sql.*syntax error/);
    expect(await tableExists(handle.db, 'first')).toBe(true);
    expect(await tableExists(handle.db, 'second')).toBe(false);
    expect(await ledger(handle.db)).toEqual([{ version: 1, name: '0001_ok.sql' }]);

    await write({ '0002_broken.sql': 'CREATE TABLE second (id integer);\nSELECT 1;' });
    expect(await migrate(handle.db, { directory })).toEqual({ applied: ['0002_broken.sql'] });
    expect(await tableExists(handle.db, 'second')).toBe(true);
  });

  it('refuses an applied migration whose file was edited', async () => {
    await write({ '0001_first.sql': 'CREATE TABLE first (id integer);' });
    await migrate(handle.db, { directory });

    await write({ '0001_first.sql': 'CREATE TABLE first (id bigint);' });
    const failure = migrate(handle.db, { directory });
    await expect(failure).rejects.toThrow(MigrationChecksumError);
    await expect(failure).rejects.toThrow(/0001_first\.sql/);
    await expect(failure).rejects.toMatchObject({ code: 'migration-checksum' });
  });

  it('refuses a malformed file name, naming it', async () => {
    await write({ '0001_first.sql': 'SELECT 1;', '2_second.sql': 'SELECT 1;' });

    const failure = migrate(handle.db, { directory });
    await expect(failure).rejects.toThrow(MigrationFileNameError);
    await expect(failure).rejects.toThrow(/2_second\.sql/);
    await expect(tableExists(handle.db, 'schema_migrations')).resolves.toBe(false);
  });

  it('refuses two files with the same version', async () => {
    await write({ '0001_first.sql': 'SELECT 1;', '0001_again.sql': 'SELECT 1;' });

    await expect(migrate(handle.db, { directory })).rejects.toThrow(
      /0001_again\.sql.*0001_first\.sql|0001_first\.sql.*0001_again\.sql/,
    );
  });
});

describe.each(backends)('migration sets on %s', (backend) => {
  // Each case starts on an empty database (PGlite's emptied, not restarted: see reusableBackend).
  const backends_ = reusableBackend(backend);
  let handle: BackendHandle;
  let directory: string;

  beforeEach(async () => {
    handle = await backends_.open();
    directory = await mkdtemp(join(tmpdir(), 'sandlot-migrations-'));
  });

  afterEach(async () => {
    await handle.close();
    await rm(directory, { recursive: true, force: true });
  });

  afterAll(() => backends_.close());

  const simulatedLedger = async (db: Database) =>
    (await db.query<{ name: string }>(`SELECT name FROM ${SIMULATED_MIGRATIONS.ledger} ORDER BY version`))
      .rows;

  it('keeps the simulated provider table out of the core set', async () => {
    await migrate(handle.db);
    expect(await tableExists(handle.db, 'simulated_resources')).toBe(false);
    // Version 3 is retired: databases migrated before the split have it in their ledger.
    const versions = (await listMigrations(new URL('../../migrations/', import.meta.url))).map(
      (m) => m.version,
    );
    expect(versions).not.toContain(3);
  });

  it('applies the simulated set under its own ledger, once', async () => {
    await migrate(handle.db);
    const core = await ledger(handle.db);

    expect(await migrateSimulated(handle.db)).toEqual({
      applied: [
        '0001_simulated_resources.sql',
        '0002_simulated_expiry.sql',
        '0003_simulated_calls.sql',
        '0004_simulated_build_test_pods.sql',
        '0005_simulated_resource_lifetimes.sql',
        '0006_simulated_resource_changes.sql',
      ],
    });
    expect(await tableExists(handle.db, 'simulated_resources')).toBe(true);
    expect(await simulatedLedger(handle.db)).toEqual([
      { name: '0001_simulated_resources.sql' },
      { name: '0002_simulated_expiry.sql' },
      { name: '0003_simulated_calls.sql' },
      { name: '0004_simulated_build_test_pods.sql' },
      { name: '0005_simulated_resource_lifetimes.sql' },
      { name: '0006_simulated_resource_changes.sql' },
    ]);
    expect(await ledger(handle.db)).toEqual(core);
    expect(await migrateSimulated(handle.db)).toEqual({ applied: [] });
  });

  it('creates the simulated table only where the simulated provider is configured', async () => {
    const kubernetes = await migrateFor(handle.db, {
      provider: { id: 'agent-sandbox', optionsRevision: '1' },
    });
    expect(kubernetes.some((name) => name.includes('simulated'))).toBe(false);
    expect(await tableExists(handle.db, 'simulated_resources')).toBe(false);
    expect(await tableExists(handle.db, SIMULATED_MIGRATIONS.ledger)).toBe(false);

    const seen: string[] = [];
    const simulated = await migrateFor(
      handle.db,
      { provider: { id: 'simulated', optionsRevision: '1' } },
      (name) => seen.push(name),
    );
    expect(simulated).toEqual([
      'simulated/0001_simulated_resources.sql',
      'simulated/0002_simulated_expiry.sql',
      'simulated/0003_simulated_calls.sql',
      'simulated/0004_simulated_build_test_pods.sql',
      'simulated/0005_simulated_resource_lifetimes.sql',
      'simulated/0006_simulated_resource_changes.sql',
    ]);
    expect(seen).toEqual(simulated);
    expect(await tableExists(handle.db, 'simulated_resources')).toBe(true);
  });

  it('starts a database that applied the retired core 0003, keeping its simulated resources', async () => {
    await migrate(handle.db);
    // What the retired 0003_simulated_resources.sql left behind: the table, a row, its ledger entry.
    const { sql } = (await listMigrations(SIMULATED_MIGRATIONS.directory))[0]!;
    await handle.db.exec(sql.replaceAll(' IF NOT EXISTS', ''));
    await handle.db.query(
      `INSERT INTO schema_migrations (version, name, checksum) VALUES (3, '0003_simulated_resources.sql', $1)`,
      ['79680b2f12834d872c8249c063c5734bf1b091cee64566b0654613e6f4adf0d9'],
    );
    await handle.db.query(
      `INSERT INTO simulated_resources (resource_id, operation_id, owner, owner_hash, provider_fence,
         lifecycle_generation, resource_generation, workspace, network_policy_generation, options, created_at_ms)
       VALUES ('sim-1', 'op-1', '{}', 'h', 1, 1, 1, '{}', 1, '{}', 0)`,
    );

    expect(await migrate(handle.db)).toEqual({ applied: [] });
    expect(await migrateSimulated(handle.db)).toEqual({
      applied: [
        '0001_simulated_resources.sql',
        '0002_simulated_expiry.sql',
        '0003_simulated_calls.sql',
        '0004_simulated_build_test_pods.sql',
        '0005_simulated_resource_lifetimes.sql',
        '0006_simulated_resource_changes.sql',
      ],
    });
    const { rows } = await handle.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM simulated_resources',
    );
    expect(rows[0]).toEqual({ n: 1 });
    expect((await ledger(handle.db)).map((row) => row.version)).toContain(3);
  });

  it('leaves alone a ledger row whose file was removed', async () => {
    await writeFile(join(directory, '0001_first.sql'), 'CREATE TABLE first (id integer);');
    await writeFile(join(directory, '0002_gone.sql'), 'CREATE TABLE gone (id integer);');
    await migrate(handle.db, { directory });
    await rm(join(directory, '0002_gone.sql'));
    await writeFile(join(directory, '0003_third.sql'), 'CREATE TABLE third (id integer);');

    expect(await migrate(handle.db, { directory })).toEqual({ applied: ['0003_third.sql'] });
    expect((await ledger(handle.db)).map((row) => row.name)).toEqual([
      '0001_first.sql',
      '0002_gone.sql',
      '0003_third.sql',
    ]);
  });

  it('refuses a ledger name that is not a plain identifier', async () => {
    await expect(migrate(handle.db, { directory, ledger: 'x; DROP TABLE y' })).rejects.toThrow(/ledger name/);
  });
});

describe('migrate on postgres from two processes at once', () => {
  let directory: string;

  beforeEach(async () => {
    directory = await mkdtemp(join(tmpdir(), 'sandlot-migrations-'));
    const files: Record<string, string> = {
      '0001_counter.sql': 'CREATE TABLE counter (id serial PRIMARY KEY);',
      '0002_slow.sql': 'SELECT pg_sleep(0.2);',
      '0003_count.sql': 'INSERT INTO counter DEFAULT VALUES;',
      '0004_other.sql': 'CREATE TABLE other (id integer);',
      '0005_alter.sql': 'ALTER TABLE other ADD COLUMN note text;',
    };
    for (const [name, sql] of Object.entries(files)) await writeFile(join(directory, name), sql);
  });

  afterEach(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  it('applies each file exactly once', async () => {
    for (let round = 0; round < 3; round += 1) {
      const iso = await isolatedPostgres();
      try {
        const [a, b] = [iso.open(), iso.open()];
        const results = await Promise.all([migrate(a, { directory }), migrate(b, { directory })]);

        const appliedByEither = results.flatMap((result) => result.applied).sort();
        expect(appliedByEither).toEqual([
          '0001_counter.sql',
          '0002_slow.sql',
          '0003_count.sql',
          '0004_other.sql',
          '0005_alter.sql',
        ]);
        expect((await ledger(a)).map((row) => row.version)).toEqual([1, 2, 3, 4, 5]);
        expect((await a.query('SELECT id FROM counter')).rows).toHaveLength(1);
      } finally {
        await iso.drop();
      }
    }
  });
});
