// Store errors follow the project's error convention (`lib/errors.ts`): a stable kebab-case `code`,
// and `name` set, so callers classify them even after they cross a process boundary. They are
// operator-facing: over HTTP they would be a 500 that shows no detail.
import { problemClass } from '../lib/errors.ts';

/** The family: every store error is ours to fix (500); each declares its own code and title. */
export abstract class StoreError extends problemClass({ status: 500, title: 'Store error' }) {}

/** A file in the migrations directory does not follow `NNNN_name.sql`, or two files share a version. */
export class MigrationFileNameError extends problemClass(
  { code: 'migration-file-name', status: 500, title: 'Migration file name invalid' },
  StoreError,
) {}

/** An applied migration's file was edited; migrations are append-only, so add a new file instead. */
export class MigrationChecksumError extends problemClass(
  { code: 'migration-checksum', status: 500, title: 'Migration changed after it was applied' },
  StoreError,
) {
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
export class MigrationFailedError extends problemClass(
  { code: 'migration-failed', status: 500, title: 'Migration failed' },
  StoreError,
) {
  constructor(
    readonly file: string,
    cause: unknown,
  ) {
    super(`Migration ${file} failed: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}
