// Ownership as the simulated provider enforces it: the stored binding must equal the caller's in
// every field, the way the Kubernetes adapter compares every ownership label and the UID.
import { definitive, ownership } from '../errors.ts';
import { sameOwner } from '../owner-binding.ts';
import type { OwnerBinding } from '../provider.ts';

export function assertOwnedBy(stored: OwnerBinding, expected: OwnerBinding, resourceId: string): void {
  if (!sameOwner(stored, expected)) {
    throw ownership(
      'owner-mismatch',
      `Simulated resource ${resourceId} belongs to operation ${stored.operationId} under another owner binding`,
    );
  }
}

const HASH = /^[0-9a-f]{40}$/;

/** A malformed binding is refused before anything is applied: the one definitive failure. */
export function validateOwner(owner: OwnerBinding): void {
  const problems: string[] = [];
  for (const key of ['tenantId', 'projectId', 'runId', 'environmentId', 'operationId'] as const) {
    if (typeof owner[key] !== 'string' || owner[key] === '')
      problems.push(`${key} must be a non-empty string`);
  }
  if (typeof owner.ownerHash !== 'string' || !HASH.test(owner.ownerHash)) {
    problems.push('ownerHash must be 40 lower-case hex digits');
  }
  for (const key of ['lifecycleGeneration', 'resourceGeneration', 'providerFence'] as const) {
    if (!Number.isSafeInteger(owner[key]) || owner[key] < 1) problems.push(`${key} must be an integer ≥ 1`);
  }
  if (problems.length > 0) throw definitive('invalid-owner', `Owner binding refused: ${problems.join('; ')}`);
}
