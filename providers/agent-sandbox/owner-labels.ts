// Ownership as stamped on every Kubernetes object the adapter makes: owner hash, fences and operation
// in labels (so the API server can select by them), the owner tuple in annotations. An object is ours
// only when every one of them equals the caller's binding: a name match alone proves nothing.
import { definitive, ownership } from '../errors.ts';
import type { OwnerBinding } from '../provider.ts';
import type { KubeObject } from './kube-object.ts';
import { ANNOTATIONS, isLabelValue, LABELS, MANAGED_BY } from './names.ts';

const HASH = /^[0-9a-f]{40}$/;
const GENERATION = /^[1-9][0-9]{0,15}$/;

/** A malformed binding is refused before anything is applied. */
export function validateOwner(owner: OwnerBinding): void {
  const problems: string[] = [];
  for (const key of ['tenantId', 'projectId', 'runId', 'environmentId'] as const) {
    if (typeof owner[key] !== 'string' || owner[key] === '' || owner[key].length > 253)
      problems.push(`${key} must be a non-empty string of at most 253 characters`);
  }
  if (typeof owner.operationId !== 'string' || !isLabelValue(owner.operationId) || owner.operationId === '')
    problems.push('operationId must be a Kubernetes label value (1-63 of A-Z a-z 0-9 . _ -)');
  if (typeof owner.ownerHash !== 'string' || !HASH.test(owner.ownerHash))
    problems.push('ownerHash must be 40 lower-case hex digits');
  for (const key of ['lifecycleGeneration', 'resourceGeneration', 'providerFence'] as const) {
    if (!Number.isSafeInteger(owner[key]) || owner[key] < 1) problems.push(`${key} must be an integer ≥ 1`);
  }
  if (problems.length > 0) throw definitive('invalid-owner', `Owner binding refused: ${problems.join('; ')}`);
}

export function ownerLabels(owner: OwnerBinding): Record<string, string> {
  return {
    [LABELS.managedBy]: MANAGED_BY,
    [LABELS.ownerHash]: owner.ownerHash,
    [LABELS.lifecycleGeneration]: String(owner.lifecycleGeneration),
    [LABELS.resourceGeneration]: String(owner.resourceGeneration),
    [LABELS.providerFence]: String(owner.providerFence),
    [LABELS.operationId]: owner.operationId,
  };
}

export function ownerAnnotations(owner: OwnerBinding): Record<string, string> {
  return {
    [ANNOTATIONS.tenantId]: owner.tenantId,
    [ANNOTATIONS.projectId]: owner.projectId,
    [ANNOTATIONS.runId]: owner.runId,
    [ANNOTATIONS.environmentId]: owner.environmentId,
  };
}

/** Exact equality selector: owner hash and provider fence, and the operation when given. */
export function ownerSelector(query: {
  ownerHash: string;
  providerFence: number;
  operationId?: string;
}): string {
  const parts = [
    `${LABELS.managedBy}=${MANAGED_BY}`,
    `${LABELS.ownerHash}=${query.ownerHash}`,
    `${LABELS.providerFence}=${query.providerFence}`,
  ];
  if (query.operationId !== undefined) parts.push(`${LABELS.operationId}=${query.operationId}`);
  return parts.join(',');
}

const describeObject = (object: KubeObject): string =>
  `${object.kind ?? 'object'} ${object.metadata?.name ?? '(unnamed)'}`;

/** Reads the binding an object carries; an object without a complete, well-formed one is not ours. */
export function ownerOf(object: KubeObject): OwnerBinding {
  const labels = object.metadata?.labels ?? {};
  const annotations = object.metadata?.annotations ?? {};
  const text = (value: string | undefined, what: string): string => {
    if (value === undefined || value === '') {
      throw ownership('owner-label-missing', `${describeObject(object)} carries no ${what}`);
    }
    return value;
  };
  const generation = (key: string): number => {
    const value = text(labels[key], key);
    if (!GENERATION.test(value))
      throw ownership('owner-label-invalid', `${describeObject(object)}: bad ${key}`);
    return Number(value);
  };
  if (labels[LABELS.managedBy] !== MANAGED_BY) {
    throw ownership('not-managed', `${describeObject(object)} is not managed by ${MANAGED_BY}`);
  }
  return {
    tenantId: text(annotations[ANNOTATIONS.tenantId], ANNOTATIONS.tenantId),
    projectId: text(annotations[ANNOTATIONS.projectId], ANNOTATIONS.projectId),
    runId: text(annotations[ANNOTATIONS.runId], ANNOTATIONS.runId),
    environmentId: text(annotations[ANNOTATIONS.environmentId], ANNOTATIONS.environmentId),
    ownerHash: text(labels[LABELS.ownerHash], LABELS.ownerHash),
    lifecycleGeneration: generation(LABELS.lifecycleGeneration),
    resourceGeneration: generation(LABELS.resourceGeneration),
    providerFence: generation(LABELS.providerFence),
    operationId: text(labels[LABELS.operationId], LABELS.operationId),
  };
}

const FIELDS = [
  'tenantId',
  'projectId',
  'runId',
  'environmentId',
  'ownerHash',
  'lifecycleGeneration',
  'resourceGeneration',
  'providerFence',
  'operationId',
] as const;

/** Throws `ownership` unless the object carries exactly `expected` (and `uid`, when known). */
export function assertOwned(object: KubeObject, expected: OwnerBinding, uid?: string): OwnerBinding {
  const actual = ownerOf(object);
  const differing = FIELDS.filter((field) => actual[field] !== expected[field]);
  if (differing.length > 0) {
    throw ownership(
      'owner-mismatch',
      `${describeObject(object)} belongs to another owner binding (${differing.join(', ')} differ)`,
    );
  }
  if (uid !== undefined && object.metadata?.uid !== uid) {
    throw ownership('uid-mismatch', `${describeObject(object)} has UID ${object.metadata?.uid ?? '(none)'}`);
  }
  return actual;
}
