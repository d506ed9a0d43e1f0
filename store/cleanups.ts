// Late-resource cleanup rows (migration 0005): written by the Environment machine's cleanup region
// in its transitions' transactions, read by the reconciler (what to claim) and the read route.
import type { CleanupSource } from '../machines/environment-context.ts';
import type { Queryable } from './db.ts';
import type { VolumeHoldConflict } from './workspaces.ts';

export type CleanupState = 'Pending' | 'Claimed' | 'Released';

/** The source lease's volume could not be held when the late resource was recorded (migration 0027). */
export interface WorkspaceConflict extends VolumeHoldConflict {
  detectedAt: string;
}

export interface CleanupRow {
  cleanupId: string;
  environmentId: string;
  resourceId: string;
  resource: { resourceId: string; operationId: string; phase: string; placement: Record<string, string> };
  foundBy: 'late-result' | 'owner-listing';
  sourceAttemptId: string | null;
  sourceOperationId: string;
  sourceLifecycleGeneration: number;
  sourceResourceGeneration: number;
  sourceProviderFence: number;
  ownerHash: string;
  providerOptions: Record<string, unknown>;
  workspace: { volumeId: string } & Record<string, unknown>;
  state: CleanupState;
  claimToken: string | null;
  claimedAt: Date | null;
  claimExpiresAt: Date | null;
  releaseAttemptId: string | null;
  authorizingFence: { lifecycleGeneration: number; providerFence: number } | null;
  receipt: Record<string, unknown> | null;
  lastError: { code: string; message: string } | null;
  workspaceConflict: WorkspaceConflict | null;
  revision: number;
  createdAt: Date;
  updatedAt: Date;
}

const columns = `cleanup_id AS "cleanupId", environment_id AS "environmentId", resource_id AS "resourceId",
  resource, found_by AS "foundBy", source_attempt_id AS "sourceAttemptId",
  source_operation_id AS "sourceOperationId", source_lifecycle_generation AS "sourceLifecycleGeneration",
  source_resource_generation AS "sourceResourceGeneration", source_provider_fence AS "sourceProviderFence",
  owner_hash AS "ownerHash", provider_options AS "providerOptions", workspace, state,
  claim_token AS "claimToken", claimed_at AS "claimedAt", claim_expires_at AS "claimExpiresAt",
  release_attempt_id AS "releaseAttemptId", authorizing_fence AS "authorizingFence", receipt,
  last_error AS "lastError", workspace_conflict AS "workspaceConflict", revision::int AS revision, created_at AS "createdAt", updated_at AS "updatedAt"`;

export interface NewCleanup {
  cleanupId: string;
  environmentId: string;
  foundBy: CleanupRow['foundBy'];
  sourceAttemptId: string | null;
  source: CleanupSource;
  resource: CleanupRow['resource'];
  revision: number;
}

export async function insertCleanup(tx: Queryable, c: NewCleanup): Promise<void> {
  await tx.query(
    `INSERT INTO late_resource_cleanups (cleanup_id, environment_id, resource_id, resource, found_by,
       source_attempt_id, source_operation_id, source_lifecycle_generation, source_resource_generation,
       source_provider_fence, owner_hash, provider_options, workspace, state, revision)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, 'Pending', $14)`,
    [
      c.cleanupId,
      c.environmentId,
      c.resource.resourceId,
      JSON.stringify(c.resource),
      c.foundBy,
      c.sourceAttemptId,
      c.source.operationId,
      c.source.lifecycleGeneration,
      c.source.resourceGeneration,
      c.source.providerFence,
      c.source.ownerHash,
      JSON.stringify(c.source.providerOptions),
      JSON.stringify(c.source.workspace),
      c.revision,
    ],
  );
}

export async function markWorkspaceConflict(
  tx: Queryable,
  cleanupId: string,
  conflict: VolumeHoldConflict,
): Promise<void> {
  await tx.query(
    `UPDATE late_resource_cleanups
        SET workspace_conflict = $2::jsonb || jsonb_build_object('detectedAt', now())
      WHERE cleanup_id = $1`,
    [cleanupId, JSON.stringify(conflict)],
  );
}

export async function readCleanup(q: Queryable, cleanupId: string): Promise<CleanupRow | null> {
  const { rows } = await q.query<CleanupRow>(
    `SELECT ${columns} FROM late_resource_cleanups WHERE cleanup_id = $1`,
    [cleanupId],
  );
  return rows[0] ?? null;
}

export async function readCleanupsOf(q: Queryable, environmentId: string): Promise<CleanupRow[]> {
  const { rows } = await q.query<CleanupRow>(
    `SELECT ${columns} FROM late_resource_cleanups WHERE environment_id = $1 ORDER BY created_at, cleanup_id`,
    [environmentId],
  );
  return rows;
}

/** Open (Pending or Claimed) cleanups of the Environment whose Workspace conflict names the volume. */
export async function readOpenWorkspaceConflicts(
  q: Queryable,
  environmentId: string,
  volumeId: string,
): Promise<{ cleanupId: string; resourceId: string; sourceLease: number }[]> {
  const { rows } = await q.query<{ cleanupId: string; resourceId: string; sourceLease: number }>(
    `SELECT cleanup_id AS "cleanupId", resource_id AS "resourceId", source_resource_generation AS "sourceLease"
       FROM late_resource_cleanups
      WHERE environment_id = $1 AND state IN ('Pending', 'Claimed') AND workspace_conflict->>'volumeId' = $2
      ORDER BY created_at, cleanup_id`,
    [environmentId, volumeId],
  );
  return rows;
}

export async function markCleanupClaimed(
  tx: Queryable,
  c: {
    cleanupId: string;
    claimToken: string;
    claimedAt: string;
    claimExpiresAt: string;
    attemptId: string;
    authorizingFence: { lifecycleGeneration: number; providerFence: number };
    revision: number;
  },
): Promise<void> {
  await tx.query(
    `UPDATE late_resource_cleanups
        SET state = 'Claimed', claim_token = $2, claimed_at = $3, claim_expires_at = $4,
            release_attempt_id = $5, authorizing_fence = $6, revision = $7, updated_at = now()
      WHERE cleanup_id = $1 AND state IN ('Pending', 'Claimed')`,
    [
      c.cleanupId,
      c.claimToken,
      c.claimedAt,
      c.claimExpiresAt,
      c.attemptId,
      JSON.stringify(c.authorizingFence),
      c.revision,
    ],
  );
}

export async function markCleanupReleased(
  tx: Queryable,
  c: { cleanupId: string; receipt: Record<string, unknown>; revision: number },
): Promise<void> {
  await tx.query(
    `UPDATE late_resource_cleanups
        SET state = 'Released', receipt = $2, last_error = NULL, claim_expires_at = NULL,
            revision = $3, updated_at = now()
      WHERE cleanup_id = $1 AND state = 'Claimed'`,
    [c.cleanupId, JSON.stringify(c.receipt), c.revision],
  );
}

/** The release failed or is unknown: the item is available again, and the error stays visible. */
export async function markCleanupFailed(
  tx: Queryable,
  c: { cleanupId: string; error: { code: string; message: string }; revision: number },
): Promise<void> {
  await tx.query(
    `UPDATE late_resource_cleanups
        SET state = 'Pending', claim_token = NULL, claim_expires_at = NULL, last_error = $2,
            revision = $3, updated_at = now()
      WHERE cleanup_id = $1 AND state = 'Claimed'`,
    [c.cleanupId, JSON.stringify(c.error), c.revision],
  );
}

/**
 * Items a reconciler may claim now: Pending, or Claimed by a claim that has expired. A Workspace
 * conflict comes first: its late resource may be mounting a newer lease's volume.
 */
export async function claimableCleanups(
  q: Queryable,
  now: Date,
  limit: number,
  environmentId?: string,
): Promise<Pick<CleanupRow, 'cleanupId' | 'environmentId'>[]> {
  const { rows } = await q.query<Pick<CleanupRow, 'cleanupId' | 'environmentId'>>(
    `SELECT cleanup_id AS "cleanupId", environment_id AS "environmentId" FROM late_resource_cleanups
      WHERE (state = 'Pending' OR (state = 'Claimed' AND claim_expires_at <= $1))
        AND ($3::text IS NULL OR environment_id = $3)
      ORDER BY workspace_conflict IS NULL, claim_expires_at NULLS FIRST, created_at LIMIT $2`,
    [now, limit, environmentId ?? null],
  );
  return rows;
}

/** The Environment's owner fence now: its lifecycle generation and the newest provider fence issued. */
export async function readOwnerFence(
  q: Queryable,
  environmentId: string,
): Promise<{ lifecycleGeneration: number; providerFence: number } | null> {
  const { rows } = await q.query<{ lifecycleGeneration: number; providerFence: number | null }>(
    `SELECT e.lifecycle_generation AS "lifecycleGeneration",
            (SELECT max(provider_fence) FROM sandbox_leases l WHERE l.environment_id = e.environment_id)
              AS "providerFence"
       FROM environments e WHERE e.environment_id = $1`,
    [environmentId],
  );
  const row = rows[0];
  return row === undefined || row.providerFence === null
    ? null
    : { lifecycleGeneration: row.lifecycleGeneration, providerFence: row.providerFence };
}
