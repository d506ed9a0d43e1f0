// Checks made before a lease is reserved and before any provider is contacted: the run selection
// names exactly one exclusive candidate that matches the configured provider in every field (no
// default substitution), the Workspace is the exact Available generation, and the network policy
// generation is the project's verified current one.
import type { ProviderIdentity } from '../providers/provider.ts';
import type { Queryable } from '../store/db.ts';
import { latestNetworkPolicyGeneration, readNetworkPolicy } from '../store/network-policies.ts';
import { readVolume } from '../store/workspaces.ts';
import { NetworkPolicyUnverifiedError, ProviderSelectionError, WorkspaceConflictError } from './errors.ts';
import type { ProviderCandidate, RunSelection } from './ports.ts';

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

export async function verifyWorkspace(
  q: Queryable,
  environmentId: string,
  workspace: { volumeId: string; resourceGeneration: number; dataGeneration: number },
): Promise<void> {
  const volume = await readVolume(q, workspace.volumeId);
  if (
    volume?.environmentId !== environmentId ||
    volume.resourceGeneration !== workspace.resourceGeneration ||
    volume.dataGeneration !== workspace.dataGeneration ||
    volume.state !== 'Available'
  ) {
    throw new WorkspaceConflictError(workspace.volumeId);
  }
}

/** Fresh verification: the generation exists and is the project's newest. */
export async function verifyNetworkPolicy(
  q: Queryable,
  tenantId: string,
  projectId: string,
  generation: number,
): Promise<void> {
  const policy = await readNetworkPolicy(q, tenantId, projectId, generation);
  if (policy === null)
    throw new NetworkPolicyUnverifiedError(`network policy generation ${generation} does not exist`);
  const latest = await latestNetworkPolicyGeneration(q, tenantId, projectId);
  if (latest !== generation) {
    throw new NetworkPolicyUnverifiedError(
      `network policy generation ${generation} is not current (newest is ${latest})`,
    );
  }
}

export async function networkPolicyVerified(
  q: Queryable,
  tenantId: string,
  projectId: string,
  generation: number,
) {
  try {
    await verifyNetworkPolicy(q, tenantId, projectId, generation);
    return true;
  } catch (error) {
    if (error instanceof NetworkPolicyUnverifiedError) return false;
    throw error;
  }
}
