// Embedded Workspace owner: a volume bound to one Environment, created idempotently per key.
import type { Database } from '../../store/db.ts';
import { lockEnvironment, readEnvironment } from '../../store/environments.ts';
import { createVolume, type VolumeRow } from '../../store/workspaces.ts';
import { LeaseConflictError } from '../errors.ts';
import { Guard, type AuthorityDeps } from '../guard.ts';
import type { EnvironmentAddress } from '../owned.ts';
import type { Caller } from '../ports.ts';

export interface VolumeView {
  volumeId: string;
  environmentId: string;
  resourceGeneration: number;
  dataGeneration: number;
  state: string;
  /** The volume's revision: every attach, flush, hold or detach moves it (Core names it in a suspend). */
  transitionRevision: number;
}

const viewOf = (v: VolumeRow): VolumeView => ({
  volumeId: v.volumeId,
  environmentId: v.environmentId,
  resourceGeneration: v.resourceGeneration,
  dataGeneration: v.dataGeneration,
  state: v.state,
  transitionRevision: v.revision,
});

export class WorkspaceService {
  constructor(private readonly deps: AuthorityDeps & { db: Database }) {}

  async createVolume(
    caller: Caller,
    address: EnvironmentAddress,
    idempotencyKey: string,
  ): Promise<{ created: boolean; volume: VolumeView }> {
    const guard = new Guard(this.deps, caller, address.projectId, ['WriteProjects']);
    // Asked again inside the transaction before commit.
    await guard.owner(address);
    const result = await this.deps.db.transaction(async (tx) => {
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
      await guard.check(tx);
      return made;
    });
    return { created: result.created, volume: viewOf(result.volume) };
  }
}
