// A journal rebuild establishes readiness only on the journal evidence the suspend saved: the
// receipt of the verified flush the manifest names holds the journal boundary the session closed
// on (checkpoint, upper position, ordered journal digest) and the source cache acknowledgment. The
// Host's rebuild must name exactly those; a flush record without a boundary (saved before flushes
// carried one) cannot authorize a rebuild at all. Replays and replacement attempts are checked
// against the same saved boundary, never a later journal.
import type { ActivationRecovery } from '../agenthost/activation.ts';
import { journalBoundarySchema } from '../agenthost/flush.ts';
import { refuseResumeOn } from './errors.ts';

type JournalRebuild = Extract<ActivationRecovery, { mode: 'JournalRebuild' }>;

/** Refuses unless `recovery` rebuilt to exactly the boundary the verified flush's receipt saved. */
export function checkJournalRebuild(
  flushReceipt: Record<string, unknown> | null,
  recovery: JournalRebuild,
): void {
  const saved = journalBoundarySchema.safeParse(flushReceipt?.['journal']);
  const cache = flushReceipt?.['cache'];
  const sourceCache =
    typeof cache === 'object' && cache !== null && 'cacheSha256' in cache ? cache.cacheSha256 : null;
  refuseResumeOn(
    'resume-journal-evidence-missing',
    saved.success && typeof sourceCache === 'string'
      ? null
      : "the suspend's verified flush saved no journal boundary: a journal rebuild cannot establish readiness",
  );
  if (!saved.success) return;
  const expected: [string, unknown, unknown][] = [
    ['checkpoint', recovery.checkpointId, saved.data.checkpointId],
    ['upper position', recovery.upperPosition, saved.data.upperPosition],
    ['ordered journal digest', recovery.journalSha256, saved.data.journalSha256],
    ['source cache acknowledgment', recovery.sourceCacheSha256, sourceCache],
  ];
  const wrong = expected.find(([, actual, wanted]) => actual !== wanted);
  refuseResumeOn(
    'resume-recovery-evidence-mismatch',
    wrong === undefined
      ? null
      : `the Host rebuilt the journal to another ${wrong[0]} than the suspend's verified flush saved`,
  );
}
