import { createHash } from 'node:crypto';
import { canonicalJson } from '../store/canonical-json.ts';

// Lower-case RFC 4648 base32 without padding: URL-safe and case-insensitive.
const alphabet = 'abcdefghijklmnopqrstuvwxyz234567';

function base32(bytes: Uint8Array): string {
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += alphabet[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += alphabet[(value << (5 - bits)) & 31];
  return out;
}

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
