// Helpers the fake controllers share: condition bookkeeping with metav1.SetStatusCondition
// semantics, owner references, and agent-sandbox's name hash.
import { apiVersionOf, type ResourceType } from './resources.ts';
import { timestamp, type Condition, type KubeObject, type OwnerReference } from './types.ts';

export type ConditionInput = Omit<Condition, 'lastTransitionTime'> & { lastTransitionTime?: string };

/**
 * Sets a condition; lastTransitionTime moves only when the status changes, and then to the input's
 * own time when it has one (a condition copied from another object keeps its time), else now.
 */
export function setCondition(conditions: Condition[], input: ConditionInput): Condition[] {
  const previous = conditions.find((c) => c.type === input.type);
  const lastTransitionTime =
    previous && previous.status === input.status
      ? previous.lastTransitionTime
      : (input.lastTransitionTime ?? timestamp());
  const next: Condition = { ...input, lastTransitionTime };
  return previous ? conditions.map((c) => (c.type === input.type ? next : c)) : [...conditions, next];
}

export function removeCondition(conditions: Condition[], type: string): Condition[] {
  return conditions.filter((c) => c.type !== type);
}

export function findCondition(object: KubeObject, type: string): Condition | undefined {
  const conditions = object.status?.['conditions'];
  return Array.isArray(conditions) ? (conditions as Condition[]).find((c) => c.type === type) : undefined;
}

export function conditionsOf(object: KubeObject): Condition[] {
  const conditions = object.status?.['conditions'];
  return Array.isArray(conditions) ? (conditions as Condition[]) : [];
}

export function controllerReference(resource: ResourceType, owner: KubeObject): OwnerReference {
  return {
    apiVersion: apiVersionOf(resource),
    kind: resource.kind,
    name: owner.metadata.name,
    uid: owner.metadata.uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}

export function controllerOf(object: KubeObject): OwnerReference | undefined {
  return (object.metadata.ownerReferences ?? []).find((ref) => ref.controller === true);
}

export function isControlledBy(object: KubeObject, owner: KubeObject): boolean {
  return controllerOf(object)?.uid === owner.metadata.uid;
}

/** FNV-1a 32-bit as 8 hex characters: agent-sandbox's name hash for tracking labels. */
export function nameHash(name: string): string {
  let hash = 0x811c9dc5;
  for (const byte of Buffer.from(name, 'utf8')) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, '0');
}
