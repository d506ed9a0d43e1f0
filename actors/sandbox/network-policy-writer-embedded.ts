// The embedded network policy owner's write side, over the append-only network_policies table that
// TableNetworkPolicies (store/network-policies.ts) verifies from: the stored policy of the source
// generation is copied row to row, and its policy_hash is the rules' digest.
import { copyNetworkPolicy } from '../../store/network-policies.ts';
import type { Queryable } from '../../store/db.ts';
import {
  generationPairProblem,
  type NetworkPolicyReapply,
  type NetworkPolicyWriter,
} from './network-policy-writer.ts';

export class TableNetworkPolicyWriter implements NetworkPolicyWriter {
  constructor(private readonly db: Queryable) {}

  async reapply(
    tenantId: string,
    projectId: string,
    fromGeneration: number,
    toGeneration: number,
    signal: AbortSignal,
  ): Promise<NetworkPolicyReapply> {
    const invalid = generationPairProblem(fromGeneration, toGeneration);
    if (invalid !== null) return { outcome: 'refused', code: 'invalid-generation', reason: invalid };
    signal.throwIfAborted();
    const copy = await copyNetworkPolicy(this.db, {
      tenantId,
      projectId,
      from: fromGeneration,
      to: toGeneration,
    });
    switch (copy.status) {
      case 'created':
      case 'unchanged':
        return { outcome: 'applied', generation: toGeneration, digest: copy.policyHash };
      case 'missing':
        return {
          outcome: 'refused',
          code: 'generation-missing',
          reason: `network policy generation ${fromGeneration} does not exist`,
        };
      case 'not-current':
        return {
          outcome: 'refused',
          code: 'generation-not-current',
          reason: `network policy generation ${fromGeneration} is not current (newest is ${copy.newest})`,
        };
      case 'conflict':
        return {
          outcome: 'refused',
          code: 'target-conflict',
          reason:
            `network policy generation ${toGeneration} already exists with other rules ` +
            `(${copy.targetHash.slice(0, 12)}, not ${copy.sourceHash.slice(0, 12)}); it is never overwritten`,
        };
    }
  }
}
