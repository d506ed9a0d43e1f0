// Forward-only migrations: numbered `NNNN_name.sql` files, each applied exactly once, recorded in
// a ledger table. Each file runs in its own transaction under one advisory lock, so concurrent
// processes queue up and a file that fails leaves neither its changes nor its ledger row.
//
// A migration set is a directory and its own ledger: the core schema (migrations/, ledger
// schema_migrations) goes to every deployment; a provider's own tables come in a set of its own,
// applied only where that provider is configured (providers/simulated/migrations/, ledger
// simulated_schema_migrations).
//
// Only files are applied; a ledger row whose file is gone is left alone. That is how a migration is
// retired: its version number is never used again in its set, and databases that applied it keep
// their row. Retired so far: core 0003 (0003_simulated_resources.sql, moved to the simulated set).

import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Database, Queryable } from './db.ts';
import {
  MigrationChecksumError,
  MigrationFailedError,
  MigrationFileNameError,
  StoreError,
} from './errors.ts';

export interface MigrationFile {
  version: number;
  /** The file name, e.g. `0001_environments.sql`; also the ledger's `name`. */
  file: string;
  sql: string;
  /** sha256 hex of the file's bytes. */
  checksum: string;
}

export interface MigrateOptions {
  directory?: string | URL;
  /** The set's ledger table (default `schema_migrations`, the core set's). */
  ledger?: string;
  onApplied?: (name: string) => void;
}

const DEFAULT_DIRECTORY = new URL('../migrations/', import.meta.url);
const DEFAULT_LEDGER = 'schema_migrations';
// The ledger's name is spliced into SQL, so it is held to a plain lower-case identifier.
const LEDGER_NAME = /^[a-z_][a-z0-9_]{0,62}$/;
const FILE_NAME = /^(\d{4})_(\w[\w-]*)\.sql$/;

// Advisory locks are per database, not per schema: every Sandlot schema in one database migrates
// under the same key. That only serialises migrations, which are short.
const LOCK_KEY = '7302185514690217353';

const ledgerDdl = (ledger: string) => `CREATE TABLE IF NOT EXISTS ${ledger} (
  version    integer PRIMARY KEY,
  name       text NOT NULL,
  checksum   text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now()
)`;

/** Reads and validates every migration in `directory`, sorted by version. */
export async function listMigrations(directory: string | URL): Promise<MigrationFile[]> {
  const path = directory instanceof URL ? fileURLToPath(directory) : directory;
  const entries = await readdir(path, { withFileTypes: true });
  const byVersion = new Map<number, string>();
  for (const entry of entries) {
    // Dotfiles are editor and OS droppings (.swp, .DS_Store), never migrations.
    if (!entry.isFile() || entry.name.startsWith('.')) continue;
    const match = FILE_NAME.exec(entry.name);
    if (match === null) {
      throw new MigrationFileNameError(
        `Migration file name ${entry.name} in ${path} does not match NNNN_name.sql`,
      );
    }
    const version = Number(match[1]);
    const clash = byVersion.get(version);
    if (clash !== undefined) {
      throw new MigrationFileNameError(`Migrations ${clash} and ${entry.name} share version ${match[1]}`);
    }
    byVersion.set(version, entry.name);
  }
  const sorted = [...byVersion.entries()].sort(([a], [b]) => a - b);
  return Promise.all(
    sorted.map(async ([version, file]) => {
      const bytes = await readFile(join(path, file));
      const checksum = createHash('sha256').update(bytes).digest('hex');
      return { version, file, sql: bytes.toString('utf8'), checksum };
    }),
  );
}

/** Applies every migration not yet in the ledger, in version order. */
export async function migrate(db: Database, options: MigrateOptions = {}): Promise<{ applied: string[] }> {
  const ledger = options.ledger ?? DEFAULT_LEDGER;
  if (!LEDGER_NAME.test(ledger))
    throw new TypeError(`Migration ledger name "${ledger}" is not a plain identifier`);
  const migrations = await listMigrations(options.directory ?? DEFAULT_DIRECTORY);
  const applied: string[] = [];
  for (const migration of migrations) {
    if (await applyOne(db, migration, ledger)) {
      applied.push(migration.file);
      options.onApplied?.(migration.file);
    }
  }
  return { applied };
}

/** Returns whether the migration was applied now (false if an earlier run applied it). */
async function applyOne(db: Database, migration: MigrationFile, ledger: string): Promise<boolean> {
  try {
    return await db.transaction(async (tx) => {
      await tx.query(`SELECT pg_advisory_xact_lock(${LOCK_KEY})`);
      // Created under the lock, so two first runs cannot race on the ledger's own DDL.
      await tx.exec(ledgerDdl(ledger));
      const recorded = await recordedChecksum(tx, ledger, migration.version);
      if (recorded !== undefined) {
        if (recorded !== migration.checksum) {
          throw new MigrationChecksumError(migration.file, recorded, migration.checksum);
        }
        return false;
      }
      await tx.exec(migration.sql);
      await tx.query(`INSERT INTO ${ledger} (version, name, checksum) VALUES ($1, $2, $3)`, [
        migration.version,
        migration.file,
        migration.checksum,
      ]);
      return true;
    });
  } catch (error) {
    if (error instanceof StoreError) throw error;
    throw new MigrationFailedError(migration.file, error);
  }
}

async function recordedChecksum(tx: Queryable, ledger: string, version: number): Promise<string | undefined> {
  const { rows } = await tx.query<{ checksum: string }>(`SELECT checksum FROM ${ledger} WHERE version = $1`, [
    version,
  ]);
  return rows[0]?.checksum;
}
