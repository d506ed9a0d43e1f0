// Runtime profile mapping rows (migration 0009). Written once, under the Environment's lock, with
// INSERT … ON CONFLICT DO NOTHING, and never updated: whoever inserts second reads the first row
// back and compares it (actors/runtime-profiles/service.ts), so a mapping is never overwritten.
import type { Queryable } from './db.ts';

export interface ProfileMappingRow {
  profileId: string;
  environmentId: string;
  tenantId: string;
  projectId: string;
  runId: string;
  sourceProfileId: string;
  actor: string;
  selectionHash: string;
  sourceConfigHash: string;
  resourceId: string;
  operationId: string;
  resourceGeneration: number;
  providerFence: number;
  lifecycleGeneration: number;
  podUid: string;
  podIp: string;
  serverName: string;
  port: number;
  endpoint: string;
  configureUrl: string;
  audience: string;
  profile: Record<string, unknown>;
  profileHash: string;
  createdAt: Date;
}

export type NewProfileMapping = Omit<ProfileMappingRow, 'createdAt'>;

const columns = `profile_id AS "profileId", environment_id AS "environmentId", tenant_id AS "tenantId",
  project_id AS "projectId", run_id AS "runId", source_profile_id AS "sourceProfileId", actor,
  selection_hash AS "selectionHash", source_config_hash AS "sourceConfigHash", resource_id AS "resourceId",
  operation_id AS "operationId", resource_generation AS "resourceGeneration",
  provider_fence AS "providerFence", lifecycle_generation AS "lifecycleGeneration", pod_uid AS "podUid",
  pod_ip AS "podIp", server_name AS "serverName", port, endpoint, configure_url AS "configureUrl",
  audience, profile, profile_hash AS "profileHash", created_at AS "createdAt"`;

/** Inserts the mapping unless its ID exists; true when this call wrote it. */
export async function insertProfileMapping(tx: Queryable, m: NewProfileMapping): Promise<boolean> {
  const { rowCount } = await tx.query(
    `INSERT INTO runtime_profile_mappings (profile_id, environment_id, tenant_id, project_id, run_id,
       source_profile_id, actor, selection_hash, source_config_hash, resource_id, operation_id,
       resource_generation, provider_fence, lifecycle_generation, pod_uid, pod_ip, server_name, port,
       endpoint, configure_url, audience, profile, profile_hash)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20,
       $21, $22, $23)
     ON CONFLICT (profile_id) DO NOTHING`,
    [
      m.profileId,
      m.environmentId,
      m.tenantId,
      m.projectId,
      m.runId,
      m.sourceProfileId,
      m.actor,
      m.selectionHash,
      m.sourceConfigHash,
      m.resourceId,
      m.operationId,
      m.resourceGeneration,
      m.providerFence,
      m.lifecycleGeneration,
      m.podUid,
      m.podIp,
      m.serverName,
      m.port,
      m.endpoint,
      m.configureUrl,
      m.audience,
      JSON.stringify(m.profile),
      m.profileHash,
    ],
  );
  return rowCount === 1;
}

export async function readProfileMapping(q: Queryable, profileId: string): Promise<ProfileMappingRow | null> {
  const { rows } = await q.query<ProfileMappingRow>(
    `SELECT ${columns} FROM runtime_profile_mappings WHERE profile_id = $1`,
    [profileId],
  );
  return rows[0] ?? null;
}
