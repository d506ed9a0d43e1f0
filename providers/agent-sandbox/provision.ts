// Provision, idempotent per operation: verify the cluster (RuntimeClass handler, Workspace PVC), then
// create template → pool → claim under names derived from the operation. AlreadyExists adopts an
// object only after checking it carries our exact owner binding. A refusal is reported definitive
// only when nothing of ours is left behind: objects this operation made are rolled back first, and a
// claim that exists means the effect happened, so the outcome is uncertain instead.
import { narrowed } from '../call-budget.ts';
import { definitive, ProviderError, uncertain } from '../errors.ts';
import type { CallOptions, OwnerBinding, ProviderResource, ProvisionRequest } from '../provider.ts';
import { buildClaim, buildPool, buildTemplate, type Blueprint, type WorkspacePlan } from './builders.ts';
import type { CustomKind } from './kube-client.ts';
import { budget } from './kube-errors.ts';
import type { KubeObject } from './kube-object.ts';
import { objectNames, pvcNameOf, type ObjectNames } from './names.ts';
import { awaitObserved, type AdapterContext } from './observe.ts';
import { ownerOf, validateOwner } from './owner-labels.ts';
import { checkRuntimeClass, checkWorkspacePvc } from './preflight.ts';
import { validateClaim, validatePool, validateTemplate } from './validate-objects.ts';

const MOUNT_PATH = /^(\/[A-Za-z0-9._-]+)+$/;

function planWorkspace(request: ProvisionRequest): Omit<WorkspacePlan, 'pvcUid'> {
  const { workspace } = request;
  const pvcName = pvcNameOf(workspace.volumeId);
  const problems: string[] = [];
  if (pvcName === undefined) problems.push(`volumeId ${workspace.volumeId} names no PVC`);
  const segments = workspace.mountPath.split('/');
  if (
    !MOUNT_PATH.test(workspace.mountPath) ||
    workspace.mountPath.length > 1024 ||
    segments.some((s) => s === '.' || s === '..') ||
    ['tmp', 'proc', 'sys', 'dev', 'etc'].includes(segments[1] ?? '')
  ) {
    problems.push(
      `mountPath ${workspace.mountPath} is not an absolute, plain path outside system directories`,
    );
  }
  for (const key of ['resourceGeneration', 'dataGeneration'] as const) {
    if (!Number.isSafeInteger(workspace[key]) || workspace[key] < 0)
      problems.push(`${key} must be an integer ≥ 0`);
  }
  if (!Number.isSafeInteger(request.networkPolicyGeneration) || request.networkPolicyGeneration < 1) {
    problems.push('networkPolicyGeneration must be an integer ≥ 1');
  }
  const { expiresAt } = request;
  if (expiresAt !== undefined && expiresAt !== null && !Number.isFinite(Date.parse(expiresAt))) {
    problems.push('expiresAt must be an ISO instant or null');
  }
  if (problems.length > 0) throw definitive('invalid-request', `Provision refused: ${problems.join('; ')}`);
  return {
    pvcName: pvcName ?? '',
    resourceGeneration: workspace.resourceGeneration,
    dataGeneration: workspace.dataGeneration,
    mountPath: workspace.mountPath,
    readOnly: workspace.readOnly,
  };
}

/** Deletes what this operation made (never the claim, never a foreign object) and waits for it to go. */
async function rollBack(context: AdapterContext, names: ObjectNames, owner: OwnerBinding, call: CallOptions) {
  const { kube, snapshot } = context;
  const ours = (object: KubeObject) => {
    try {
      const actual = ownerOf(object);
      return actual.operationId === owner.operationId && actual.ownerHash === owner.ownerHash;
    } catch {
      return false;
    }
  };
  const claim = await kube.getCustom('SandboxClaim', snapshot.namespace, names.claim, call);
  if (claim !== null && ours(claim)) return 'applied';
  const bounded = narrowed(call, snapshot.reconciliationTimeoutSeconds * 1000);
  for (const [kind, name] of [
    ['SandboxWarmPool', names.pool],
    ['SandboxTemplate', names.template],
  ] as const) {
    for (;;) {
      const object = await kube.getCustom(kind, snapshot.namespace, name, bounded);
      if (object === null || !ours(object)) break;
      await kube.deleteCustom(
        kind,
        snapshot.namespace,
        name,
        object.metadata?.uid ?? '',
        'Background',
        bounded,
      );
      await budget.sleep(snapshot.pollIntervalMilliseconds, bounded, `rollback of ${name}`);
    }
  }
  return 'rolled-back';
}

/** A refusal stays definitive (or ownership) only once nothing of this operation remains. */
async function settleRefusal(
  context: AdapterContext,
  names: ObjectNames,
  owner: OwnerBinding,
  error: unknown,
  call: CallOptions,
): Promise<unknown> {
  if (!(error instanceof ProviderError) || error.kind === 'uncertain') return error;
  try {
    if ((await rollBack(context, names, owner, call)) === 'rolled-back') return error;
    return uncertain(
      `${error.code}-after-apply`,
      `${error.message}; but SandboxClaim ${names.claim} exists`,
      error,
    );
  } catch (rollbackError) {
    return uncertain(
      `${error.code}-rollback-incomplete`,
      `${error.message}; rolling back failed`,
      rollbackError,
    );
  }
}

async function ensure(
  { kube, snapshot }: AdapterContext,
  kind: CustomKind,
  body: KubeObject,
  check: (object: KubeObject) => void,
  call: CallOptions,
): Promise<void> {
  const result = await kube.createCustom(kind, snapshot.namespace, body, call);
  if (result.created) return check(result.object);
  const name = body.metadata?.name ?? '';
  const existing = await kube.getCustom(kind, snapshot.namespace, name, call);
  if (existing === null)
    throw uncertain('already-exists-unreadable', `${kind} ${name} exists but cannot be read`);
  check(existing);
}

function sameWorkspace(actual: WorkspacePlan, wanted: WorkspacePlan, name: string): void {
  const differing = (Object.keys(wanted) as (keyof WorkspacePlan)[]).filter((k) => actual[k] !== wanted[k]);
  if (differing.length > 0) {
    throw definitive(
      'operation-request-mismatch',
      `${name} records another Workspace (${differing.join(', ')})`,
    );
  }
}

export async function provision(
  context: AdapterContext,
  request: ProvisionRequest,
  call: CallOptions,
): Promise<ProviderResource> {
  const { kube, snapshot } = context;
  validateOwner(request.owner);
  const owner = request.owner;
  const planned = planWorkspace(request);
  const names = objectNames(owner.operationId);
  try {
    await checkRuntimeClass(kube, snapshot, call, definitive);
    const pvcUid = await checkWorkspacePvc(
      kube,
      snapshot,
      { ...planned, environmentId: owner.environmentId },
      call,
      definitive,
    );
    const workspace = { ...planned, pvcUid };
    const blueprint: Blueprint = {
      owner,
      names,
      snapshot,
      workspace,
      networkPolicyGeneration: request.networkPolicyGeneration,
      expiresAt: request.expiresAt ?? null,
    };
    await ensure(
      context,
      'SandboxTemplate',
      buildTemplate(blueprint),
      (t) => sameWorkspace(validateTemplate(t, owner, names, snapshot).workspace, workspace, names.template),
      call,
    );
    await ensure(
      context,
      'SandboxWarmPool',
      buildPool(blueprint),
      (p) => validatePool(p, owner, names),
      call,
    );
    await ensure(context, 'SandboxClaim', buildClaim(blueprint), (c) => validateClaim(c, owner, names), call);
  } catch (error) {
    throw await settleRefusal(context, names, owner, error, call);
  }
  // From here our claim exists: whatever goes wrong, the effect happened, so it is never definitive.
  try {
    const observed = await awaitObserved(context, owner, names, call);
    if (observed.state === 'absent')
      throw uncertain('vanished', `SandboxClaim ${names.claim} vanished after creation`);
    return observed.resource;
  } catch (error) {
    if (error instanceof ProviderError && error.kind === 'uncertain') throw error;
    const code = error instanceof ProviderError ? error.code : 'adapter-error';
    throw uncertain(
      `unverified-${code}`,
      `SandboxClaim ${names.claim} exists but did not verify: ${String(error)}`,
      error,
    );
  }
}
