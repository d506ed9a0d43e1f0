// Embedded Workspace owner: a volume bound to one Environment, created idempotently per key.
import type { Database } from '../store/db.ts';
import { lockEnvironment, readEnvironment } from '../store/environments.ts';
import { createVolume, type VolumeRow } from '../store/workspaces.ts';
import { requirePermissions } from './authority.ts';
import { LeaseConflictError } from './errors.ts';
import { readOwnedEnvironment, type EnvironmentAddress } from './owned.ts';
import type { Caller, ProjectsAuthority } from './ports.ts';

export interface VolumeView {
  volumeId: string;
  environmentId: string;
  resourceGeneration: number;
  dataGeneration: number;
  state: string;
}

const viewOf = (v: VolumeRow): VolumeView => ({
  volumeId: v.volumeId,
  environmentId: v.environmentId,
  resourceGeneration: v.resourceGeneration,
  dataGeneration: v.dataGeneration,
  state: v.state,
});

export async function createWorkspaceVolume(
  deps: { db: Database; authority: ProjectsAuthority },
  caller: Caller,
  address: EnvironmentAddress,
  idempotencyKey: string,
): Promise<{ created: boolean; volume: VolumeView }> {
  await requirePermissions(deps.authority, caller, address.projectId, ['WriteProjects']);
  await readOwnedEnvironment(deps.db, caller, address);
  await requirePermissions(deps.authority, caller, address.projectId, ['WriteProjects']);
  const result = await deps.db.transaction(async (tx) => {
    await lockEnvironment(tx, address.environmentId);
    const env = await readEnvironment(tx, address.environmentId);
    const made = await createVolume(tx, address.environmentId, idempotencyKey);
    // A replay still answers after release; a new volume needs a Registered Environment.
    if (made.created && env?.lifecycleState !== 'Registered') {
      throw new LeaseConflictError(
        'environment-not-registered',
        `the Environment is ${env?.lifecycleState ?? 'gone'}`,
      );
    }
    await requirePermissions(deps.authority, caller, address.projectId, ['WriteProjects'], tx);
    return made;
  });
  return { created: result.created, volume: viewOf(result.volume) };
}
