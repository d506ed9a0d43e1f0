// Queries for sandbox-host assignments (migrations 0024 and 0025). One row per issued envelope; the caller
// allocates a sequence only while it holds the host row's lock (store/sandbox-hosts.ts `lockHost`),
// so max + 1 is the next sequence without a gap or a race. The result is written compare-and-set
// from Issued: "no row changed" means another report won, and the caller reads what it stored.
// Envelope and result documents come back as the parsed jsonb; the caller re-checks them.
import type { Queryable } from './db.ts';
import { isoColumn } from './sandbox-hosts.ts';

export type AssignmentState = 'Issued' | 'Reported';

export interface AssignmentRow {
  hostId: string;
  sequence: number;
  operationId: string;
  operationKind: string;
  envelope: unknown;
  envelopeSha256: string;
  environmentId: string;
  leaseOperationId: string;
  resourceGeneration: number;
  providerFence: number;
  state: AssignmentState;
  issuedAt: string;
  result: unknown;
  resultSha256: string | null;
  reportedAt: string | null;
}

const COLUMNS = `host_id AS "hostId", sequence, operation_id AS "operationId",
  operation_kind AS "operationKind", envelope, envelope_sha256 AS "envelopeSha256",
  environment_id AS "environmentId", lease_operation_id AS "leaseOperationId",
  resource_generation AS "resourceGeneration", provider_fence AS "providerFence", state,
  ${isoColumn('issued_at', 'issuedAt')}, result, result_sha256 AS "resultSha256", ${isoColumn('reported_at', 'reportedAt')}`;

export async function readAssignmentByOperation(
  q: Queryable,
  hostId: string,
  operationId: string,
  lock: 'none' | 'update' = 'none',
): Promise<AssignmentRow | null> {
  const { rows } = await q.query<AssignmentRow>(
    `SELECT ${COLUMNS} FROM sandbox_host_assignments WHERE host_id = $1 AND operation_id = $2
     ${lock === 'update' ? 'FOR UPDATE' : ''}`,
    [hostId, operationId],
  );
  return rows[0] ?? null;
}

/**
 * The host's highest sequence (0 before its first) and the highest fence issued for an Environment
 * by one of `fencedKinds` (the mutating kinds: a read's fence neither raises it nor is checked).
 */
export async function readHostHighWater(
  q: Queryable,
  hostId: string,
  environmentId: string,
  fencedKinds: readonly string[],
): Promise<{ lastSequence: number; highestFence: number }> {
  const { rows } = await q.query<{ lastSequence: number; highestFence: number }>(
    `SELECT COALESCE(max(sequence), 0) AS "lastSequence",
            COALESCE(max(provider_fence)
                       FILTER (WHERE environment_id = $2 AND operation_kind = ANY ($3::text[])), 0)
              AS "highestFence"
       FROM sandbox_host_assignments WHERE host_id = $1`,
    [hostId, environmentId, fencedKinds],
  );
  return rows[0] ?? { lastSequence: 0, highestFence: 0 };
}

export interface NewAssignment {
  hostId: string;
  sequence: number;
  operationId: string;
  operationKind: string;
  /** The canonical JSON text of the signed wire. */
  envelopeJson: string;
  envelopeSha256: string;
  environmentId: string;
  leaseOperationId: string;
  resourceGeneration: number;
  providerFence: number;
}

export async function insertAssignment(tx: Queryable, row: NewAssignment, issuedAt: Date): Promise<void> {
  await tx.query(
    `INSERT INTO sandbox_host_assignments
       (host_id, sequence, operation_id, operation_kind, envelope, envelope_sha256, environment_id,
        lease_operation_id, resource_generation, provider_fence, state, issued_at)
     VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7, $8, $9, $10, 'Issued', $11)`,
    [
      row.hostId,
      row.sequence,
      row.operationId,
      row.operationKind,
      row.envelopeJson,
      row.envelopeSha256,
      row.environmentId,
      row.leaseOperationId,
      row.resourceGeneration,
      row.providerFence,
      issuedAt.toISOString(),
    ],
  );
}

/**
 * What a polling host is served, in sequence order: every envelope above `after`, and any at or
 * below it still waiting for its result (a report the control plane never stored).
 */
export async function readAssignmentsToServe(
  q: Queryable,
  hostId: string,
  after: number,
  limit: number,
): Promise<AssignmentRow[]> {
  const { rows } = await q.query<AssignmentRow>(
    `SELECT ${COLUMNS} FROM sandbox_host_assignments
      WHERE host_id = $1 AND (sequence > $2 OR state = 'Issued')
      ORDER BY sequence LIMIT $3`,
    [hostId, after, limit],
  );
  return rows;
}

/** Writes the verified result once, from Issued; false when the row is not Issued (a lost race). */
export async function markReported(
  tx: Queryable,
  change: { hostId: string; sequence: number; resultJson: string; resultSha256: string },
  at: Date,
): Promise<boolean> {
  const { rowCount } = await tx.query(
    `UPDATE sandbox_host_assignments
        SET state = 'Reported', result = $3::jsonb, result_sha256 = $4, reported_at = $5
      WHERE host_id = $1 AND sequence = $2 AND state = 'Issued'`,
    [change.hostId, change.sequence, change.resultJson, change.resultSha256, at.toISOString()],
  );
  return rowCount === 1;
}
