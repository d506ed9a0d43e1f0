// The pruner: a periodic task that keeps the tables that grow with every lifecycle bounded
// (store/prune.ts says what goes and what never does). Each pass deletes acknowledged outbox rows
// past a short grace, compacts the journals of Environments released longer ago than the retention
// window, and then folds their settled attempts into those summaries, in batches, until nothing is
// left or the pass is stopped.
import type { Logger } from 'pino';
import type { Database } from '../store/db.ts';
import { compactAttempts, compactReleased, pruneOutbox, type PruneCounts } from '../store/prune.ts';
import type { PeriodicTask } from './scheduler.ts';

/** How long an acknowledged outbox row is kept (for a look at what the relay just did). */
export const OUTBOX_GRACE_MS = 10 * 60_000;
const DAY_MS = 86_400_000;

export interface PrunerDeps {
  db: Database;
  logger: Logger;
  /** Days a Released Environment's journal is kept whole (SANDLOT_RETENTION_DAYS). */
  retentionDays: number;
  now?: () => Date;
  /** Rows (outbox) or Environments (journals) per statement. */
  batchSize?: number;
}

const stopped = (signal: AbortSignal | undefined) => signal?.aborted === true;

export async function pruneOnce(
  deps: PrunerDeps,
  options: { dryRun?: boolean; signal?: AbortSignal; progress?: (counts: PruneCounts) => void } = {},
): Promise<PruneCounts> {
  const now = (deps.now ?? (() => new Date()))();
  const dryRun = options.dryRun ?? false;
  const counts: PruneCounts = {
    outboxRows: 0,
    environmentsCompacted: 0,
    journalRowsCompacted: 0,
    attemptsCompacted: 0,
  };
  const outboxBefore = new Date(now.getTime() - OUTBOX_GRACE_MS);
  const releasedBefore = new Date(now.getTime() - deps.retentionDays * DAY_MS);
  const batch = deps.batchSize ?? 5_000;
  if (dryRun) {
    counts.outboxRows = await pruneOutbox(deps.db, outboxBefore, batch, true);
    // Counted in one go: a dry run changes nothing, so batches would count the same rows again.
    const journals = await compactReleased(deps.db, releasedBefore, Number.MAX_SAFE_INTEGER, true);
    counts.environmentsCompacted = journals.environments;
    counts.journalRowsCompacted = journals.rows;
    counts.attemptsCompacted = (
      await compactAttempts(deps.db, releasedBefore, Number.MAX_SAFE_INTEGER, true)
    ).rows;
    return counts;
  }
  for (;;) {
    if (stopped(options.signal)) return counts;
    const deleted = await pruneOutbox(deps.db, outboxBefore, batch, false);
    counts.outboxRows += deleted;
    options.progress?.(counts);
    if (deleted < batch) break;
  }
  const perStatement = Math.max(1, Math.floor(batch / 50));
  for (;;) {
    if (stopped(options.signal)) return counts;
    const journals = await compactReleased(deps.db, releasedBefore, perStatement, false);
    counts.environmentsCompacted += journals.environments;
    counts.journalRowsCompacted += journals.rows;
    options.progress?.(counts);
    if (journals.environments < perStatement) break;
  }
  for (;;) {
    if (stopped(options.signal)) return counts;
    const attempts = await compactAttempts(deps.db, releasedBefore, perStatement, false);
    counts.attemptsCompacted += attempts.rows;
    options.progress?.(counts);
    if (attempts.environments < perStatement) break;
  }
  if (counts.outboxRows + counts.environmentsCompacted + counts.attemptsCompacted > 0)
    deps.logger.info(counts, 'pruner pass');
  return counts;
}

export function prunerTask(deps: PrunerDeps, everyMs: number): PeriodicTask {
  return {
    name: 'prune',
    everyMs,
    run: async (signal) => {
      await pruneOnce(deps, { signal });
    },
  };
}
