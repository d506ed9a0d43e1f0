// listOwned and describe: exact reads. listOwned label-selects claims by exact owner hash and provider
// fence (and operation), in the namespace the lease's snapshot names, then reads each back through the
// same validation as describe. Anything wrong (an error, a page, an object that does not match the
// selector it was listed under) throws: the caller must never mistake a partial read for "nothing".
import { definitive, ownership } from '../errors.ts';
import type {
  CallOptions,
  DescribeResult,
  InventoryEntry,
  OwnedQuery,
  ProviderResource,
  ResourceRef,
} from '../provider.ts';
import { isLabelValue, LABELS, MANAGED_BY, objectNames, parseResourceId, resourceIdOf } from './names.ts';
import { awaitObserved, type AdapterContext } from './observe.ts';
import { ownerOf, ownerSelector, validateOwner } from './owner-labels.ts';

function validateQuery(query: OwnedQuery['owner']): void {
  const problems: string[] = [];
  if (typeof query.ownerHash !== 'string' || !/^[0-9a-f]{40}$/.test(query.ownerHash)) {
    problems.push('ownerHash must be 40 lower-case hex digits');
  }
  if (!Number.isSafeInteger(query.providerFence) || query.providerFence < 1) {
    problems.push('providerFence must be an integer ≥ 1');
  }
  if (query.operationId !== undefined && (query.operationId === '' || !isLabelValue(query.operationId))) {
    problems.push('operationId must be a Kubernetes label value');
  }
  if (problems.length > 0) throw definitive('invalid-query', `listOwned refused: ${problems.join('; ')}`);
}

export async function listOwned(
  context: AdapterContext,
  query: OwnedQuery,
  call: CallOptions,
): Promise<ProviderResource[]> {
  validateQuery(query.owner);
  const { kube, snapshot } = context;
  const claims = await kube.listCustom('SandboxClaim', snapshot.namespace, ownerSelector(query.owner), call);
  const resources: ProviderResource[] = [];
  for (const claim of claims) {
    const owner = ownerOf(claim);
    if (
      owner.ownerHash !== query.owner.ownerHash ||
      owner.providerFence !== query.owner.providerFence ||
      (query.owner.operationId !== undefined && owner.operationId !== query.owner.operationId)
    ) {
      throw ownership(
        'selector-mismatch',
        `SandboxClaim ${claim.metadata?.name ?? ''} does not match its selector`,
      );
    }
    // Read again by exact name: a claim deleted since the list is simply no longer owned.
    const observed = await awaitObserved(context, owner, objectNames(owner.operationId), call);
    if (observed.state === 'observed') resources.push(observed.resource);
  }
  return resources.sort((a, b) => (a.resourceId < b.resourceId ? -1 : a.resourceId > b.resourceId ? 1 : 0));
}

/**
 * Every SandboxClaim Sandlot manages in the snapshot's namespace, whoever owns it (the audit's orphan
 * check). A claim whose owner labels are incomplete throws: the audit must not skip what it cannot read.
 */
export async function inventory(context: AdapterContext, call: CallOptions): Promise<InventoryEntry[]> {
  const { kube, snapshot } = context;
  const claims = await kube.listCustom(
    'SandboxClaim',
    snapshot.namespace,
    `${LABELS.managedBy}=${MANAGED_BY}`,
    call,
  );
  return claims.map((claim) => ({
    resourceId: resourceIdOf(claim.metadata?.name ?? '', claim.metadata?.uid ?? ''),
    owner: ownerOf(claim),
  }));
}

export async function describe(
  context: AdapterContext,
  ref: ResourceRef,
  call: CallOptions,
): Promise<DescribeResult> {
  validateOwner(ref.owner);
  const id = parseResourceId(ref.resourceId);
  if (id === undefined) throw definitive('invalid-resource-id', `Resource ID ${ref.resourceId} is malformed`);
  const names = objectNames(ref.owner.operationId);
  if (id.name !== names.claim) {
    throw ownership(
      'resource-not-of-operation',
      `Resource ${ref.resourceId} is not operation ${ref.owner.operationId}'s`,
    );
  }
  const observed = await awaitObserved(context, ref.owner, names, call, id.uid);
  return observed.state === 'absent' ? { present: false } : { present: true, resource: observed.resource };
}
