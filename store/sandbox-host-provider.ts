// Reads the sandbox-host provider makes of the assignment store (migration 0024): which hosts may
// take work, the attempts of one logical operation on a host, and the provision attempts of one
// lease wherever they went. The rows are written only by providers/sandbox-host/assignments.ts.
import type { Queryable } from './db.ts';

/** One stored attempt: its envelope and, once reported, the verified host-signed result. */
export interface AttemptRow {
  hostId: string;
  sequence: number;
  operationId: string;
  state: 'Issued' | 'Reported';
  envelope: unknown;
  result: unknown;
}

const COLUMNS = `host_id AS "hostId", sequence, operation_id AS "operationId", state, envelope, result`;

/** Hosts that are Enrolled now, in host id order (the order placement hashes over). */
export async function readEnrolledHostIds(q: Queryable): Promise<string[]> {
  const { rows } = await q.query<{ hostId: string }>(
    `SELECT host_id AS "hostId" FROM sandbox_hosts WHERE state = 'Enrolled' ORDER BY host_id`,
  );
  return rows.map((row) => row.hostId);
}

/** Every attempt on `hostId` whose operation id starts with `prefix`, oldest first. */
export async function readAttempts(q: Queryable, hostId: string, prefix: string): Promise<AttemptRow[]> {
  const { rows } = await q.query<AttemptRow>(
    `SELECT ${COLUMNS} FROM sandbox_host_assignments
      WHERE host_id = $1 AND left(operation_id, length($2)) = $2
      ORDER BY sequence`,
    [hostId, prefix],
  );
  return rows;
}

/** One attempt by its exact operation id. */
export async function readAttempt(
  q: Queryable,
  hostId: string,
  operationId: string,
): Promise<AttemptRow | null> {
  const { rows } = await q.query<AttemptRow>(
    `SELECT ${COLUMNS} FROM sandbox_host_assignments WHERE host_id = $1 AND operation_id = $2`,
    [hostId, operationId],
  );
  return rows[0] ?? null;
}

/** The provision attempts issued for one lease operation, on any host, oldest first. */
export async function readLeaseProvisions(q: Queryable, leaseOperationId: string): Promise<AttemptRow[]> {
  const { rows } = await q.query<AttemptRow>(
    `SELECT ${COLUMNS} FROM sandbox_host_assignments
      WHERE operation_kind = 'provision' AND lease_operation_id = $1
      ORDER BY issued_at, host_id, sequence`,
    [leaseOperationId],
  );
  return rows;
}

/**
 * Hosts no longer Enrolled that were sent a provision for this owner hash: what a listing over the
 * Enrolled hosts cannot see, so it must not answer as if it had.
 */
export async function readRetiredProvisionHosts(q: Queryable, ownerHash: string): Promise<string[]> {
  const { rows } = await q.query<{ hostId: string }>(
    `SELECT DISTINCT a.host_id AS "hostId"
       FROM sandbox_host_assignments a JOIN sandbox_hosts h ON h.host_id = a.host_id
      WHERE a.operation_kind = 'provision' AND h.state <> 'Enrolled'
        AND a.envelope->'body'->'effectiveSpec'->'document'->'owner'->>'ownerHash' = $1
      ORDER BY 1`,
    [ownerHash],
  );
  return rows.map((row) => row.hostId);
}
