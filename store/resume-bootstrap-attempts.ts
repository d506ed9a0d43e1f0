// Resume bootstrap attempts (migration 0022): the rows actors/resume/bootstrap.ts writes under the
// Environment's owner lock. The request is inserted once and never changes; a delivery is counted
// before it runs; an outcome moves the state only from the state the caller read (compare-and-set),
// so two deliveries racing cannot both settle an attempt, and a saved receipt is never replaced.
import type { Queryable } from './db.ts';

export const attemptStates = ['Delivering', 'Activated', 'Refused', 'StateLost'] as const;
export type AttemptState = (typeof attemptStates)[number];

export interface BootstrapAttemptRow {
  attemptId: string;
  environmentId: string;
  resumeOperationId: string;
  attemptSeq: number;
  registrationId: string;
  registrationGeneration: number;
  leaseOperationId: string;
  request: Record<string, unknown>;
  requestSha256: string;
  state: AttemptState;
  deliveries: number;
  evidence: Record<string, unknown> | null;
  receipt: Record<string, unknown> | null;
  receiptSha256: string | null;
  loss: Record<string, unknown> | null;
}

const columns = `attempt_id AS "attemptId", environment_id AS "environmentId",
  resume_operation_id AS "resumeOperationId", attempt_seq AS "attemptSeq",
  registration_id AS "registrationId", registration_generation AS "registrationGeneration",
  lease_operation_id AS "leaseOperationId", request, request_sha256 AS "requestSha256", state,
  deliveries, evidence, receipt, receipt_sha256 AS "receiptSha256", loss`;

/** Every attempt of one resume operation, in order. */
export async function readAttempts(q: Queryable, resumeOperationId: string): Promise<BootstrapAttemptRow[]> {
  const { rows } = await q.query<BootstrapAttemptRow>(
    `SELECT ${columns} FROM resume_bootstrap_attempts WHERE resume_operation_id = $1 ORDER BY attempt_seq`,
    [resumeOperationId],
  );
  return rows;
}

export async function readAttempt(q: Queryable, attemptId: string): Promise<BootstrapAttemptRow | null> {
  const { rows } = await q.query<BootstrapAttemptRow>(
    `SELECT ${columns} FROM resume_bootstrap_attempts WHERE attempt_id = $1`,
    [attemptId],
  );
  return rows[0] ?? null;
}

/** How many attempts of the Environment have no outcome yet (each blocks the lifecycle advance). */
export async function countUnresolvedAttempts(q: Queryable, environmentId: string): Promise<number> {
  const { rows } = await q.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM resume_bootstrap_attempts
      WHERE environment_id = $1 AND state = 'Delivering'`,
    [environmentId],
  );
  return rows[0]?.n ?? 0;
}

export type NewAttempt = Pick<
  BootstrapAttemptRow,
  | 'attemptId'
  | 'environmentId'
  | 'resumeOperationId'
  | 'attemptSeq'
  | 'registrationId'
  | 'registrationGeneration'
  | 'leaseOperationId'
  | 'request'
  | 'requestSha256'
>;

export async function insertAttempt(tx: Queryable, attempt: NewAttempt): Promise<void> {
  await tx.query(
    `INSERT INTO resume_bootstrap_attempts (attempt_id, environment_id, resume_operation_id,
       attempt_seq, registration_id, registration_generation, lease_operation_id, request,
       request_sha256, state, deliveries)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'Delivering', 0)`,
    [
      attempt.attemptId,
      attempt.environmentId,
      attempt.resumeOperationId,
      attempt.attemptSeq,
      attempt.registrationId,
      attempt.registrationGeneration,
      attempt.leaseOperationId,
      JSON.stringify(attempt.request),
      attempt.requestSha256,
    ],
  );
}

/** Counts one delivery before it runs; false when the attempt is no longer Delivering. */
export async function countDelivery(tx: Queryable, attemptId: string): Promise<boolean> {
  const { rowCount } = await tx.query(
    `UPDATE resume_bootstrap_attempts SET deliveries = deliveries + 1
      WHERE attempt_id = $1 AND state = 'Delivering'`,
    [attemptId],
  );
  return rowCount === 1;
}

export type AttemptOutcome =
  | { state: 'Delivering'; evidence: Record<string, unknown> }
  | { state: 'Refused'; evidence: Record<string, unknown> }
  | { state: 'Activated'; receipt: Record<string, unknown>; receiptSha256: string }
  | { state: 'StateLost'; loss: Record<string, unknown> };

/**
 * Records an outcome, only from `from`: evidence of an uncertain delivery (the attempt stays
 * Delivering), a refusal, the receipt, or (from Activated) the state loss. False when another
 * writer moved the attempt first.
 */
export async function settleAttempt(
  tx: Queryable,
  attemptId: string,
  from: AttemptState,
  outcome: AttemptOutcome,
): Promise<boolean> {
  const settled = outcome.state === 'Delivering' ? null : 'now()';
  const { rowCount } = await tx.query(
    `UPDATE resume_bootstrap_attempts
        SET state = $3,
            evidence = COALESCE($4::jsonb, evidence),
            receipt = COALESCE($5::jsonb, receipt),
            receipt_sha256 = COALESCE($6, receipt_sha256),
            loss = COALESCE($7::jsonb, loss),
            settled_at = ${settled ?? 'settled_at'}
      WHERE attempt_id = $1 AND state = $2`,
    [
      attemptId,
      from,
      outcome.state,
      'evidence' in outcome ? JSON.stringify(outcome.evidence) : null,
      'receipt' in outcome ? JSON.stringify(outcome.receipt) : null,
      'receiptSha256' in outcome ? outcome.receiptSha256 : null,
      'loss' in outcome ? JSON.stringify(outcome.loss) : null,
    ],
  );
  return rowCount === 1;
}
