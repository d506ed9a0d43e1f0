// The network policy owner's one write: a resume runs its new Sandbox under a new network policy
// generation, and that generation must carry exactly the rules already accepted for the one the
// Workspace was suspended under. So the writer never takes rules from a caller; it copies them from
// `fromGeneration` to `toGeneration` (= fromGeneration + 1) inside the owner.
//
// A refusal is an answer (the owner proved nothing was written), an outage is a throw (something may
// have been written): the same split as NetworkPolicyVerifier (actors/ports.ts). The embedded table
// (actors/sandbox/network-policy-writer-embedded.ts) and the Cilium writer
// (providers/agent-sandbox/cilium-writer.ts) implement it and pass one contract suite
// (test/contract/network-policy-writer.contract.ts).
import { problemClass } from '../../lib/errors.ts';
import { ActorError } from '../errors.ts';

/** Why a reapply wrote nothing, for good: a retry with the same arguments answers the same. */
export type NetworkPolicyRefusalCode =
  /** `toGeneration` is not `fromGeneration + 1`, or either is not an integer ≥ 1. */
  | 'invalid-generation'
  /** The project has no policy at `fromGeneration`. */
  | 'generation-missing'
  /** A generation newer than `fromGeneration` exists that is not this reapply's own result. */
  | 'generation-not-current'
  /** `fromGeneration` exists but is not a policy the verifier would accept, so it is not copied. */
  | 'source-unverified'
  /** `toGeneration` already exists with other rules; it is never overwritten. */
  | 'target-conflict';

export type NetworkPolicyReapply =
  /**
   * `toGeneration` now holds the source rules. `digest` is SHA-256 (hex) over the rules alone, so it
   * equals the source generation's digest; a repeated reapply answers the same value.
   */
  | { outcome: 'applied'; generation: number; digest: string }
  | { outcome: 'refused'; code: NetworkPolicyRefusalCode; reason: string };

export interface NetworkPolicyWriter {
  /**
   * Copies the accepted rules of `fromGeneration`, which must be the project's current generation,
   * to `toGeneration`. Idempotent: when `toGeneration` already holds exactly those rules (a repeat
   * after a lost answer) it answers `applied` again without writing. Throws when the owner cannot
   * answer or the answer is uncertain (timeout, cancellation, a failed read).
   */
  reapply(
    tenantId: string,
    projectId: string,
    fromGeneration: number,
    toGeneration: number,
    signal: AbortSignal,
  ): Promise<NetworkPolicyReapply>;
}

/** The refusal as the error a route answers with: 409, the refusal code as an extension. */
export class NetworkPolicyReapplyRefusedError extends problemClass(
  { code: 'network-policy-reapply-refused', status: 409, title: 'Network policy not reapplied' },
  ActorError,
) {
  constructor(
    readonly refusal: NetworkPolicyRefusalCode,
    reason: string,
  ) {
    super(reason);
  }

  override get extensions() {
    return { refusal: this.refusal };
  }
}

/** The owner did not answer, or not certainly: the new generation may or may not exist. Retry. */
export class NetworkPolicyReapplyUnavailableError extends problemClass(
  {
    code: 'network-policy-reapply-unavailable',
    status: 503,
    title: 'Network policy owner unavailable',
    retryAfterSeconds: 2,
  },
  ActorError,
) {
  constructor(generation: number, cause: unknown) {
    super(`network policy generation ${generation} cannot be written now: its owner did not answer`);
    this.cause = cause;
  }
}

/**
 * For use cases: the new generation and its digest, or the refusal or outage as an error. A caller
 * that must record an uncertain effect catches NetworkPolicyReapplyUnavailableError and retries the
 * same call, which is safe because reapply is idempotent.
 */
export async function reapplyNetworkPolicy(
  writer: NetworkPolicyWriter,
  p: { tenantId: string; projectId: string; fromGeneration: number; signal: AbortSignal },
): Promise<{ generation: number; digest: string }> {
  const toGeneration = p.fromGeneration + 1;
  let answer: NetworkPolicyReapply;
  try {
    answer = await writer.reapply(p.tenantId, p.projectId, p.fromGeneration, toGeneration, p.signal);
  } catch (error) {
    throw new NetworkPolicyReapplyUnavailableError(toGeneration, error);
  }
  if (answer.outcome === 'refused') throw new NetworkPolicyReapplyRefusedError(answer.code, answer.reason);
  return { generation: answer.generation, digest: answer.digest };
}

/** The refusal for arguments no owner could accept; both implementations check it first. */
export function generationPairProblem(fromGeneration: number, toGeneration: number): string | null {
  if (!Number.isSafeInteger(fromGeneration) || fromGeneration < 1) {
    return `source generation ${fromGeneration} is not an integer ≥ 1`;
  }
  if (toGeneration !== fromGeneration + 1) {
    return `target generation ${toGeneration} is not source generation ${fromGeneration} + 1`;
  }
  return null;
}
