// `sandlot prune [--dry-run] [--retention-days N] [--json]`: one pruner pass now (workers/pruner.ts),
// over the database the other commands open. --dry-run counts what would go and changes nothing.
// The worker processes run the same pass every SANDLOT_PRUNE_EVERY_MS.
import { createLogger } from '../lib/logger.ts';
import type { PruneCounts } from '../store/prune.ts';
import { OUTBOX_GRACE_MS, pruneOnce } from '../workers/pruner.ts';
import { configFromEnvironment, openDatabase } from './context.ts';
import { refuseWhileServing } from './journal-reader.ts';

export interface PruneCommandOptions {
  dryRun: boolean;
  json: boolean;
  /** Overrides SANDLOT_RETENTION_DAYS for this run. */
  retentionDays?: number;
}

export async function pruneCommand(options: PruneCommandOptions): Promise<void> {
  const config = configFromEnvironment();
  await refuseWhileServing(config);
  const retentionDays = options.retentionDays ?? config.workers.retentionDays;
  const db = await openDatabase(config);
  try {
    const progress = (c: PruneCounts) => {
      if (!options.json && process.stderr.isTTY) {
        process.stderr.write(
          `\r${c.outboxRows} outbox rows, ${c.environmentsCompacted} journals, ${c.attemptsCompacted} attempts so far`,
        );
      }
    };
    const counts = await pruneOnce(
      { db, logger: createLogger({ level: 'silent' }), retentionDays },
      { dryRun: options.dryRun, progress },
    );
    if (!options.json && process.stderr.isTTY) process.stderr.write('\n');
    if (options.json) {
      process.stdout.write(`${JSON.stringify({ dryRun: options.dryRun, retentionDays, ...counts })}\n`);
      return;
    }
    const verb = options.dryRun ? 'would delete' : 'deleted';
    const graceMin = OUTBOX_GRACE_MS / 60_000;
    process.stdout.write(
      `${verb} ${counts.outboxRows} acknowledged outbox row(s) older than ${graceMin} min\n` +
        `${options.dryRun ? 'would compact' : 'compacted'} the journals of ${counts.environmentsCompacted} ` +
        `Environment(s) released over ${retentionDays} day(s) ago (${counts.journalRowsCompacted} row(s) into one summary each)\n` +
        `${options.dryRun ? 'would fold' : 'folded'} ${counts.attemptsCompacted} settled provider attempt(s) of those Environments into their summaries\n` +
        'kept: unresolved attempts, late-resource cleanups, leases, and the attempts of every Environment with an open cleanup, a late sweep due, a BuildTest step left or an unresolved attempt\n',
    );
  } finally {
    await db.close();
  }
}
