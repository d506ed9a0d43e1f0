// Durable provider attempts: written Pending in the transition that declared the effect, moved to
// Dispatched just before the call, resolved with the exact result. Pending, Dispatched and Unknown
// are unresolved and block Environment release.
import type { Queryable } from './db.ts';

export type AttemptState = 'Pending' | 'Dispatched' | 'Succeeded' | 'Failed' | 'Unknown' | 'Superseded';
export const unresolvedStates: readonly AttemptState[] = ['Pending', 'Dispatched', 'Unknown'];

export interface AttemptRow {
  attemptId: string;
  environmentId: string;
  operationId: string;
  kind: 'provision' | 'release' | 'listOwned' | 'describe' | 'renew' | 'cleanup' | 'sweep' | 'buildTest';
  tenantId: string;
  projectId: string;
  runId: string;
  lifecycleGeneration: number;
  resourceGeneration: number;
  providerFence: number;
  fencingGeneration: number;
  request: Record<string, unknown>;
  requestFingerprint: string;
  state: AttemptState;
  deadlineAt: Date | null;
  dispatchedAt: Date | null;
  resolvedAt: Date | null;
  dispatchCount: number;
  receipt: unknown;
  error: { code: string; message: string } | null;
  resolution: string | null;
  /** A result that arrived after the attempt was settled by other evidence. */
  lateResult: unknown;
  lateResultAt: Date | null;
  createdAt: Date;
}

const columns = `attempt_id AS "attemptId", environment_id AS "environmentId", operation_id AS "operationId", kind,
  tenant_id AS "tenantId", project_id AS "projectId", run_id AS "runId",
  lifecycle_generation AS "lifecycleGeneration", resource_generation AS "resourceGeneration",
  provider_fence AS "providerFence", fencing_generation AS "fencingGeneration", request,
  request_fingerprint AS "requestFingerprint", state, deadline_at AS "deadlineAt", dispatched_at AS "dispatchedAt",
  resolved_at AS "resolvedAt", dispatch_count AS "dispatchCount", receipt, error, resolution,
  late_result AS "lateResult", late_result_at AS "lateResultAt", created_at AS "createdAt"`;

export type NewAttempt = Pick<
  AttemptRow,
  | 'attemptId'
  | 'environmentId'
  | 'operationId'
  | 'kind'
  | 'tenantId'
  | 'projectId'
  | 'runId'
  | 'lifecycleGeneration'
  | 'resourceGeneration'
  | 'providerFence'
  | 'fencingGeneration'
  | 'request'
  | 'requestFingerprint'
> & { state?: AttemptState };

export async function insertAttempt(tx: Queryable, a: NewAttempt): Promise<void> {
  await tx.query(
    `INSERT INTO provider_attempts (attempt_id, environment_id, operation_id, kind, tenant_id, project_id, run_id,
       lifecycle_generation, resource_generation, provider_fence, fencing_generation, request, request_fingerprint, state)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
    [
      a.attemptId,
      a.environmentId,
      a.operationId,
      a.kind,
      a.tenantId,
      a.projectId,
      a.runId,
      a.lifecycleGeneration,
      a.resourceGeneration,
      a.providerFence,
      a.fencingGeneration,
      JSON.stringify(a.request),
      a.requestFingerprint,
      a.state ?? 'Pending',
    ],
  );
}

export async function readAttempt(q: Queryable, attemptId: string): Promise<AttemptRow | null> {
  const { rows } = await q.query<AttemptRow>(
    `SELECT ${columns} FROM provider_attempts WHERE attempt_id = $1`,
    [attemptId],
  );
  return rows[0] ?? null;
}

/**
 * The attempt, and its outbox rows marked handled, in one statement: what a worker does first when
 * a job for the attempt reaches it (the queue delivered it; the relay need not publish it again).
 */
export async function readAttemptAcknowledging(q: Queryable, attemptId: string): Promise<AttemptRow | null> {
  const { rows } = await q.query<AttemptRow>(
    `WITH acknowledged AS (
       UPDATE outbox SET acknowledged_at = now() WHERE attempt_id = $1 AND acknowledged_at IS NULL
     )
     SELECT ${columns} FROM provider_attempts WHERE attempt_id = $1`,
    [attemptId],
  );
  return rows[0] ?? null;
}

/** The Environment an attempt belongs to (it never changes, so it may be read before locking). */
export async function readAttemptEnvironment(q: Queryable, attemptId: string): Promise<string | null> {
  const { rows } = await q.query<{ environmentId: string }>(
    'SELECT environment_id AS "environmentId" FROM provider_attempts WHERE attempt_id = $1',
    [attemptId],
  );
  return rows[0]?.environmentId ?? null;
}

/** A describe of a lease that has not ended: what a caller wanting a fresh observation may share. */
export interface OpenDescribe {
  attemptId: string;
  state: 'Pending' | 'Dispatched';
  /** Opened at or after `since`: its answer is fresh for a caller that arrived then. */
  fresh: boolean;
}

/**
 * The newest describe of this lease opened under these fences and not ended: Pending (it will be
 * dispatched after now, so any caller may share it), or Dispatched and within its deadline (its
 * call is in flight; a caller that arrived before it was opened may wait for it but must not count
 * its answer as fresh). A Dispatched describe past its deadline is not open: the reconciler expires it.
 */
export async function readOpenDescribe(
  q: Queryable,
  fences: {
    operationId: string;
    resourceGeneration: number;
    providerFence: number;
    fencingGeneration: number;
  },
  since: Date | null,
): Promise<{ open: OpenDescribe | null; since: Date }> {
  // `since` null: the caller arrives now, by the database's clock (the one created_at is on).
  const { rows } = await q.query<{ since: Date; open: OpenDescribe | null }>(
    `WITH t AS (SELECT coalesce($5::timestamptz, now()) AS since)
     SELECT t.since, (SELECT json_build_object('attemptId', attempt_id, 'state', state,
                                               'fresh', created_at >= t.since)
                        FROM provider_attempts
                       WHERE operation_id = $1 AND kind = 'describe'
                         AND (state = 'Pending' OR (state = 'Dispatched' AND deadline_at > clock_timestamp()))
                         AND resource_generation = $2 AND provider_fence = $3 AND fencing_generation = $4
                       ORDER BY created_at DESC LIMIT 1) AS open
       FROM t`,
    [fences.operationId, fences.resourceGeneration, fences.providerFence, fences.fencingGeneration, since],
  );
  const row = rows[0];
  return { open: row?.open ?? null, since: row?.since ?? new Date() };
}

export async function readAttemptsOfOperation(q: Queryable, operationId: string): Promise<AttemptRow[]> {
  const { rows } = await q.query<AttemptRow>(
    `SELECT ${columns} FROM provider_attempts WHERE operation_id = $1 ORDER BY created_at, attempt_id`,
    [operationId],
  );
  return rows;
}

export async function countUnresolved(q: Queryable, environmentId: string): Promise<number> {
  const { rows } = await q.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM provider_attempts
      WHERE environment_id = $1 AND kind IN ('provision', 'release') AND state IN ('Pending', 'Dispatched', 'Unknown')`,
    [environmentId],
  );
  return rows[0]?.n ?? 0;
}

export async function markDispatched(tx: Queryable, attemptId: string, deadline: Date): Promise<boolean> {
  const { rowCount } = await tx.query(
    `UPDATE provider_attempts SET state = 'Dispatched', dispatched_at = now(), deadline_at = $2,
            dispatch_count = dispatch_count + 1, updated_at = now()
      WHERE attempt_id = $1 AND state = 'Pending'`,
    [attemptId, deadline],
  );
  return rowCount === 1;
}

/**
 * Records a result; only an unresolved attempt changes, so a late duplicate cannot overwrite. An
 * error it had (an Unknown attempt's) is kept when other evidence settles it.
 */
export async function resolveAttempt(
  tx: Queryable,
  attemptId: string,
  result: {
    state: AttemptState;
    receipt?: unknown;
    error?: { code: string; message: string };
    resolution?: string;
  },
): Promise<boolean> {
  const terminal = result.state !== 'Unknown';
  const { rowCount } = await tx.query(
    `UPDATE provider_attempts
        SET state = $2, receipt = $3, error = COALESCE($4, error), resolution = $5, updated_at = now(),
            resolved_at = CASE WHEN $6 THEN now() ELSE resolved_at END
      WHERE attempt_id = $1 AND state IN ('Pending', 'Dispatched', 'Unknown')`,
    [
      attemptId,
      result.state,
      result.receipt === undefined ? null : JSON.stringify(result.receipt),
      result.error === undefined ? null : JSON.stringify(result.error),
      result.resolution ?? null,
      terminal,
    ],
  );
  return rowCount === 1;
}

/** Keeps a result that arrived after the attempt was settled by other evidence (the first one). */
export async function recordLateResult(tx: Queryable, attemptId: string, result: unknown): Promise<void> {
  await tx.query(
    `UPDATE provider_attempts SET late_result = $2, late_result_at = now(), updated_at = now()
      WHERE attempt_id = $1 AND late_result IS NULL`,
    [attemptId, JSON.stringify(result)],
  );
}

/** Dispatched attempts whose deadline passed: the worker died or hangs; the reconciler takes over. */
export async function overdueDispatched(q: Queryable, now: Date, limit: number): Promise<AttemptRow[]> {
  const { rows } = await q.query<AttemptRow>(
    `SELECT ${columns} FROM provider_attempts WHERE state = 'Dispatched' AND deadline_at < $1
      ORDER BY deadline_at LIMIT $2`,
    [now, limit],
  );
  return rows;
}
