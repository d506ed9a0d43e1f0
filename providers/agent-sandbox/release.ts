// Release: foreground-delete the exact claim (UID precondition), wait until exact lookups find the
// claim, its Sandbox and its Pod gone, and only then delete the operation's pool and template. The
// receipt is proof of absence, so it rests on successful exact lookups; a 403, a transport error, a
// foreign object or running out of time stays an error and is never read as absence.
import { hasTimeLeft, narrowed } from '../call-budget.ts';
import { definitive, ownership, uncertain } from '../errors.ts';
import type { CallOptions, ReleaseReceipt, ReleaseRequest } from '../provider.ts';
import type { CustomKind } from './kube-client.ts';
import { budget } from './kube-errors.ts';
import type { KubeObject, OwnerReference } from './kube-object.ts';
import { objectNames, parseResourceId, type ObjectNames } from './names.ts';
import type { AdapterContext } from './observe.ts';
import { assertOwned, validateOwner } from './owner-labels.ts';

const controllerOf = (object: { metadata?: { ownerReferences?: OwnerReference[] } }) =>
  object.metadata?.ownerReferences?.find((reference) => reference.controller === true);

/** What still stands between us and absence, or undefined once claim, Sandbox and Pod are all gone. */
async function remainingChild(
  { kube, snapshot }: AdapterContext,
  names: ObjectNames,
  claimUid: string,
  call: CallOptions,
): Promise<string | undefined> {
  const { namespace } = snapshot;
  const claim = await kube.getCustom('SandboxClaim', namespace, names.claim, call);
  if (claim !== null) {
    if (claim.metadata?.uid !== claimUid) {
      throw ownership(
        'claim-replaced',
        `SandboxClaim ${names.claim} was replaced by UID ${claim.metadata?.uid ?? ''}`,
      );
    }
    return `SandboxClaim ${names.claim}`;
  }
  const sandbox = await kube.getCustom('Sandbox', namespace, names.claim, call);
  if (sandbox !== null) {
    const controller = controllerOf(sandbox);
    if (controller?.kind !== 'SandboxClaim' || controller.uid !== claimUid) {
      throw ownership('foreign-sandbox', `Sandbox ${names.claim} is not a child of SandboxClaim ${claimUid}`);
    }
    return `Sandbox ${names.claim}`;
  }
  const pod = await kube.getPod(namespace, names.claim, call);
  if (pod !== null) {
    const controller = controllerOf(pod);
    if (controller?.kind !== 'Sandbox' || controller.name !== names.claim) {
      throw ownership('foreign-pod', `Pod ${names.claim} is not a child of Sandbox ${names.claim}`);
    }
    return `Pod ${names.claim}`;
  }
  return undefined;
}

async function untilAbsent(
  context: AdapterContext,
  call: CallOptions,
  what: string,
  remaining: () => Promise<string | undefined>,
): Promise<void> {
  for (;;) {
    const left = await remaining();
    if (left === undefined) return;
    if (!hasTimeLeft(call.deadline, Date.now() + context.snapshot.pollIntervalMilliseconds)) {
      throw uncertain(
        'release-incomplete',
        `${left} is still present; ${what} not confirmed before the deadline`,
      );
    }
    await budget.sleep(context.snapshot.pollIntervalMilliseconds, call, what);
  }
}

/** Deletes one of the operation's own objects (checked ours first) and waits until a lookup misses it. */
async function deleteOwned(
  context: AdapterContext,
  request: ReleaseRequest,
  kind: CustomKind,
  name: string,
  call: CallOptions,
): Promise<void> {
  const { kube, snapshot } = context;
  const existing = await kube.getCustom(kind, snapshot.namespace, name, call);
  if (existing === null) return;
  const uid = existing.metadata?.uid ?? '';
  assertOwned(existing, request.owner);
  await kube.deleteCustom(kind, snapshot.namespace, name, uid, 'Background', call);
  await untilAbsent(context, call, `deletion of ${kind} ${name}`, async () => {
    const left: KubeObject | null = await kube.getCustom(kind, snapshot.namespace, name, call);
    if (left === null) return undefined;
    if (left.metadata?.uid !== uid)
      throw ownership('replaced', `${kind} ${name} was replaced during deletion`);
    return `${kind} ${name}`;
  });
}

export async function release(
  context: AdapterContext,
  request: ReleaseRequest,
  call: CallOptions,
): Promise<ReleaseReceipt> {
  const { kube, snapshot } = context;
  validateOwner(request.owner);
  const id = parseResourceId(request.resourceId);
  if (id === undefined)
    throw definitive('invalid-resource-id', `Resource ID ${request.resourceId} is malformed`);
  const names = objectNames(request.owner.operationId);
  if (id.name !== names.claim) {
    throw ownership(
      'resource-not-of-operation',
      `Resource ${request.resourceId} is not operation ${request.owner.operationId}'s`,
    );
  }
  const bounded = narrowed(call, snapshot.reconciliationTimeoutSeconds * 1000);

  const claim = await kube.getCustom('SandboxClaim', snapshot.namespace, names.claim, bounded);
  if (claim !== null) {
    // Ownership (labels and UID) decides, not the spec: a claim of ours is released even if altered.
    assertOwned(claim, request.owner, id.uid);
    const result = await kube.deleteCustom(
      'SandboxClaim',
      snapshot.namespace,
      names.claim,
      id.uid,
      'Foreground',
      bounded,
    );
    if (result === 'uid-changed')
      throw ownership('claim-replaced', `SandboxClaim ${names.claim} was replaced`);
  }
  await untilAbsent(context, bounded, `release of ${names.claim}`, () =>
    remainingChild(context, names, id.uid, bounded),
  );
  // Only now: the claim's blueprint must outlive every Pod made from it.
  await deleteOwned(context, request, 'SandboxWarmPool', names.pool, bounded);
  await deleteOwned(context, request, 'SandboxTemplate', names.template, bounded);
  return {
    outcome: 'KnownOwnedAbsent',
    resourceId: request.resourceId,
    idempotencyKey: request.idempotencyKey,
  };
}
