// Checks made before a lease is reserved and before any provider is contacted: the run selection
// names exactly one exclusive candidate that matches the configured provider in every field (no
// default substitution), the Workspace is the exact Available generation and its storage (read back
// through the WorkspaceStorage port) holds the pinned PVC and PV for it, and the network policy
// generation is the project's verified current one, asked afresh of the NetworkPolicyVerifier port
// (the embedded table, or the Cilium policies read back from Kubernetes). The storage readback and
// the network policy check are made only for a provider whose capabilities call for them
// (actors/sandbox/provider-applicability.ts); the Workspace record checks always are.
import { problemClass } from '../../lib/errors.ts';
import type { ProviderIdentity } from '../../providers/provider.ts';
import type { Queryable } from '../../store/db.ts';
import type { EnvironmentRow } from '../../store/environments.ts';
import { pinStorageBinding, readStorageBinding } from '../../store/workspace-bindings.ts';
import { readVerifiedFlushGenerations } from '../../store/workspace-flushes.ts';
import { EmbeddedWorkspaceStorage } from '../../store/workspace-storage.ts';
import { readVolume } from '../../store/workspaces.ts';
import {
  ActorError,
  NetworkPolicyUnverifiedError,
  ProviderSelectionError,
  WorkspaceConflictError,
} from '../errors.ts';
import type {
  LeaseProviderRecord,
  NetworkPolicyVerdict,
  NetworkPolicyVerifier,
  ProviderCandidate,
  RunSelection,
  StorageEvidence,
  WorkspaceStorage,
  WorkspaceVolumeRef,
} from '../ports.ts';
import {
  bindingOf,
  checkStorageEvidence,
  partlyPinned,
  WorkspaceStorageRefusedError,
  WorkspaceStorageUnavailableError,
  type StorageCheckFailure,
} from '../workspace/storage.ts';

const identityFields = [
  'providerId',
  'adapterVersion',
  'optionsSchemaVersion',
  'optionsRevision',
  'hostingPattern',
  'capabilities',
] as const;

export function selectProvider(selection: RunSelection, configured: ProviderIdentity): ProviderCandidate {
  const exclusive = selection.candidates.filter((c) => c.exclusive);
  if (exclusive.length === 0) {
    throw new ProviderSelectionError(
      'no-exclusive-candidate',
      [],
      'the run selection has no exclusive provider candidate',
    );
  }
  if (exclusive.length > 1) {
    throw new ProviderSelectionError(
      'several-exclusive-candidates',
      [],
      `the run selection has ${exclusive.length} exclusive candidates; exactly one is required`,
    );
  }
  const candidate = exclusive[0]!;
  const mismatches = identityFields
    .filter(
      (field) => JSON.stringify(normalise(candidate[field])) !== JSON.stringify(normalise(configured[field])),
    )
    .map((field) => ({ field, selected: candidate[field], configured: configured[field] }));
  if (mismatches.length > 0) {
    throw new ProviderSelectionError(
      'mismatch',
      mismatches,
      `the selected provider does not match the configured one: ${mismatches.map((m) => m.field).join(', ')}`,
    );
  }
  return candidate;
}

// Capabilities are a set: order does not matter.
const normalise = (value: unknown) => (Array.isArray(value) ? [...(value as string[])].sort() : value);

/** How long the storage readback of one provision may take. */
const STORAGE_TIMEOUT_MS = 5_000;

/**
 * The Workspace record, then its storage: the volume is this Environment's, at exactly the requested
 * generations and Available (WorkspaceConflictError), and storage, read back afresh through the
 * port where `lease` (what the new lease will record) says its objects live, holds exactly the
 * pinned PVC and its bound PV for that generation (actors/workspace/storage.ts).
 * The first verified admission pins the storage binding every later one is compared with. Runs before
 * the lease is reserved, so a refusal reserves and dispatches nothing.
 */
export async function verifyWorkspace(
  q: Queryable,
  env: Pick<EnvironmentRow, 'environmentId' | 'tenantId' | 'projectId'>,
  workspace: { volumeId: string; resourceGeneration: number; dataGeneration: number },
  lease: LeaseProviderRecord,
  storage: WorkspaceStorage = new EmbeddedWorkspaceStorage(q),
): Promise<void> {
  const ref = await verifyWorkspaceRecord(q, env, workspace);
  await verifyStorage(q, ref, lease, storage);
}

/**
 * Storage, read back afresh where `lease` says its objects live, holds exactly what the volume's
 * binding pinned for `ref`'s generations: the PVC and its bound PV, the claim's full specification
 * and the PV's approved mount options (WorkspaceStorageRefusedError, 409, otherwise; 503 when it
 * cannot be read). The first verified check pins what it verified (and a binding pinned before a
 * part was pinnable gains that part, once). Asked before a lease is reserved and around a suspend
 * flush's Host delivery.
 */
export async function verifyStorage(
  q: Queryable,
  ref: WorkspaceVolumeRef,
  lease: LeaseProviderRecord,
  storage: WorkspaceStorage,
): Promise<void> {
  const binding = await readStorageBinding(q, ref.volumeId);
  // A verified flush moves the record past storage's annotation; only its exact chain is accepted.
  const flushedFrom = await readVerifiedFlushGenerations(q, ref.volumeId);
  const evidence = await inspectStorage(storage, ref, lease);
  const refuse = (failures: StorageCheckFailure[]) => {
    if (failures.length > 0) throw new WorkspaceStorageRefusedError(ref.volumeId, failures);
  };
  refuse(checkStorageEvidence({ volume: ref, selection: storage.selection, binding, flushedFrom }, evidence));
  const verified = bindingOf(evidence);
  if (verified === null || !partlyPinned(binding)) return;
  // First verified check (or the first since a part was pinnable): pin what was verified; a
  // concurrent first pin of other storage loses here.
  const held = await pinStorageBinding(q, ref.volumeId, verified);
  refuse(
    checkStorageEvidence({ volume: ref, selection: storage.selection, binding: held, flushedFrom }, evidence),
  );
}

/**
 * The Workspace record alone: the volume is this Environment's, at exactly the requested
 * generations and Available, or WorkspaceConflictError. What a provider without `pvc-attachment`
 * is admitted on: it attaches no volume, so there is no storage to read back or pin.
 */
export async function verifyWorkspaceRecord(
  q: Queryable,
  env: Pick<EnvironmentRow, 'environmentId' | 'tenantId' | 'projectId'>,
  workspace: { volumeId: string; resourceGeneration: number; dataGeneration: number },
): Promise<WorkspaceVolumeRef> {
  const volume = await readVolume(q, workspace.volumeId);
  if (
    volume?.environmentId !== env.environmentId ||
    volume.resourceGeneration !== workspace.resourceGeneration ||
    volume.dataGeneration !== workspace.dataGeneration ||
    volume.state !== 'Available'
  ) {
    throw new WorkspaceConflictError(workspace.volumeId);
  }
  return {
    tenantId: env.tenantId,
    projectId: env.projectId,
    environmentId: env.environmentId,
    volumeId: workspace.volumeId,
    resourceGeneration: workspace.resourceGeneration,
    dataGeneration: workspace.dataGeneration,
  };
}

/** One bounded readback; a port that cannot answer becomes WorkspaceStorageUnavailableError (503). */
async function inspectStorage(
  storage: WorkspaceStorage,
  ref: WorkspaceVolumeRef,
  lease: LeaseProviderRecord,
): Promise<StorageEvidence> {
  try {
    return await storage.inspect(ref, lease, AbortSignal.timeout(STORAGE_TIMEOUT_MS));
  } catch (error) {
    if (error instanceof ActorError) throw error;
    throw new WorkspaceStorageUnavailableError(ref.volumeId, error);
  }
}

/**
 * The network policy's source of truth did not answer (a failed or partial read of the Cilium
 * policies, say): nothing can be concluded, so the request is refused as unavailable (503), never
 * passed as verified nor reported as unverified.
 */
export class NetworkPolicyUnavailableError extends problemClass(
  { code: 'network-policy-unavailable', status: 503, title: 'Network policy unavailable' },
  ActorError,
) {
  constructor(generation: number, cause: unknown) {
    const code =
      typeof cause === 'object' && cause !== null && typeof (cause as { code?: unknown }).code === 'string'
        ? ` (${(cause as { code: string }).code})`
        : '';
    super(`network policy generation ${generation} cannot be verified now: its source did not answer${code}`);
    this.cause = cause;
  }
}

/**
 * Asks the verifier afresh, for `lease` (what it records, or at admission will record); a verifier
 * that cannot answer becomes NetworkPolicyUnavailableError.
 */
async function checkNetworkPolicy(
  policies: NetworkPolicyVerifier,
  tenantId: string,
  projectId: string,
  generation: number,
  lease: LeaseProviderRecord,
): Promise<NetworkPolicyVerdict> {
  try {
    return await policies.verify(tenantId, projectId, generation, lease);
  } catch (error) {
    if (error instanceof ActorError) throw error;
    throw new NetworkPolicyUnavailableError(generation, error);
  }
}

/** Fresh verification that `generation` is the project's current policy, or NetworkPolicyUnverifiedError. */
export async function verifyNetworkPolicy(
  policies: NetworkPolicyVerifier,
  tenantId: string,
  projectId: string,
  generation: number,
  lease: LeaseProviderRecord,
): Promise<void> {
  const verdict = await checkNetworkPolicy(policies, tenantId, projectId, generation, lease);
  if (!verdict.verified) throw new NetworkPolicyUnverifiedError(verdict.reason);
}

/** The same check as a boolean; a source that cannot answer still throws (503), never `false`. */
export async function networkPolicyVerified(
  policies: NetworkPolicyVerifier,
  tenantId: string,
  projectId: string,
  generation: number,
  lease: LeaseProviderRecord,
): Promise<boolean> {
  return (await checkNetworkPolicy(policies, tenantId, projectId, generation, lease)).verified;
}
