// Sandbox lease rows. One current lease per Environment is enforced by the partial unique index
// sandbox_leases_one_current (migration 0002) as well as by the machine; old generations stay.
import { authorityLapseCodes, currentLeaseStates } from '../machines/environment-context.ts';
import type { WorkspaceMount } from '../providers/provider.ts';
import { defaultBackoff, type Backoff } from './backoff.ts';
import type { Queryable } from './db.ts';

const current = [...currentLeaseStates];

export interface LeaseRow {
  environmentId: string;
  resourceGeneration: number;
  operationId: string;
  lifecycleGeneration: number;
  providerFence: number;
  currentFencingGeneration: number;
  state: string;
  idempotencyKey: string;
  runSelection: Record<string, unknown>;
  providerIdentity: Record<string, unknown>;
  providerOptions: Record<string, unknown>;
  recoveryRequest: Record<string, unknown>;
  /** The subject that provisioned the lease (null for leases from before it was recorded). */
  requestedBy: string | null;
  /** When the lease expires (null: never), and when its expiry was fenced (null: not yet). */
  expiresAt: Date | null;
  expiredAt: Date | null;
  workspace: WorkspaceMount;
  networkPolicyGeneration: number;
  resource: {
    resourceId: string;
    operationId: string;
    phase: string;
    placement: Record<string, string>;
  } | null;
  releaseReceipt: Record<string, unknown> | null;
  failure: { code: string; message: string } | null;
  /**
   * The AcceptedBuildTestProfile document in effect when the lease was reserved (without its hash),
   * kept for the lease's life; null when none was configured (migration 0015).
   */
  buildTestProfile: Record<string, unknown> | null;
  revision: number;
  /** When a describe of the lease was last opened (null: never yet; markLeaseObserved). */
  observedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

const columns = `environment_id AS "environmentId", resource_generation AS "resourceGeneration",
  operation_id AS "operationId", lifecycle_generation AS "lifecycleGeneration", provider_fence AS "providerFence",
  current_fencing_generation AS "currentFencingGeneration", state, idempotency_key AS "idempotencyKey",
  run_selection AS "runSelection", provider_identity AS "providerIdentity", provider_options AS "providerOptions",
  recovery_request AS "recoveryRequest", requested_by AS "requestedBy", expires_at AS "expiresAt",
  expired_at AS "expiredAt", workspace, network_policy_generation AS "networkPolicyGeneration",
  resource, release_receipt AS "releaseReceipt", failure, build_test_profile AS "buildTestProfile",
  revision::int AS revision, observed_at AS "observedAt",
  created_at AS "createdAt", updated_at AS "updatedAt"`;

export type NewLease = Omit<
  LeaseRow,
  'createdAt' | 'updatedAt' | 'expiredAt' | 'buildTestProfile' | 'observedAt'
> & {
  /** Absent or null: no BuildTest profile was configured when the lease was reserved. */
  buildTestProfile?: Record<string, unknown> | null;
};

const jsonOrNull = (value: unknown) => (value === null ? null : JSON.stringify(value));

/** A new lease row, in the state the reserving transition entered. */
export async function insertLease(tx: Queryable, lease: NewLease): Promise<void> {
  await tx.query(
    `INSERT INTO sandbox_leases (environment_id, resource_generation, operation_id, lifecycle_generation,
       provider_fence, current_fencing_generation, state, idempotency_key, run_selection, provider_identity,
       provider_options, recovery_request, workspace, network_policy_generation, revision,
       resource, release_receipt, failure, requested_by, expires_at, build_test_profile)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21)`,
    [
      lease.environmentId,
      lease.resourceGeneration,
      lease.operationId,
      lease.lifecycleGeneration,
      lease.providerFence,
      lease.currentFencingGeneration,
      lease.state,
      lease.idempotencyKey,
      JSON.stringify(lease.runSelection),
      JSON.stringify(lease.providerIdentity),
      JSON.stringify(lease.providerOptions),
      JSON.stringify(lease.recoveryRequest),
      JSON.stringify(lease.workspace),
      lease.networkPolicyGeneration,
      lease.revision,
      jsonOrNull(lease.resource),
      jsonOrNull(lease.releaseReceipt),
      jsonOrNull(lease.failure),
      lease.requestedBy,
      lease.expiresAt,
      jsonOrNull(lease.buildTestProfile ?? null),
    ],
  );
}

export interface LeaseUpdate {
  environmentId: string;
  resourceGeneration: number;
  state: string;
  currentFencingGeneration: number;
  resource: LeaseRow['resource'];
  releaseReceipt: Record<string, unknown> | null;
  failure: LeaseRow['failure'];
  /** Its expiry was fenced: expired_at is stamped once. */
  expired: boolean;
  /** Its expiry as it stands (a renewal moves it later); undefined or null leaves it. */
  expiresAt?: string | null | undefined;
  revision: number;
}

export async function updateLease(tx: Queryable, update: LeaseUpdate): Promise<void> {
  const { rowCount } = await tx.query(
    `UPDATE sandbox_leases
        SET state = $3, current_fencing_generation = $4, resource = $5,
            release_receipt = COALESCE($6, release_receipt), failure = $7, revision = $8, updated_at = now(),
            terminal_at = CASE WHEN $3 IN ('Released', 'Failed') THEN COALESCE(terminal_at, now()) ELSE terminal_at END,
            expired_at = CASE WHEN $9 THEN COALESCE(expired_at, now()) ELSE expired_at END,
            expires_at = COALESCE($10::timestamptz, expires_at)
      WHERE environment_id = $1 AND resource_generation = $2`,
    [
      update.environmentId,
      update.resourceGeneration,
      update.state,
      update.currentFencingGeneration,
      jsonOrNull(update.resource),
      jsonOrNull(update.releaseReceipt),
      jsonOrNull(update.failure),
      update.revision,
      update.expired,
      update.expiresAt ?? null,
    ],
  );
  if (rowCount !== 1)
    throw new Error(`lease ${update.environmentId}/${update.resourceGeneration} does not exist`);
}

export async function readCurrentLease(q: Queryable, environmentId: string): Promise<LeaseRow | null> {
  const { rows } = await q.query<LeaseRow>(
    `SELECT ${columns} FROM sandbox_leases WHERE environment_id = $1 AND state = ANY($2::text[])`,
    [environmentId, current],
  );
  return rows[0] ?? null;
}

/** The Workspace volume a lease mounts. */
export async function readLeaseWorkspace(
  q: Queryable,
  environmentId: string,
  resourceGeneration: number,
): Promise<string | null> {
  const { rows } = await q.query<{ volumeId: string }>(
    `SELECT workspace->>'volumeId' AS "volumeId" FROM sandbox_leases
      WHERE environment_id = $1 AND resource_generation = $2`,
    [environmentId, resourceGeneration],
  );
  return rows[0]?.volumeId ?? null;
}

/** What a lease was attached at: its operation, the volume it mounts and that volume's data generation then. */
export async function readLeaseAttachment(
  q: Queryable,
  environmentId: string,
  resourceGeneration: number,
): Promise<{ operationId: string; volumeId: string; dataGeneration: number } | null> {
  const { rows } = await q.query<{ operationId: string; volumeId: string; dataGeneration: number }>(
    `SELECT operation_id AS "operationId", workspace->>'volumeId' AS "volumeId",
            (workspace->>'dataGeneration')::int AS "dataGeneration"
       FROM sandbox_leases WHERE environment_id = $1 AND resource_generation = $2`,
    [environmentId, resourceGeneration],
  );
  const row = rows[0];
  return row === undefined || row.volumeId === null ? null : row;
}

/** The newest lease, current or not. */
export async function readLatestLease(q: Queryable, environmentId: string): Promise<LeaseRow | null> {
  const { rows } = await q.query<LeaseRow>(
    `SELECT ${columns} FROM sandbox_leases WHERE environment_id = $1 ORDER BY resource_generation DESC LIMIT 1`,
    [environmentId],
  );
  return rows[0] ?? null;
}

export async function readLeaseByKey(
  q: Queryable,
  environmentId: string,
  idempotencyKey: string,
): Promise<LeaseRow | null> {
  const { rows } = await q.query<LeaseRow>(
    `SELECT ${columns} FROM sandbox_leases WHERE environment_id = $1 AND idempotency_key = $2`,
    [environmentId, idempotencyKey],
  );
  return rows[0] ?? null;
}

export async function readLeaseByOperation(q: Queryable, operationId: string): Promise<LeaseRow | null> {
  const { rows } = await q.query<LeaseRow>(`SELECT ${columns} FROM sandbox_leases WHERE operation_id = $1`, [
    operationId,
  ]);
  return rows[0] ?? null;
}

/**
 * Leases waiting in ReconciliationRequired that reconciliation can move now (the reconciler's work
 * list). A lease parked for a lapsed authority is left to a caller who holds authority (the machine
 * would refuse it anyway). A lease whose listing is still Pending or Dispatched is skipped: its
 * answer is awaited, never raced by another. A lease whose listings since its last other attempt
 * all ended without settling it waits after the n-th of them as store/backoff.ts says, longer when
 * its provider fails for most of its waiting leases; the first listing of an episode is never held.
 */
export async function leasesNeedingReconciliation(
  q: Queryable,
  limit: number,
  now: Date = new Date(),
  backoff: Backoff = defaultBackoff,
): Promise<LeaseRow[]> {
  const { rows } = await q.query<LeaseRow>(
    `WITH waiting AS (
       SELECT l.*, l.provider_identity->>'providerId' AS provider, tried.n, tried.last_state,
              tried.last_at, tried.last_id
         FROM sandbox_leases l
         CROSS JOIN LATERAL (
           SELECT count(*)::int AS n,
                  (array_agg(a.state ORDER BY a.created_at DESC, a.attempt_id DESC))[1] AS last_state,
                  (array_agg(a.attempt_id ORDER BY a.created_at DESC, a.attempt_id DESC))[1] AS last_id,
                  max(coalesce(a.resolved_at, a.updated_at)) AS last_at
             FROM provider_attempts a
            WHERE a.operation_id = l.operation_id AND a.resource_generation = l.resource_generation
              AND a.kind = 'listOwned'
              AND a.created_at > coalesce((
                    SELECT max(b.created_at) FROM provider_attempts b
                     WHERE b.operation_id = l.operation_id AND b.resource_generation = l.resource_generation
                       AND b.kind <> 'listOwned'), '-infinity'::timestamptz)
         ) tried
        WHERE l.state = 'ReconciliationRequired'
          AND (l.failure IS NULL OR NOT (l.failure->>'code' = ANY($2::text[])))
     ),
     failing AS (
       SELECT provider FROM waiting WHERE n > 0 GROUP BY provider
       HAVING count(*) >= $6
          AND 2 * count(*) FILTER (WHERE last_state IN ('Unknown', 'Failed')) >= count(*)
     )
     SELECT ${columns} FROM waiting w
      WHERE w.n = 0
         OR (w.last_state NOT IN ('Pending', 'Dispatched')
             AND w.last_at + make_interval(secs => least($5::float8,
                   $4::float8 * power(2, least(w.n - 1, 30))
                   * CASE WHEN w.provider IN (SELECT provider FROM failing) THEN $7::float8 ELSE 1 END)
                 * (0.5 + 0.5 * ((hashtext(w.last_id)::bigint + 2147483648) / 4294967296.0)) / 1000)
               <= $3)
      ORDER BY w.updated_at LIMIT $1`,
    [
      limit,
      [...authorityLapseCodes],
      now,
      backoff.baseMs,
      backoff.maxMs,
      backoff.providerQuorum,
      backoff.providerFactor,
    ],
  );
  return rows;
}

/**
 * Active leases, least recently observed first (never observed first of all), so every pass of the
 * observer reaches further down the list and no lease waits behind the same `limit` others. A lease
 * whose describes keep failing is left out until its backoff ends (recordObservation). With
 * `observedBefore`, only leases neither described nor changed since then (a provider with a change
 * feed needs its leases described only as a slow resync).
 */
export async function activeLeases(
  q: Queryable,
  limit: number,
  now: Date = new Date(),
  observedBefore: Date | null = null,
): Promise<LeaseRow[]> {
  const { rows } = await q.query<LeaseRow>(
    `SELECT ${columns} FROM sandbox_leases WHERE state = 'Active'
        AND (observe_not_before IS NULL OR observe_not_before <= $2)
        AND ($3::timestamptz IS NULL OR coalesce(observed_at, updated_at) < $3)
      ORDER BY observed_at NULLS FIRST, updated_at, environment_id LIMIT $1`,
    [limit, now, observedBefore],
  );
  return rows;
}

/** The Active leases holding these provider resources (the change feed's lookup, migration 0029). */
export async function activeLeasesOfResources(q: Queryable, resourceIds: string[]): Promise<LeaseRow[]> {
  const { rows } = await q.query<LeaseRow>(
    `SELECT ${columns} FROM sandbox_leases
      WHERE state = 'Active' AND resource->>'resourceId' = ANY($1::text[])`,
    [resourceIds],
  );
  return rows;
}

/**
 * Records how the observer's describe of a lease ended: an answer clears its backoff; no answer
 * (failed, uncertain, not in time) counts one more failure in a row and holds the lease back from
 * the observer as store/backoff.ts says, `factor` times longer when its provider is failing.
 */
export async function recordObservation(
  q: Queryable,
  lease: { environmentId: string; resourceGeneration: number },
  answered: boolean,
  now: Date,
  backoff: Backoff,
  factor = 1,
): Promise<void> {
  if (answered) {
    await q.query(
      `UPDATE sandbox_leases SET observe_failures = 0, observe_not_before = NULL
        WHERE environment_id = $1 AND resource_generation = $2 AND observe_failures > 0`,
      [lease.environmentId, lease.resourceGeneration],
    );
    return;
  }
  // The right-hand side sees the old count: the n-th failure waits base · 2^(n−1).
  await q.query(
    `UPDATE sandbox_leases SET observe_failures = observe_failures + 1,
            observe_not_before = $3::timestamptz + make_interval(secs => least($5::float8,
              $4::float8 * power(2, least(observe_failures, 30)) * $6::float8)
              * (0.5 + 0.5 * ((hashtext(environment_id || ':' || observe_failures)::bigint + 2147483648)
                 / 4294967296.0)) / 1000)
      WHERE environment_id = $1 AND resource_generation = $2`,
    [lease.environmentId, lease.resourceGeneration, now, backoff.baseMs, backoff.maxMs, factor],
  );
}

/** Stamps the moment a describe of the lease was opened (the observer's ordering key). */
export async function markLeaseObserved(
  tx: Queryable,
  environmentId: string,
  resourceGeneration: number,
): Promise<void> {
  await tx.query(
    `UPDATE sandbox_leases SET observed_at = clock_timestamp()
      WHERE environment_id = $1 AND resource_generation = $2`,
    [environmentId, resourceGeneration],
  );
}

/** Late sweeps a terminal lease gets: each an exact owner listing, the last well after the first. */
export const LATE_SWEEPS = 2;
/**
 * Sweeps opened per terminal lease at most. A sweep whose listing failed or stayed uncertain proves
 * nothing, so it does not count towards LATE_SWEEPS and another is opened later (each one later than
 * the last: sweep n is due n × everyMs after the lease ended); past this bound the reconciler stops
 * and `sandlot audit` is what finds a resource left behind.
 */
export const MAX_SWEEPS_OPENED = 12;

export interface SweepDue {
  environmentId: string;
  operationId: string;
  lifecycleGeneration: number;
  resourceGeneration: number;
  providerFence: number;
  currentFencingGeneration: number;
  ownerHash: string;
  providerOptions: Record<string, unknown>;
  workspace: WorkspaceMount;
  networkPolicyGeneration: number;
  lateSweeps: number;
}

/** The due-sweep scan ($1 now, $2 everyMs, $3 limit); exported for its plan test. */
export const sweepsDueStatement = `SELECT environment_id AS "environmentId", operation_id AS "operationId",
            lifecycle_generation AS "lifecycleGeneration", resource_generation AS "resourceGeneration",
            provider_fence AS "providerFence", current_fencing_generation AS "currentFencingGeneration",
            recovery_request->>'ownerHash' AS "ownerHash", provider_options AS "providerOptions", workspace,
            network_policy_generation AS "networkPolicyGeneration", late_sweeps AS "lateSweeps"
       FROM sandbox_leases l
      WHERE state IN ('Released', 'Failed') AND sweeps_listed < ${LATE_SWEEPS}
        AND late_sweeps < ${MAX_SWEEPS_OPENED} AND terminal_at IS NOT NULL
        AND terminal_at + make_interval(secs => (late_sweeps + 1) * $2::float8 / 1000) <= $1
      ORDER BY terminal_at LIMIT $3`;

/**
 * Terminal leases whose next sweep is due: sweep n runs `n × everyMs` after the lease ended, until
 * LATE_SWEEPS of them listed exactly (or MAX_SWEEPS_OPENED were opened). The two bounds are
 * literals in the statement so that it matches the partial index sandbox_leases_sweep_due
 * (migration 0013), which names the same numbers.
 */
export async function sweepsDue(
  q: Queryable,
  now: Date,
  everyMs: number,
  limit: number,
): Promise<SweepDue[]> {
  const { rows } = await q.query<SweepDue>(sweepsDueStatement, [now, everyMs, limit]);
  return rows;
}

/** A sweep of the lease's operation listed exactly: one towards LATE_SWEEPS. */
export async function countSweepListed(tx: Queryable, operationId: string): Promise<void> {
  await tx.query(`UPDATE sandbox_leases SET sweeps_listed = sweeps_listed + 1 WHERE operation_id = $1`, [
    operationId,
  ]);
}

/** How many late sweeps a terminal lease has had opened (null: no such lease). */
export async function readLateSweeps(
  tx: Queryable,
  environmentId: string,
  resourceGeneration: number,
): Promise<number | null> {
  const { rows } = await tx.query<{ lateSweeps: number }>(
    `SELECT late_sweeps AS "lateSweeps" FROM sandbox_leases
      WHERE environment_id = $1 AND resource_generation = $2`,
    [environmentId, resourceGeneration],
  );
  return rows[0]?.lateSweeps ?? null;
}

/** A sweep was opened: it is not due again (CAS on the count, so a race opens it once). */
export async function markSweepOpened(
  tx: Queryable,
  environmentId: string,
  resourceGeneration: number,
  sweep: number,
): Promise<void> {
  await tx.query(
    `UPDATE sandbox_leases SET late_sweeps = $3
      WHERE environment_id = $1 AND resource_generation = $2 AND late_sweeps < $3`,
    [environmentId, resourceGeneration, sweep],
  );
}

/** Active leases whose expiry has passed and was not fenced yet: the reconciler fences them. */
export async function leasesPastExpiry(q: Queryable, now: Date, limit: number): Promise<LeaseRow[]> {
  const { rows } = await q.query<LeaseRow>(
    `SELECT ${columns} FROM sandbox_leases
      WHERE state = 'Active' AND expires_at IS NOT NULL AND expires_at <= $1 AND expired_at IS NULL
      ORDER BY expires_at LIMIT $2`,
    [now, limit],
  );
  return rows;
}
