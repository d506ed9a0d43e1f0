// What happens to a Workspace when the lease that mounts it retires (Released on the provider's
// exact proof, or Failed when nothing was created): docs/suspend-resume.md "Retirement".
//
// The volume must stand where the lease's attachment and the lease's own verified flushes put it.
// A volume whose counters moved otherwise is not detached: it stays Attached to the retired lease
// (held, for an operator to reconcile), because detaching would hand out data nobody vouches for.
// And a volume whose counters moved by a verified suspend flush is detached only by a step that
// asked Core afresh: a release under Core's suspend operation (`suspend-release:<operationId>`)
// leaves the detach to the placement release route, which confirms the saved flush with Core after
// its wait and detaches under fresh Projects authority in its own commit. Other retirements of a
// flushed lease (the owner's abandon, an expiry) detach here, with the same chain check.
import type { Queryable } from '../../store/db.ts';
import { readLeaseAttachment } from '../../store/leases.ts';
import { readVerifiedFlushesOfLease, type FlushRow } from '../../store/workspace-flushes.ts';
import { detachVolume, readVolume, type VolumeRow } from '../../store/workspaces.ts';

/** The release key of a suspend's placement release: its detach waits for Core (release-placement.ts). */
export const SUSPEND_RELEASE_KEY_PREFIX = 'suspend-release:';

export type Retirement =
  /** Nothing to detach: no volume, or it is no longer attached to this lease. */
  | 'none'
  | 'detached'
  /** Flushed, released under Core's suspend operation: the placement release route detaches it. */
  | 'awaiting-core'
  /** Counters moved without this lease's own verified flush chain: kept Attached. */
  | 'held';

/**
 * Judges the volume against what the lease attached and the lease's verified flushes of it: null
 * when the counters are exactly explained (unchanged, or moved one by one by those flushes), or why
 * not. `flushed` is whether any of those flushes moved them.
 */
export function retirementProblem(
  attachedAt: number,
  volume: Pick<VolumeRow, 'dataGeneration'>,
  flushes: readonly Pick<FlushRow, 'dataGeneration'>[],
): { problem: string | null; flushed: boolean } {
  if (volume.dataGeneration === attachedAt) return { problem: null, flushed: false };
  let generation = attachedAt;
  for (const flush of flushes) {
    if (flush.dataGeneration !== generation) break;
    generation += 1;
  }
  return generation === volume.dataGeneration
    ? { problem: null, flushed: true }
    : {
        problem: `data generation ${volume.dataGeneration} is not reached from ${attachedAt} by this lease's verified flushes`,
        flushed: true,
      };
}

/** Detaches the volume of the retiring lease `resourceGeneration`, or says why it stays attached. */
export async function retireWorkspace(
  tx: Queryable,
  environmentId: string,
  resourceGeneration: number,
  releaseKey: string | null,
): Promise<Retirement> {
  const attachment = await readLeaseAttachment(tx, environmentId, resourceGeneration);
  if (attachment === null) return 'none';
  const volume = await readVolume(tx, attachment.volumeId);
  if (volume?.state !== 'Attached' || volume.attachedLease !== resourceGeneration) return 'none';
  const flushes = await readVerifiedFlushesOfLease(tx, attachment.operationId, attachment.volumeId);
  const { problem, flushed } = retirementProblem(attachment.dataGeneration, volume, flushes);
  if (problem !== null) return 'held';
  if (flushed && releaseKey?.startsWith(SUSPEND_RELEASE_KEY_PREFIX) === true) return 'awaiting-core';
  return (await detachVolume(tx, volume.volumeId, resourceGeneration)) ? 'detached' : 'none';
}
