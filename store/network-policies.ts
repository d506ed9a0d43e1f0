// Embedded network-policy registry: immutable generations per project, standing in for the
// Cilium policy readback a Kubernetes deployment verifies (providers/agent-sandbox/cilium-verifier.ts).
// The admin route PUT …/network-policies/{generation} writes it; TableNetworkPolicies reads it.
import type { NetworkPolicyVerdict, NetworkPolicyVerifier } from '../actors/ports.ts';
import { canonicalJson, sha256Hex } from '../lib/canonical-json.ts';
import type { Queryable } from './db.ts';

export interface NetworkPolicyRow {
  tenantId: string;
  projectId: string;
  generation: number;
  policy: Record<string, unknown>;
  policyHash: string;
}

const columns = `tenant_id AS "tenantId", project_id AS "projectId", generation, policy, policy_hash AS "policyHash"`;

export async function putNetworkPolicy(
  q: Queryable,
  p: { tenantId: string; projectId: string; generation: number; policy: Record<string, unknown> },
): Promise<'created' | 'unchanged' | 'conflict'> {
  const hash = sha256Hex(canonicalJson(p.policy));
  const inserted = await q.query(
    `INSERT INTO network_policies (tenant_id, project_id, generation, policy, policy_hash)
     VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING RETURNING generation`,
    [p.tenantId, p.projectId, p.generation, JSON.stringify(p.policy), hash],
  );
  if (inserted.rowCount === 1) return 'created';
  const existing = await readNetworkPolicy(q, p.tenantId, p.projectId, p.generation);
  return existing?.policyHash === hash ? 'unchanged' : 'conflict';
}

export async function readNetworkPolicy(
  q: Queryable,
  tenantId: string,
  projectId: string,
  generation: number,
): Promise<NetworkPolicyRow | null> {
  const { rows } = await q.query<NetworkPolicyRow>(
    `SELECT ${columns} FROM network_policies WHERE tenant_id = $1 AND project_id = $2 AND generation = $3`,
    [tenantId, projectId, generation],
  );
  return rows[0] ?? null;
}

export async function latestNetworkPolicyGeneration(
  q: Queryable,
  tenantId: string,
  projectId: string,
): Promise<number | null> {
  const { rows } = await q.query<{ g: number | null }>(
    `SELECT max(generation) AS g FROM network_policies WHERE tenant_id = $1 AND project_id = $2`,
    [tenantId, projectId],
  );
  return rows[0]?.g ?? null;
}

/** The embedded verifier: the generation exists in the table and is the project's newest. */
export class TableNetworkPolicies implements NetworkPolicyVerifier {
  constructor(private readonly db: Queryable) {}

  async verify(
    tenantId: string,
    projectId: string,
    generation: number,
    via?: Queryable,
  ): Promise<NetworkPolicyVerdict> {
    const q = via ?? this.db;
    const policy = await readNetworkPolicy(q, tenantId, projectId, generation);
    if (policy === null)
      return { verified: false, reason: `network policy generation ${generation} does not exist` };
    const latest = await latestNetworkPolicyGeneration(q, tenantId, projectId);
    if (latest !== generation) {
      return {
        verified: false,
        reason: `network policy generation ${generation} is not current (newest is ${latest})`,
      };
    }
    return { verified: true };
  }
}
