// Where a BuildTest operation may run: the caller's current lease, read back from the cluster before
// any Pod is made. The lease's options snapshot must parse and pin this cluster; its claim must be
// the exact one (name and UID) the resource ID names, carry the owner binding and not be deleting;
// and the Workspace the command mounts is the PVC the lease's template recorded (by name and UID),
// which must be the Workspace the placement names and must still be Bound at those generations.
// Every failed check refuses definitively: nothing has been created yet.
import { definitive } from '../errors.ts';
import type { BuildTestPlacement } from '../build-test.ts';
import type { CallOptions } from '../provider.ts';
import type { WorkspacePlan } from './builders.ts';
import type { KubeConfig } from './client-node.ts';
import { clusterPinOf } from './cluster-pin.ts';
import type { KubeClient } from './kube-client.ts';
import { objectNames, parseResourceId, pvcNameOf } from './names.ts';
import { parseSnapshot, type AgentSandboxSnapshot } from './options-snapshot.ts';
import { checkWorkspacePvc } from './preflight.ts';
import { validateClaim, validateTemplate } from './validate-objects.ts';

export interface LeaseFacts {
  snapshot: AgentSandboxSnapshot;
  workspace: WorkspacePlan;
}

/** The lease's snapshot, refused unless it names this runner's namespace and the live cluster. */
export function leaseSnapshot(
  placement: BuildTestPlacement,
  kubeConfig: KubeConfig,
  namespace: string,
): AgentSandboxSnapshot {
  const snapshot = parseSnapshot(placement.lease.options);
  if (snapshot.namespace !== namespace) {
    throw definitive(
      'namespace-mismatch',
      `The lease lives in namespace ${snapshot.namespace}, not ${namespace}`,
    );
  }
  let live: string;
  try {
    live = clusterPinOf(kubeConfig);
  } catch {
    throw definitive('cluster-pin-unavailable', 'The live cluster pin cannot be computed');
  }
  if (live !== snapshot.clusterPin) {
    throw definitive('cluster-pin-mismatch', "The lease's objects live in another cluster; refusing to act");
  }
  return snapshot;
}

export async function resolveLease(
  kube: KubeClient,
  snapshot: AgentSandboxSnapshot,
  placement: BuildTestPlacement,
  call: CallOptions,
): Promise<LeaseFacts> {
  const { owner, resourceId } = placement.lease;
  const claimId = parseResourceId(resourceId);
  const names = objectNames(owner.operationId);
  if (claimId === undefined || claimId.name !== names.claim) {
    throw definitive(
      'lease-mismatch',
      `Resource ${resourceId} is not the lease of operation ${owner.operationId}`,
    );
  }
  const refuse = (code: string, message: string) => definitive(code, message);
  const claim = await kube.getCustom('SandboxClaim', snapshot.namespace, names.claim, call);
  if (claim === null || claim.metadata?.deletionTimestamp) {
    throw refuse('lease-absent', `SandboxClaim ${names.claim} is absent or being deleted`);
  }
  try {
    validateClaim(claim, owner, names, claimId.uid);
    const template = await kube.getCustom('SandboxTemplate', snapshot.namespace, names.template, call);
    if (template === null) throw refuse('lease-absent', `SandboxTemplate ${names.template} is gone`);
    const { workspace } = validateTemplate(template, owner, names, snapshot);
    const wanted = placement.workspace;
    if (
      pvcNameOf(wanted.volumeId) !== workspace.pvcName ||
      wanted.mountPath !== workspace.mountPath ||
      wanted.resourceGeneration !== workspace.resourceGeneration ||
      wanted.dataGeneration !== workspace.dataGeneration ||
      wanted.readOnly !== workspace.readOnly
    ) {
      throw refuse('workspace-mismatch', `The lease mounts another Workspace than the one named`);
    }
    // The command writes the Workspace: a lease that mounts it read-only cannot run one.
    if (workspace.readOnly) throw refuse('workspace-read-only', 'The lease mounts its Workspace read-only');
    await checkWorkspacePvc(
      kube,
      snapshot,
      { ...workspace, environmentId: owner.environmentId, uid: workspace.pvcUid },
      call,
      refuse,
    );
    return { snapshot, workspace };
  } catch (error) {
    // A lease that is not ours is no place to run anything; nothing was created, so it is a refusal.
    if (error instanceof Error && 'kind' in error && error.kind === 'ownership') {
      throw refuse('lease-mismatch', error.message);
    }
    throw error;
  }
}
