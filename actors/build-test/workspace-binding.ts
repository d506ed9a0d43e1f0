// The Workspace a BuildTest effect may touch: the lease's own volume, still attached to that lease
// at the generations the lease recorded, with no flush holding it. A flush that is open (the Host
// is being asked to seal the Workspace) or that verified on this lease (the volume's data moved on
// to the suspend's generation) takes the Workspace away from BuildTest: no command is reserved,
// dispatched or collected on it. Read under the Environment's lock by whoever starts an effect, so
// the answer holds until that transaction commits.
import type { Queryable } from '../../store/db.ts';
import type { LeaseRow } from '../../store/leases.ts';
import { readFlushHoldingVolume } from '../../store/workspace-flushes.ts';
import { readVolume } from '../../store/workspaces.ts';
import { recordedRequestOf } from '../sandbox/readiness.ts';

/** Why the lease's Workspace is not BuildTest's to use now; null when it is. */
export async function workspaceProblem(q: Queryable, lease: LeaseRow): Promise<string | null> {
  const recorded = recordedRequestOf(lease);
  if (recorded === null) return 'the lease has no validated recovery record naming its Workspace';
  const mount = recorded.workspace;
  const volume = await readVolume(q, mount.volumeId);
  if (volume === null) return `Workspace volume ${mount.volumeId} does not exist`;
  if (volume.state !== 'Attached' || volume.attachedLease !== lease.resourceGeneration) {
    return `Workspace volume ${mount.volumeId} is not attached to this lease`;
  }
  const flush = await readFlushHoldingVolume(q, mount.volumeId, lease.operationId);
  if (flush !== null) {
    return flush.state === 'Verified'
      ? `the Workspace was flushed for suspend by ${flush.flushOperationId}; no command runs on it again`
      : `flush ${flush.flushOperationId} of the Workspace is open (${flush.state})`;
  }
  if (
    volume.resourceGeneration !== mount.resourceGeneration ||
    volume.dataGeneration !== mount.dataGeneration
  ) {
    return (
      `Workspace volume ${mount.volumeId} is at resource generation ${volume.resourceGeneration}, ` +
      `data generation ${volume.dataGeneration}; the lease mounted ${mount.resourceGeneration}, ${mount.dataGeneration}`
    );
  }
  return null;
}
