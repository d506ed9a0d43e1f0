import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Database } from '../../store/db.ts';
import { MigrationChecksumError, MigrationFailedError, MigrationFileNameError } from '../../store/errors.ts';
import { listMigrations, migrate } from '../../store/migrate.ts';
import { backends, isolatedPostgres, openBackend, type BackendHandle } from '../support/databases.ts';

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
  let handle: BackendHandle;
  let directory: string;

  beforeEach(async () => {
    handle = await openBackend(backend);
    directory = await mkdtemp(join(tmpdir(), 'sandlot-migrations-'));
  });

  afterEach(async () => {
    await handle.close();
    await rm(directory, { recursive: true, force: true });
  });

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
    await expect(failure).rejects.toMatchObject({ code: 'MIGRATION_CHECKSUM' });
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
