import { createHash } from 'node:crypto';
import { canonicalJson } from '../lib/canonical-json.ts';
import { base32 } from '../lib/base32.ts';

/**
 * The Environment ID: a stable hash of the canonical (tenant, project, run, idempotency key) tuple,
 * so a retried registration lands on the same actor in every process without a lookup.
 */
export function environmentIdOf(tuple: {
  tenantId: string;
  projectId: string;
  runId: string;
  idempotencyKey: string;
}): string {
  const canonical = canonicalJson([
    'sandlot.environment.v1',
    tuple.tenantId,
    tuple.projectId,
    tuple.runId,
    tuple.idempotencyKey,
  ]);
  return `env_${base32(createHash('sha256').update(canonical).digest().subarray(0, 20))}`;
}

/** The provision operation of an Environment under an idempotency key: stable across retries. */
export function operationIdOf(environmentId: string, idempotencyKey: string): string {
  const digest = createHash('sha256')
    .update(canonicalJson(['sandlot.operation.v1', environmentId, idempotencyKey]))
    .digest();
  return `op_${base32(digest.subarray(0, 20))}`;
}

/** 40 hex characters: fits a Kubernetes label value with room to spare. */
export function ownerHashOf(owner: {
  tenantId: string;
  projectId: string;
  runId: string;
  environmentId: string;
}): string {
  const canonical = canonicalJson([
    'sandlot.owner.v1',
    owner.tenantId,
    owner.projectId,
    owner.runId,
    owner.environmentId,
  ]);
  return createHash('sha256').update(canonical).digest('hex').slice(0, 40);
}
