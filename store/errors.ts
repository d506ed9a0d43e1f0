// Store errors carry a stable `code` and set `name`, so callers can classify them even after they
// cross a process boundary and arrive as plain objects.

export abstract class StoreError extends Error {
  abstract readonly code: string;
}

/** A file in the migrations directory does not follow `NNNN_name.sql`, or two files share a version. */
export class MigrationFileNameError extends StoreError {
  override readonly name = 'MigrationFileNameError';
  readonly code = 'MIGRATION_FILE_NAME';
}

/** An applied migration's file was edited; migrations are append-only, so add a new file instead. */
export class MigrationChecksumError extends StoreError {
  override readonly name = 'MigrationChecksumError';
  readonly code = 'MIGRATION_CHECKSUM';
  constructor(
    readonly file: string,
    readonly expected: string,
    readonly actual: string,
  ) {
    super(
      `Migration ${file} was changed after it was applied (checksum ${actual}, applied as ${expected}); ` +
        'migrations are append-only, so restore the file and add a new one',
    );
  }
}

/** A migration's SQL failed; its transaction, including the ledger row, was rolled back. */
export class MigrationFailedError extends StoreError {
  override readonly name = 'MigrationFailedError';
  readonly code = 'MIGRATION_FAILED';
  constructor(
    readonly file: string,
    cause: unknown,
  ) {
    super(`Migration ${file} failed: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}
