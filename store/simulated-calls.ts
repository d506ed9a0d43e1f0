// The simulated provider's call log (its migration 0003): one insert per provider call, read by
// `sandlot audit` to find calls no attempt was written before.
import type { Queryable } from './db.ts';

export interface SimulatedCall {
  operation: string;
  /** The operation the call names; null for a listOwned by owner hash and fence alone. */
  operationId: string | null;
  ownerHash: string | null;
  providerFence: number | null;
}

export async function insertSimulatedCall(q: Queryable, call: SimulatedCall): Promise<void> {
  await q.query(
    `INSERT INTO simulated_provider_calls (operation, operation_id, owner_hash, provider_fence)
     VALUES ($1, $2, $3, $4)`,
    [call.operation, call.operationId, call.ownerHash, call.providerFence],
  );
}
