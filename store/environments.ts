// Row access for Environment actors. Writers hold the Environment's advisory lock (lockEnvironment)
// for the whole transaction; the revision compare-and-swap in updateEnvironmentSnapshot is the
// second line of defence against a lost update.
import type { Queryable } from './db.ts';

export interface EnvironmentRow {
  environmentId: string;
  tenantId: string;
  projectId: string;
  runId: string;
  idempotencyKey: string;
  runSelectionHash: string;
  machineVersion: number;
  snapshot: unknown;
  revision: number;
  lifecycleState: string;
  lifecycleGeneration: number;
  quarantinedAt: Date | null;
  quarantineReason: string | null;
  createdBy: string;
  createdAt: Date;
  updatedAt: Date;
}

const columns = `environment_id AS "environmentId", tenant_id AS "tenantId", project_id AS "projectId",
  run_id AS "runId", idempotency_key AS "idempotencyKey", run_selection_hash AS "runSelectionHash",
  machine_version AS "machineVersion", snapshot, revision::int AS revision,
  lifecycle_state AS "lifecycleState", lifecycle_generation AS "lifecycleGeneration",
  quarantined_at AS "quarantinedAt", quarantine_reason AS "quarantineReason",
  created_by AS "createdBy", created_at AS "createdAt", updated_at AS "updatedAt"`;

export async function lockEnvironment(tx: Queryable, environmentId: string): Promise<void> {
  await tx.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`environment:${environmentId}`]);
}

export async function readEnvironment(q: Queryable, environmentId: string): Promise<EnvironmentRow | null> {
  const { rows } = await q.query<EnvironmentRow>(
    `SELECT ${columns} FROM environments WHERE environment_id = $1`,
    [environmentId],
  );
  return rows[0] ?? null;
}

export interface NewEnvironment {
  environmentId: string;
  tenantId: string;
  projectId: string;
  runId: string;
  idempotencyKey: string;
  runSelectionHash: string;
  machineVersion: number;
  snapshot: unknown;
  lifecycleState: string;
  lifecycleGeneration: number;
  createdBy: string;
}

/** Inserts at revision 1; returns null when the row already exists. */
export async function insertEnvironment(tx: Queryable, env: NewEnvironment): Promise<EnvironmentRow | null> {
  const { rows } = await tx.query<EnvironmentRow>(
    `INSERT INTO environments (environment_id, tenant_id, project_id, run_id, idempotency_key,
       run_selection_hash, machine_version, snapshot, revision, lifecycle_state, lifecycle_generation, created_by)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 1, $9, $10, $11)
     ON CONFLICT DO NOTHING
     RETURNING ${columns}`,
    [
      env.environmentId,
      env.tenantId,
      env.projectId,
      env.runId,
      env.idempotencyKey,
      env.runSelectionHash,
      env.machineVersion,
      JSON.stringify(env.snapshot),
      env.lifecycleState,
      env.lifecycleGeneration,
      env.createdBy,
    ],
  );
  return rows[0] ?? null;
}

export interface SnapshotUpdate {
  environmentId: string;
  expectedRevision: number;
  machineVersion: number;
  snapshot: unknown;
  lifecycleState: string;
  lifecycleGeneration: number;
}

/** Compare-and-swap on revision; returns null when another writer got there first. */
export async function updateEnvironmentSnapshot(
  tx: Queryable,
  update: SnapshotUpdate,
): Promise<EnvironmentRow | null> {
  const { rows } = await tx.query<EnvironmentRow>(
    `UPDATE environments
        SET snapshot = $3, machine_version = $4, lifecycle_state = $5, lifecycle_generation = $6,
            revision = revision + 1, updated_at = now()
      WHERE environment_id = $1 AND revision = $2
      RETURNING ${columns}`,
    [
      update.environmentId,
      update.expectedRevision,
      JSON.stringify(update.snapshot),
      update.machineVersion,
      update.lifecycleState,
      update.lifecycleGeneration,
    ],
  );
  return rows[0] ?? null;
}

export async function quarantineEnvironment(
  tx: Queryable,
  environmentId: string,
  reason: string,
): Promise<void> {
  await tx.query(
    `UPDATE environments SET quarantined_at = COALESCE(quarantined_at, now()), quarantine_reason = $2
      WHERE environment_id = $1`,
    [environmentId, reason],
  );
}
