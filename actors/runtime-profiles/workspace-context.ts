// The runtime Workspace context of a registered runtime profile (EnvironmentRuntimeWorkspaceContext,
// GET …/runtime-bootstrap/profiles/{profileId}/workspace): which Workspace the profile's sandbox
// mounts, where, and at which transition revision and generations.
//
// Invariant: the lease and the Workspace record are answered as ONE state. The profile is first read
// exactly as its own read does (run-bound token, fresh ReadRunSelection, every pin still current);
// then one transaction takes the Environment's owner lock, which every writer of a lease or a
// volume row holds too (the actor runtime's derived rows), and reads the owner, the current lease
// and the volume its validated recorded provision request names. The lease must be the Active,
// unexpired one the profile maps; the volume must be Attached to exactly that lease at the
// generations the request recorded, with its Storage binding pinned. Authority and the run's
// selection are asked again inside that transaction, after the last read.
//
// Nothing is written and nothing outside PostgreSQL is asked: no provider, Storage or Host call,
// no flush, no content checkpoint, no tree hash. A context proves neither Workspace content nor a
// suspended session. The answer carries no provider option, credential or PVC release descriptor.
import { problemClass } from '../../lib/errors.ts';
import type { Database, Queryable } from '../../store/db.ts';
import { lockEnvironment, readEnvironment, type EnvironmentRow } from '../../store/environments.ts';
import { readCurrentLease, type LeaseRow } from '../../store/leases.ts';
import type { ProfileMappingRow } from '../../store/runtime-profiles.ts';
import { readStorageBinding, type StorageBinding } from '../../store/workspace-bindings.ts';
import { readVolume, type VolumeRow } from '../../store/workspaces.ts';
import { ActorError } from '../errors.ts';
import { Guard, type AuthorityDeps } from '../guard.ts';
import type { EnvironmentAddress } from '../owned.ts';
import type { PlacementCaller } from '../sandbox/placement.ts';
import { mapsLease } from './current.ts';
import { EnvironmentNotActiveError, RuntimeProfileStaleError } from './errors.ts';
import { isExpired, recordedRequestOf, type RecordedRequest } from '../sandbox/readiness.ts';

export interface RuntimeWorkspaceContext {
  environmentId: string;
  /** The derived runtime profile ID (`rp_…`) the context was read for. */
  profileId: string;
  /** The current Active lease the profile maps: its fences and the provider's Sandbox resource. */
  lease: {
    operationId: string;
    lifecycleGeneration: number;
    resourceGeneration: number;
    providerFence: number;
    resourceId: string;
  };
  workspace: {
    volumeId: string;
    state: 'Attached';
    /** The Workspace record's revision: moved by every attach, hold and detach of the volume. */
    transitionRevision: number;
    resourceGeneration: number;
    /** Metadata only; zero is a valid value. */
    dataGeneration: number;
    /** The pinned Storage binding: the provider and the exact PVC (never its options or release). */
    storage: { providerId: string; pvc: { namespace: string; name: string; uid: string } };
    /** The validated mount negotiation from the lease's recorded provision request. */
    mount: { path: string; readOnly: boolean };
  };
  /** The network policy generation the lease's recorded provision request names. */
  networkPolicyGeneration: number;
}

export interface RuntimeWorkspaceContextDeps extends AuthorityDeps {
  db: Database;
  /** The registered profile's own read (RuntimeProfileService.read), with its 403, 404 and 409. */
  profiles: {
    read(caller: PlacementCaller, address: EnvironmentAddress, profileId: string): Promise<ProfileMappingRow>;
  };
}

/** The current lease is not the one the profile maps (any more); nothing was answered. */
export class RuntimeWorkspaceLeaseChangedError extends problemClass(
  { code: 'runtime-workspace-lease-changed', status: 409, title: 'Runtime Workspace lease changed' },
  ActorError,
) {
  constructor(
    readonly reason: 'no-lease' | 'not-active' | 'expired' | 'another-lease' | 'recovery-record-invalid',
    message: string,
  ) {
    super(message);
  }

  override get extensions() {
    return { reason: this.reason };
  }
}

/** The Workspace record is not Attached to the mapped lease exactly as its request recorded. */
export class RuntimeWorkspaceNotAttachedError extends problemClass(
  { code: 'runtime-workspace-not-attached', status: 409, title: 'Runtime Workspace not attached' },
  ActorError,
) {
  constructor(
    readonly reason:
      'volume-missing' | 'detached' | 'another-lease' | 'generation-mismatch' | 'storage-unbound',
    readonly volumeId: string,
    message: string,
  ) {
    super(message);
  }

  override get extensions() {
    return { reason: this.reason, volumeId: this.volumeId };
  }
}

type PlacedLease = LeaseRow & { resource: NonNullable<LeaseRow['resource']> };

export class RuntimeWorkspaceContextReader {
  constructor(private readonly deps: RuntimeWorkspaceContextDeps) {}

  async read(
    caller: PlacementCaller,
    address: EnvironmentAddress,
    profileId: string,
  ): Promise<RuntimeWorkspaceContext> {
    const mapping = await this.deps.profiles.read(caller, address, profileId);
    const guard = new Guard(this.deps, caller, address.projectId, ['ReadRunSelection']);
    return this.deps.db.transaction(async (tx) => {
      await lockEnvironment(tx, mapping.environmentId);
      requireOwner(await readEnvironment(tx, mapping.environmentId), mapping);
      const { lease, request } = requireMappedLease(
        await readCurrentLease(tx, mapping.environmentId),
        mapping,
        new Date(),
      );
      const volume = requireAttached(await readVolume(tx, request.workspace.volumeId), lease, request);
      const binding = await readStorageBinding(tx, volume.volumeId);
      if (binding === null) {
        throw new RuntimeWorkspaceNotAttachedError(
          'storage-unbound',
          volume.volumeId,
          `Workspace volume ${volume.volumeId} has no pinned Storage binding`,
        );
      }
      await recheck(tx, guard, address.runId, mapping);
      return contextOf(mapping, lease, request, volume, binding);
    });
  }
}

function requireOwner(owner: EnvironmentRow | null, mapping: ProfileMappingRow): void {
  if (owner === null || owner.lifecycleState !== 'Registered' || owner.quarantinedAt !== null) {
    throw new EnvironmentNotActiveError('the Environment is not an active owner');
  }
  if (owner.lifecycleGeneration !== mapping.lifecycleGeneration) {
    throw new EnvironmentNotActiveError('the Environment moved to another lifecycle generation');
  }
  if (owner.runSelectionHash !== mapping.selectionHash) throw new RuntimeProfileStaleError('selection');
}

/** The held current lease: Active, unexpired, exactly the mapped placement, with a valid record. */
function requireMappedLease(
  lease: LeaseRow | null,
  mapping: ProfileMappingRow,
  now: Date,
): { lease: PlacedLease; request: RecordedRequest } {
  if (lease === null || lease.resource === null) {
    throw new RuntimeWorkspaceLeaseChangedError('no-lease', 'the Environment has no current placed lease');
  }
  if (lease.state !== 'Active') {
    throw new RuntimeWorkspaceLeaseChangedError(
      'not-active',
      `the current lease is ${lease.state}, not Active`,
    );
  }
  if (isExpired(lease, now)) {
    throw new RuntimeWorkspaceLeaseChangedError('expired', 'the current lease expired');
  }
  if (!mapsLease(mapping, lease)) {
    throw new RuntimeWorkspaceLeaseChangedError(
      'another-lease',
      'the current lease or its placement is not the one the runtime profile maps; resolve a new profile',
    );
  }
  const request = recordedRequestOf(lease);
  if (request === null) {
    throw new RuntimeWorkspaceLeaseChangedError(
      'recovery-record-invalid',
      "the lease's recovery record does not name this lease",
    );
  }
  return { lease: { ...lease, resource: lease.resource }, request };
}

function requireAttached(volume: VolumeRow | null, lease: LeaseRow, request: RecordedRequest): VolumeRow {
  const wanted = request.workspace;
  const refuse = (reason: RuntimeWorkspaceNotAttachedError['reason'], message: string): never => {
    throw new RuntimeWorkspaceNotAttachedError(reason, wanted.volumeId, message);
  };
  if (volume?.environmentId !== lease.environmentId) {
    return refuse('volume-missing', `no Workspace volume ${wanted.volumeId} of this Environment`);
  }
  if (volume.state !== 'Attached') {
    return refuse('detached', `Workspace volume ${volume.volumeId} is ${volume.state}`);
  }
  if (volume.attachedLease !== lease.resourceGeneration) {
    return refuse('another-lease', `Workspace volume ${volume.volumeId} is attached to another lease`);
  }
  if (
    volume.resourceGeneration !== wanted.resourceGeneration ||
    volume.dataGeneration !== wanted.dataGeneration
  ) {
    return refuse(
      'generation-mismatch',
      `Workspace volume ${volume.volumeId} is at resource generation ${volume.resourceGeneration}, data generation ${volume.dataGeneration}, not the lease's ${wanted.resourceGeneration}, ${wanted.dataGeneration}`,
    );
  }
  return volume;
}

/** Inside the transaction, after the last read: authority, and the run's selection still the pinned one. */
async function recheck(
  tx: Queryable,
  guard: Guard,
  runId: string,
  mapping: ProfileMappingRow,
): Promise<void> {
  const selection = await guard.checkWithSelection(runId, tx);
  if (selection.selectionHash !== mapping.selectionHash) throw new RuntimeProfileStaleError('selection');
}

function contextOf(
  mapping: ProfileMappingRow,
  lease: PlacedLease,
  request: RecordedRequest,
  volume: VolumeRow,
  binding: StorageBinding,
): RuntimeWorkspaceContext {
  return {
    environmentId: lease.environmentId,
    profileId: mapping.profileId,
    lease: {
      operationId: lease.operationId,
      lifecycleGeneration: lease.lifecycleGeneration,
      resourceGeneration: lease.resourceGeneration,
      providerFence: lease.providerFence,
      resourceId: lease.resource.resourceId,
    },
    workspace: {
      volumeId: volume.volumeId,
      state: 'Attached',
      transitionRevision: volume.revision,
      resourceGeneration: volume.resourceGeneration,
      dataGeneration: volume.dataGeneration,
      storage: {
        providerId: binding.selection.providerId,
        pvc: { namespace: binding.pvcNamespace, name: binding.pvcName, uid: binding.pvcUid },
      },
      mount: { path: request.workspace.mountPath, readOnly: request.workspace.readOnly },
    },
    networkPolicyGeneration: request.networkPolicyGeneration,
  };
}
