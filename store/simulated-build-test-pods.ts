// Rows of the simulated BuildTest runner's Pods (its migration 0004): one per operation and role.
// Insert-only plus guarded updates and soft delete. Every state change names the states it may leave,
// so two processes finishing the same Pod cannot both win, and a sealed document is never replaced.
// The JSON columns are the runner's own records; this layer stores them without interpreting them.
import type { Queryable } from './db.ts';

export type BuildTestPodRole = 'command' | 'collector';
export type BuildTestPodState = 'preparing' | 'running' | 'exited' | 'interrupted' | 'failed' | 'sealed';

export interface SimulatedBuildTestPodRow {
  operationId: string;
  role: BuildTestPodRole;
  podName: string;
  podUid: string;
  binding: unknown;
  workDir: string;
  run: unknown;
  state: BuildTestPodState;
  exitCode: number | null;
  log: unknown;
  preparation: unknown;
  receipt: unknown;
  sealedDocument: Buffer | null;
  sealedSha256: string | null;
  sealedLength: number | null;
  reason: string | null;
  message: string | null;
  createdAtMs: number;
  finishDueMs: number | null;
  finishedAtMs: number | null;
  deletedAtMs: number | null;
}

export type NewSimulatedBuildTestPod = Pick<
  SimulatedBuildTestPodRow,
  'operationId' | 'role' | 'podName' | 'podUid' | 'binding' | 'workDir' | 'run' | 'createdAtMs'
> & { state: 'preparing' | 'running' };

const columns = `operation_id AS "operationId", role, pod_name AS "podName", pod_uid AS "podUid", binding,
  work_dir AS "workDir", run, state, exit_code AS "exitCode", log, preparation, receipt,
  sealed_document AS "sealedDocument", sealed_sha256 AS "sealedSha256",
  sealed_length::float8 AS "sealedLength", reason, message, created_at_ms::float8 AS "createdAtMs",
  finish_due_ms::float8 AS "finishDueMs", finished_at_ms::float8 AS "finishedAtMs",
  deleted_at_ms::float8 AS "deletedAtMs"`;

/** PGlite answers bytea as a Uint8Array, pg as a Buffer: callers always get a Buffer. */
function normalized(row: SimulatedBuildTestPodRow): SimulatedBuildTestPodRow {
  const bytes = row.sealedDocument as Uint8Array | null;
  if (bytes === null || Buffer.isBuffer(bytes)) return row;
  return { ...row, sealedDocument: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length) };
}

/** Returns false when the operation already has a Pod of this role; the caller reads that one. */
export async function insertBuildTestPod(q: Queryable, pod: NewSimulatedBuildTestPod): Promise<boolean> {
  const { rowCount } = await q.query(
    `INSERT INTO simulated_build_test_pods (operation_id, role, pod_name, pod_uid, binding, work_dir, run,
       state, created_at_ms)
     VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7::jsonb, $8, $9)
     ON CONFLICT DO NOTHING`,
    [
      pod.operationId,
      pod.role,
      pod.podName,
      pod.podUid,
      JSON.stringify(pod.binding),
      pod.workDir,
      JSON.stringify(pod.run),
      pod.state,
      pod.createdAtMs,
    ],
  );
  return rowCount === 1;
}

/** The operation's Pod of this role; `lock` takes its row lock (inside a transaction only). */
export async function findBuildTestPod(
  q: Queryable,
  operationId: string,
  role: BuildTestPodRole,
  lock = false,
): Promise<SimulatedBuildTestPodRow | null> {
  const { rows } = await q.query<SimulatedBuildTestPodRow>(
    `SELECT ${columns} FROM simulated_build_test_pods WHERE operation_id = $1 AND role = $2
     ${lock ? 'FOR UPDATE' : ''}`,
    [operationId, role],
  );
  return rows[0] === undefined ? null : normalized(rows[0]);
}

export async function findBuildTestPodByUid(
  q: Queryable,
  podUid: string,
): Promise<SimulatedBuildTestPodRow | null> {
  const { rows } = await q.query<SimulatedBuildTestPodRow>(
    `SELECT ${columns} FROM simulated_build_test_pods WHERE pod_uid = $1`,
    [podUid],
  );
  return rows[0] === undefined ? null : normalized(rows[0]);
}

export async function listBuildTestPods(
  q: Queryable,
  operationId: string,
): Promise<SimulatedBuildTestPodRow[]> {
  const { rows } = await q.query<SimulatedBuildTestPodRow>(
    `SELECT ${columns} FROM simulated_build_test_pods WHERE operation_id = $1 ORDER BY role`,
    [operationId],
  );
  return rows.map(normalized);
}

/** A preparing command Pod whose receipt matched: the command runs until `finishDueMs`. */
export async function markBuildTestPodRunning(
  q: Queryable,
  operationId: string,
  preparation: unknown,
  finishDueMs: number,
): Promise<boolean> {
  const { rowCount } = await q.query(
    `UPDATE simulated_build_test_pods SET state = 'running', preparation = $2::jsonb, finish_due_ms = $3
     WHERE operation_id = $1 AND role = 'command' AND state = 'preparing'`,
    [operationId, JSON.stringify(preparation), finishDueMs],
  );
  return rowCount === 1;
}

export interface BuildTestPodOutcome {
  state: 'exited' | 'interrupted' | 'failed';
  exitCode?: number;
  log?: unknown;
  reason?: string;
  message?: string;
  finishedAtMs: number;
}

/** Ends a Pod that has not ended yet; returns false when another call ended it first. */
export async function finishBuildTestPod(
  q: Queryable,
  operationId: string,
  role: BuildTestPodRole,
  outcome: BuildTestPodOutcome,
): Promise<boolean> {
  const { rowCount } = await q.query(
    `UPDATE simulated_build_test_pods
     SET state = $3, exit_code = $4, log = $5::jsonb, reason = $6, message = $7, finished_at_ms = $8
     WHERE operation_id = $1 AND role = $2 AND state IN ('preparing', 'running')`,
    [
      operationId,
      role,
      outcome.state,
      outcome.exitCode ?? null,
      outcome.log === undefined ? null : JSON.stringify(outcome.log),
      outcome.reason ?? null,
      outcome.message ?? null,
      outcome.finishedAtMs,
    ],
  );
  return rowCount === 1;
}

export interface SealedCapture {
  /** Null for version 1, which seals a receipt and no document. */
  document: { bytes: Uint8Array; sha256: string; length: number } | null;
  receipt: unknown;
  finishedAtMs: number;
}

/** Seals the collector: document, reference and receipt in one guarded UPDATE, never over a seal. */
export async function sealBuildTestCapture(
  q: Queryable,
  operationId: string,
  sealed: SealedCapture,
): Promise<boolean> {
  const { rowCount } = await q.query(
    `UPDATE simulated_build_test_pods
     SET state = 'sealed', sealed_document = $2, sealed_sha256 = $3, sealed_length = $4,
       receipt = $5::jsonb, finished_at_ms = $6
     WHERE operation_id = $1 AND role = 'collector' AND state = 'running' AND sealed_document IS NULL`,
    [
      operationId,
      sealed.document?.bytes ?? null,
      sealed.document?.sha256 ?? null,
      sealed.document?.length ?? null,
      JSON.stringify(sealed.receipt),
      sealed.finishedAtMs,
    ],
  );
  return rowCount === 1;
}

/** Returns whether this call deleted it (false when it was already deleted). */
export async function markBuildTestPodDeleted(q: Queryable, podUid: string, atMs: number): Promise<boolean> {
  const { rowCount } = await q.query(
    `UPDATE simulated_build_test_pods SET deleted_at_ms = $2 WHERE pod_uid = $1 AND deleted_at_ms IS NULL`,
    [podUid, atMs],
  );
  return rowCount === 1;
}
