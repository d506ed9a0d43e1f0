// The owner binding as every provider compares it: exactly its own fields, in a fixed shape, so a
// caller's stray properties are never stored or compared, and equality is canonical JSON equality.
import { canonicalJson } from '../lib/canonical-json.ts';
import type { OwnerBinding } from './provider.ts';

/** Copies exactly the binding's fields. */
export function pickOwner(owner: OwnerBinding): OwnerBinding {
  return {
    tenantId: owner.tenantId,
    projectId: owner.projectId,
    runId: owner.runId,
    environmentId: owner.environmentId,
    ownerHash: owner.ownerHash,
    lifecycleGeneration: owner.lifecycleGeneration,
    resourceGeneration: owner.resourceGeneration,
    providerFence: owner.providerFence,
    operationId: owner.operationId,
  };
}

/** Equal in every field of the binding (and in nothing else). */
export function sameOwner(a: OwnerBinding, b: OwnerBinding): boolean {
  return canonicalJson(pickOwner(a)) === canonicalJson(pickOwner(b));
}
