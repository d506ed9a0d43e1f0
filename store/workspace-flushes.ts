// Trusted Workspace flushes (migration 0018): the rows the workspace region's transitions write.
// The terms are inserted once; a delivery's outcome moves the state only while the flush is open; a
// verified receipt is written once, together with the volume transition it authorizes.
import type { FlushTerms } from '../machines/environment-events.ts';
import type { FlushState } from '../machines/environment-context.ts';
import type { Queryable } from './db.ts';

export interface FlushRow {
  flushOperationId: string;
  environmentId: string;
  volumeId: string;
  coreOperationId: string;
  stepId: string;
  leaseOperationId: string;
  resourceGeneration: number;
  providerFence: number;
  transitionRevision: number;
  dataGeneration: number;
  state: FlushState;
  deliveries: number;
  evidence: Record<string, unknown> | null;
  receipt: Record<string, unknown> | null;
  receiptSha256: string | null;
  reservedAt: string;
  settledAt: string | null;
}

const columns = `flush_operation_id AS "flushOperationId", environment_id AS "environmentId",
  volume_id AS "volumeId", core_operation_id AS "coreOperationId", step_id AS "stepId",
  lease_operation_id AS "leaseOperationId", resource_generation AS "resourceGeneration",
  provider_fence AS "providerFence", transition_revision::int AS "transitionRevision",
  data_generation AS "dataGeneration", state, deliveries, evidence, receipt,
  receipt_sha256 AS "receiptSha256",
  to_char(reserved_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS "reservedAt",
  to_char(settled_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS "settledAt"`;

export async function insertFlush(
  tx: Queryable,
  environmentId: string,
  flushOperationId: string,
  terms: FlushTerms,
): Promise<void> {
  await tx.query(
    `INSERT INTO workspace_flushes (flush_operation_id, environment_id, volume_id, core_operation_id,
       step_id, lease_operation_id, resource_generation, provider_fence, transition_revision,
       data_generation, state, deliveries)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'Reserved', 1)`,
    [
      flushOperationId,
      environmentId,
      terms.volumeId,
      terms.coreOperationId,
      terms.stepId,
      terms.lease.operationId,
      terms.lease.resourceGeneration,
      terms.lease.providerFence,
      terms.transitionRevision,
      terms.dataGeneration,
    ],
  );
}

export async function readFlush(q: Queryable, flushOperationId: string): Promise<FlushRow | null> {
  const { rows } = await q.query<FlushRow>(
    `SELECT ${columns} FROM workspace_flushes WHERE flush_operation_id = $1`,
    [flushOperationId],
  );
  return rows[0] ?? null;
}

/** The Verified flush of exactly this volume transition, if there is one. */
export async function readVerifiedFlush(
  q: Queryable,
  volumeId: string,
  transitionRevision: number,
): Promise<FlushRow | null> {
  const { rows } = await q.query<FlushRow>(
    `SELECT ${columns} FROM workspace_flushes
      WHERE volume_id = $1 AND transition_revision = $2 AND state = 'Verified'`,
    [volumeId, transitionRevision],
  );
  return rows[0] ?? null;
}

/**
 * The flush of this volume that is open (Reserved, or Uncertain after a delivery that settled
 * nothing), or that was verified on this lease: either way the Workspace is not this lease's to
 * write any more. Null when neither exists.
 */
export async function readFlushHoldingVolume(
  q: Queryable,
  volumeId: string,
  leaseOperationId: string,
): Promise<FlushRow | null> {
  const { rows } = await q.query<FlushRow>(
    `SELECT ${columns} FROM workspace_flushes
      WHERE volume_id = $1
        AND (state IN ('Reserved', 'Uncertain') OR (state = 'Verified' AND lease_operation_id = $2))
      ORDER BY reserved_at DESC LIMIT 1`,
    [volumeId, leaseOperationId],
  );
  return rows[0] ?? null;
}

/**
 * A delivery journaled, or its outcome saved: only while the flush is open (a closed flush, and
 * above all a saved receipt, is never replaced). Returns whether the row moved.
 */
export async function recordFlushDelivery(
  tx: Queryable,
  environmentId: string,
  record: {
    flushOperationId: string;
    state: FlushState;
    deliveries: number;
    evidence: Record<string, unknown> | null;
    receipt: Record<string, unknown> | null;
    receiptSha256: string | null;
  },
): Promise<boolean> {
  const settled = record.state === 'Verified' || record.state === 'Refused';
  const { rowCount } = await tx.query(
    `UPDATE workspace_flushes
        SET state = $3, deliveries = $4, evidence = COALESCE($5::jsonb, evidence),
            receipt = $6::jsonb, receipt_sha256 = $7, settled_at = CASE WHEN $8 THEN now() ELSE NULL END
      WHERE flush_operation_id = $1 AND environment_id = $2 AND state IN ('Reserved', 'Uncertain')`,
    [
      record.flushOperationId,
      environmentId,
      record.state,
      record.deliveries,
      record.evidence === null ? null : JSON.stringify(record.evidence),
      record.receipt === null ? null : JSON.stringify(record.receipt),
      record.receiptSha256,
      settled,
    ],
  );
  return rowCount === 1;
}

/**
 * The volume transition a verified flush authorizes: from exactly the reserved revision and data
 * generation, still Attached, to the next of both. Returns whether it moved.
 */
export async function advanceFlushedVolume(
  tx: Queryable,
  advance: { volumeId: string; environmentId: string; fromRevision: number; fromDataGeneration: number },
): Promise<boolean> {
  const { rowCount } = await tx.query(
    `UPDATE workspace_volumes
        SET data_generation = data_generation + 1, revision = revision + 1, updated_at = now()
      WHERE volume_id = $1 AND environment_id = $2 AND revision = $3 AND data_generation = $4
        AND state = 'Attached'`,
    [advance.volumeId, advance.environmentId, advance.fromRevision, advance.fromDataGeneration],
  );
  return rowCount === 1;
}

/**
 * The data generations this volume's Verified flushes started from, ascending: each moved the volume
 * from that generation to the next. The storage check (actors/workspace/storage.ts) accepts an older
 * annotated data generation only when these chain it exactly to the volume's current one.
 */
export async function readVerifiedFlushGenerations(q: Queryable, volumeId: string): Promise<number[]> {
  const { rows } = await q.query<{ dataGeneration: number }>(
    `SELECT DISTINCT data_generation AS "dataGeneration" FROM workspace_flushes
      WHERE volume_id = $1 AND state = 'Verified' ORDER BY 1`,
    [volumeId],
  );
  return rows.map((r) => r.dataGeneration);
}

/** Every Verified flush a lease made of one volume, in transition order. */
export async function readVerifiedFlushesOfLease(
  q: Queryable,
  leaseOperationId: string,
  volumeId: string,
): Promise<FlushRow[]> {
  const { rows } = await q.query<FlushRow>(
    `SELECT ${columns} FROM workspace_flushes
      WHERE lease_operation_id = $1 AND volume_id = $2 AND state = 'Verified'
      ORDER BY transition_revision`,
    [leaseOperationId, volumeId],
  );
  return rows;
}

/** The latest Verified flush of a lease (its highest transition revision), if it has one. */
export async function readLatestVerifiedFlushOfLease(
  q: Queryable,
  leaseOperationId: string,
): Promise<FlushRow | null> {
  const { rows } = await q.query<FlushRow>(
    `SELECT ${columns} FROM workspace_flushes
      WHERE lease_operation_id = $1 AND state = 'Verified'
      ORDER BY transition_revision DESC LIMIT 1`,
    [leaseOperationId],
  );
  return rows[0] ?? null;
}

/** The Environment's flushes, newest first, at most `limit` (workspace_flushes_by_environment). */
export async function listFlushes(q: Queryable, environmentId: string, limit: number): Promise<FlushRow[]> {
  const { rows } = await q.query<FlushRow>(
    `SELECT ${columns} FROM workspace_flushes
      WHERE environment_id = $1 ORDER BY reserved_at DESC, flush_operation_id DESC LIMIT $2`,
    [environmentId, limit],
  );
  return rows;
}
