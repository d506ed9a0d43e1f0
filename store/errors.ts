// Store errors follow the project's error convention (`lib/errors.ts`): a stable kebab-case `code`,
// and `name` set, so callers classify them even after they cross a process boundary. They are
// operator-facing: over HTTP they would be a 500 that shows no detail.
import { SandlotError } from '../lib/errors.ts';

export abstract class StoreError extends SandlotError {
  readonly status = 500;
}

/** A file in the migrations directory does not follow `NNNN_name.sql`, or two files share a version. */
export class MigrationFileNameError extends StoreError {
  readonly code = 'migration-file-name';
  readonly title = 'Migration file name invalid';
}

/** An applied migration's file was edited; migrations are append-only, so add a new file instead. */
export class MigrationChecksumError extends StoreError {
  readonly code = 'migration-checksum';
  readonly title = 'Migration changed after it was applied';
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
  readonly code = 'migration-failed';
  readonly title = 'Migration failed';
  constructor(
    readonly file: string,
    cause: unknown,
  ) {
    super(`Migration ${file} failed: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}
