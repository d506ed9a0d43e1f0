// BuildTest operations (migration 0014): the intent, inserted once by the transition that reserves
// the operation, and what each step found, written by the transitions that settle them. A terminal
// row keeps its status, Pod references and evidence: every UPDATE but the acknowledgment's and the
// cleanup's is guarded by a non-terminal state, and a piece of evidence, once set, is never replaced.
import type { Queryable } from './db.ts';

export interface BuildTestOperationRow {
  environmentId: string;
  operationId: string;
  checkpoint: Record<string, unknown>;
  acceptedCommand: Record<string, unknown>;
  acceptedCommandHash: string;
  requestFingerprint: string;
  expectedBinding: Record<string, unknown>;
  profileHash: string;
  leaseOperationId: string;
  state: 'Running' | 'ReconciliationRequired' | 'Succeeded' | 'Failed' | 'Interrupted';
  step: 'command' | 'collect' | 'cleanup' | null;
  commandPod: Record<string, unknown> | null;
  collectorPod: Record<string, unknown> | null;
  preparation: Record<string, unknown> | null;
  exitCode: number | null;
  commandLog: Record<string, unknown> | null;
  collectorReceipt: Record<string, unknown> | null;
  capture: { sha256: string; length: number } | null;
  error: Record<string, unknown> | null;
  acknowledgment: Record<string, unknown> | null;
  acknowledgedAt: string | null;
  cleanedAt: string | null;
  createdAt: string;
  updatedAt: string;
}

// Timestamps as PostgreSQL writes them, at microsecond precision, in UTC: the JSON answer and the
// row agree after a restart (a JavaScript Date would drop the microseconds).
const instant = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

const COLUMNS = `environment_id AS "environmentId", operation_id AS "operationId", checkpoint,
  accepted_command AS "acceptedCommand", accepted_command_hash AS "acceptedCommandHash",
  request_fingerprint AS "requestFingerprint", expected_binding AS "expectedBinding",
  profile_hash AS "profileHash", lease_operation_id AS "leaseOperationId", state, step,
  command_pod AS "commandPod", collector_pod AS "collectorPod", preparation, exit_code AS "exitCode",
  command_log AS "commandLog", collector_receipt AS "collectorReceipt", capture, error, acknowledgment,
  ${instant('acknowledged_at')} AS "acknowledgedAt", ${instant('cleaned_at')} AS "cleanedAt",
  ${instant('created_at')} AS "createdAt", ${instant('updated_at')} AS "updatedAt"`;

/** The intent a reservation writes: the row's first columns. */
export type BuildTestReservation = Pick<
  BuildTestOperationRow,
  | 'environmentId'
  | 'operationId'
  | 'checkpoint'
  | 'acceptedCommand'
  | 'acceptedCommandHash'
  | 'requestFingerprint'
  | 'expectedBinding'
  | 'profileHash'
  | 'leaseOperationId'
>;

/** The intent, once: the machine reserves an operation ID once, so a second insert is a bug. */
export async function insertBuildTestOperation(tx: Queryable, r: BuildTestReservation): Promise<void> {
  await tx.query(
    `INSERT INTO build_test_operations (environment_id, operation_id, checkpoint, accepted_command,
       accepted_command_hash, request_fingerprint, expected_binding, profile_hash, lease_operation_id,
       state, step)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'Running', 'command')`,
    [
      r.environmentId,
      r.operationId,
      r.checkpoint,
      r.acceptedCommand,
      r.acceptedCommandHash,
      r.requestFingerprint,
      r.expectedBinding,
      r.profileHash,
      r.leaseOperationId,
    ],
  );
}

export async function readBuildTestOperation(
  q: Queryable,
  environmentId: string,
  operationId: string,
): Promise<BuildTestOperationRow | null> {
  const { rows } = await q.query<BuildTestOperationRow>(
    `SELECT ${COLUMNS} FROM build_test_operations WHERE environment_id = $1 AND operation_id = $2`,
    [environmentId, operationId],
  );
  return rows[0] ?? null;
}

/** By Core's operation ID alone (unique): which Environment holds it, if any. */
export async function readBuildTestOperationById(
  q: Queryable,
  operationId: string,
): Promise<BuildTestOperationRow | null> {
  const { rows } = await q.query<BuildTestOperationRow>(
    `SELECT ${COLUMNS} FROM build_test_operations WHERE operation_id = $1`,
    [operationId],
  );
  return rows[0] ?? null;
}

/** The Environment's operations, newest first, at most `limit` (the console's list; the primary key's prefix). */
export async function listBuildTestOperations(
  q: Queryable,
  environmentId: string,
  limit: number,
): Promise<BuildTestOperationRow[]> {
  const { rows } = await q.query<BuildTestOperationRow>(
    `SELECT ${COLUMNS} FROM build_test_operations
      WHERE environment_id = $1 ORDER BY created_at DESC, operation_id DESC LIMIT $2`,
    [environmentId, limit],
  );
  return rows;
}

/** An operation of this lease that is not terminal yet: its command may still write the Workspace. */
export async function readRunningBuildTestOperation(
  q: Queryable,
  environmentId: string,
  leaseOperationId: string,
): Promise<BuildTestOperationRow | null> {
  const { rows } = await q.query<BuildTestOperationRow>(
    `SELECT ${COLUMNS} FROM build_test_operations
      WHERE environment_id = $1 AND lease_operation_id = $2 AND state IN ('Running', 'ReconciliationRequired')
      ORDER BY created_at LIMIT 1`,
    [environmentId, leaseOperationId],
  );
  return rows[0] ?? null;
}

/** Evidence a step may set; each column is set once and never replaced (COALESCE keeps the first). */
export interface BuildTestEvidence {
  commandPod?: Record<string, unknown> | undefined;
  collectorPod?: Record<string, unknown> | undefined;
  preparation?: Record<string, unknown> | undefined;
  exitCode?: number | undefined;
  commandLog?: Record<string, unknown> | undefined;
  collectorReceipt?: Record<string, unknown> | undefined;
  capture?: { sha256: string; length: number } | undefined;
  error?: Record<string, unknown> | undefined;
}

const TERMINAL = `('Succeeded', 'Failed', 'Interrupted')`;

/**
 * The operation's new state and the evidence of the step that got it there. A terminal row is
 * changed only by `cleaned` (its cleanup time); its state, step and evidence stay.
 */
export async function recordBuildTestStep(
  tx: Queryable,
  environmentId: string,
  operationId: string,
  state: BuildTestOperationRow['state'] | null,
  step: BuildTestOperationRow['step'],
  evidence: BuildTestEvidence,
): Promise<void> {
  await tx.query(
    `UPDATE build_test_operations SET
       state = COALESCE($3, state), step = $4,
       command_pod = COALESCE(command_pod, $5), collector_pod = COALESCE(collector_pod, $6),
       preparation = COALESCE(preparation, $7), exit_code = COALESCE(exit_code, $8),
       command_log = COALESCE(command_log, $9), collector_receipt = COALESCE(collector_receipt, $10),
       capture = COALESCE(capture, $11), error = COALESCE(error, $12),
       updated_at = date_trunc('microseconds', clock_timestamp())
     WHERE environment_id = $1 AND operation_id = $2 AND state NOT IN ${TERMINAL}`,
    [
      environmentId,
      operationId,
      state,
      step,
      evidence.commandPod ?? null,
      evidence.collectorPod ?? null,
      evidence.preparation ?? null,
      evidence.exitCode ?? null,
      evidence.commandLog ?? null,
      evidence.collectorReceipt ?? null,
      evidence.capture ?? null,
      evidence.error ?? null,
    ],
  );
}

/** The one verified acknowledgment of a sealed capture: saved once, identical repeats change nothing. */
export async function saveBuildTestAcknowledgment(
  tx: Queryable,
  environmentId: string,
  operationId: string,
  acknowledgment: Record<string, unknown>,
): Promise<void> {
  await tx.query(
    `UPDATE build_test_operations SET acknowledgment = $3, step = 'cleanup',
       acknowledged_at = date_trunc('microseconds', clock_timestamp()),
       updated_at = date_trunc('microseconds', clock_timestamp())
     WHERE environment_id = $1 AND operation_id = $2 AND state = 'Succeeded' AND acknowledgment IS NULL`,
    [environmentId, operationId, acknowledgment],
  );
}

/** The operation's exact Pods are gone: its row keeps its outcome. */
export async function markBuildTestCleaned(
  tx: Queryable,
  environmentId: string,
  operationId: string,
): Promise<void> {
  await tx.query(
    `UPDATE build_test_operations SET step = NULL,
       cleaned_at = COALESCE(cleaned_at, date_trunc('microseconds', clock_timestamp())),
       updated_at = date_trunc('microseconds', clock_timestamp())
     WHERE environment_id = $1 AND operation_id = $2`,
    [environmentId, operationId],
  );
}

/** Reopened (reconcile): the same step, a new attempt; a terminal row only for its cleanup. */
export async function markBuildTestStep(
  tx: Queryable,
  environmentId: string,
  operationId: string,
  state: BuildTestOperationRow['state'],
  step: BuildTestOperationRow['step'],
): Promise<void> {
  await tx.query(
    `UPDATE build_test_operations SET state = $3, step = $4,
       updated_at = date_trunc('microseconds', clock_timestamp())
     WHERE environment_id = $1 AND operation_id = $2 AND (state NOT IN ${TERMINAL} OR state = $3)`,
    [environmentId, operationId, state, step],
  );
}

/**
 * Operations with a step left to do and no attempt open for it, untouched since `before`: the
 * reconciler reopens the step (the machine ignores one whose attempt is still open).
 */
export async function buildTestsToReopen(
  q: Queryable,
  before: Date,
  limit: number,
): Promise<{ environmentId: string; operationId: string }[]> {
  const { rows } = await q.query<{ environmentId: string; operationId: string }>(
    `SELECT o.environment_id AS "environmentId", o.operation_id AS "operationId"
       FROM build_test_operations o
      WHERE o.step IS NOT NULL AND o.cleaned_at IS NULL AND o.updated_at < $1
        AND (o.state IN ('Running', 'ReconciliationRequired') OR o.acknowledgment IS NOT NULL)
        AND NOT EXISTS (SELECT 1 FROM provider_attempts a
                         WHERE a.operation_id = o.operation_id AND a.kind = 'buildTest'
                           AND a.state IN ('Pending', 'Dispatched'))
      ORDER BY o.updated_at LIMIT $2`,
    [before, limit],
  );
  return rows;
}
