// Embedded network-policy registry: immutable generations per project, standing in for the
// Cilium policy readback a Kubernetes deployment verifies (providers/agent-sandbox/cilium-verifier.ts).
// The admin route PUT …/network-policies/{generation} writes it; TableNetworkPolicies reads it.
import type { LeaseProviderRecord, NetworkPolicyVerdict, NetworkPolicyVerifier } from '../actors/ports.ts';
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

  /** The table is one, in no cluster: the lease records nothing it is read by. */
  async verify(
    tenantId: string,
    projectId: string,
    generation: number,
    _lease?: LeaseProviderRecord,
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

/** What a reapply found; the actor turns it into the NetworkPolicyWriter answer. */
export type NetworkPolicyCopy =
  | { status: 'created' | 'unchanged'; policyHash: string }
  | { status: 'missing' }
  | { status: 'not-current'; newest: number }
  | { status: 'conflict'; sourceHash: string; targetHash: string };

/**
 * Copies generation `from`'s policy to `to` when `from` is the project's newest generation, as one
 * INSERT … SELECT, so the rules written are the stored ones and never a caller's. The table stays
 * append-only: an existing `to` is only compared, never replaced. A concurrent write can make the
 * INSERT find nothing to copy while the follow-up reads still see `from` as newest; the copy is then
 * tried again (a few times, then the database is treated as not answering).
 */
export async function copyNetworkPolicy(
  q: Queryable,
  p: { tenantId: string; projectId: string; from: number; to: number },
): Promise<NetworkPolicyCopy> {
  for (let round = 0; round < 3; round += 1) {
    const inserted = await q.query<{ policyHash: string }>(
      `INSERT INTO network_policies (tenant_id, project_id, generation, policy, policy_hash)
       SELECT s.tenant_id, s.project_id, $4, s.policy, s.policy_hash
         FROM network_policies s
        WHERE s.tenant_id = $1 AND s.project_id = $2 AND s.generation = $3
          AND s.generation = (SELECT max(generation) FROM network_policies
                               WHERE tenant_id = $1 AND project_id = $2)
       ON CONFLICT DO NOTHING RETURNING policy_hash AS "policyHash"`,
      [p.tenantId, p.projectId, p.from, p.to],
    );
    if (inserted.rows[0] !== undefined) return { status: 'created', policyHash: inserted.rows[0].policyHash };
    const source = await readNetworkPolicy(q, p.tenantId, p.projectId, p.from);
    if (source === null) return { status: 'missing' };
    const target = await readNetworkPolicy(q, p.tenantId, p.projectId, p.to);
    const newest = (await latestNetworkPolicyGeneration(q, p.tenantId, p.projectId)) ?? p.from;
    // Even an exact earlier copy is no longer an answer once a later generation replaced it.
    if (newest > p.to) return { status: 'not-current', newest };
    if (target !== null) {
      return target.policyHash === source.policyHash
        ? { status: 'unchanged', policyHash: target.policyHash }
        : { status: 'conflict', sourceHash: source.policyHash, targetHash: target.policyHash };
    }
    if (newest !== p.from) return { status: 'not-current', newest };
  }
  throw new Error('network policy copy did not settle after three rounds of concurrent writes');
}
