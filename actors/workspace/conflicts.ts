// A late resource whose Workspace volume another lease holds: two sandboxes may mount one
// Workspace. The writer keeps the conflict on the cleanup row (migration 0027) and notes it; once
// the transition commits, this listener logs a warning and counts it. The row is what the read
// route, the inspection and `sandlot audit` show; the note only reports the moment it was found.
import type { Logger } from 'pino';
import type { CommitListener } from '../runtime.ts';

export const WORKSPACE_CONFLICT_NOTE = 'workspace-conflict';

/** Logs (IDs and generations only) and counts every Workspace conflict a committed transition found. */
export function reportWorkspaceConflicts(logger: Logger, count?: () => void): CommitListener {
  return (notice) => {
    if (notice.outcome !== 'committed') return;
    for (const note of notice.notes) {
      if (note.kind !== WORKSPACE_CONFLICT_NOTE) continue;
      count?.();
      logger.warn(
        { environmentId: notice.environmentId, event: notice.event.type, ...note.detail },
        'late resource recorded while its Workspace volume is held by another lease: releasing it first',
      );
    }
  };
}
