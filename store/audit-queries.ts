// The reads `sandlot audit` makes: plain SELECTs over the lease, cleanup, attempt and journal tables
// (and the simulated provider's call log), each answering one invariant question. Nothing here writes.
import { currentLeaseStates } from '../machines/environment-context.ts';
import type { Queryable } from './db.ts';
import type { JournalEntry } from './journal.ts';

export interface MultipleCurrentLeases {
  environmentId: string;
  resourceGenerations: number[];
  states: string[];
}

/** Environments with more than one lease in a current state (the machine and an index forbid it). */
export async function environmentsWithManyCurrentLeases(q: Queryable): Promise<MultipleCurrentLeases[]> {
  const { rows } = await q.query<MultipleCurrentLeases>(
    `SELECT environment_id AS "environmentId",
            array_agg(resource_generation::int ORDER BY resource_generation) AS "resourceGenerations",
            array_agg(state ORDER BY resource_generation) AS states
       FROM sandbox_leases WHERE state = ANY($1::text[])
      GROUP BY environment_id HAVING count(*) > 1 ORDER BY environment_id`,
    [[...currentLeaseStates]],
  );
  return rows;
}

/** What the audit needs of every lease: who it is, the owner it stamped, and where it stands. */
export interface AuditLease {
  environmentId: string;
  resourceGeneration: number;
  operationId: string;
  providerFence: number;
  ownerHash: string | null;
  state: string;
  providerOptions: Record<string, unknown>;
}

export async function auditLeases(q: Queryable): Promise<AuditLease[]> {
  const { rows } = await q.query<AuditLease>(
    `SELECT environment_id AS "environmentId", resource_generation::int AS "resourceGeneration",
            operation_id AS "operationId", provider_fence::int AS "providerFence",
            recovery_request->>'ownerHash' AS "ownerHash", state, provider_options AS "providerOptions"
       FROM sandbox_leases ORDER BY environment_id, resource_generation`,
  );
  return rows;
}

export interface AuditCleanup {
  cleanupId: string;
  environmentId: string;
  resourceId: string;
  state: 'Pending' | 'Claimed' | 'Released';
  ownerHash: string;
  providerFence: number;
  providerOptions: Record<string, unknown>;
}

export async function auditCleanups(q: Queryable): Promise<AuditCleanup[]> {
  const { rows } = await q.query<AuditCleanup>(
    `SELECT cleanup_id AS "cleanupId", environment_id AS "environmentId", resource_id AS "resourceId", state,
            owner_hash AS "ownerHash", source_provider_fence::int AS "providerFence",
            provider_options AS "providerOptions"
       FROM late_resource_cleanups ORDER BY created_at, cleanup_id`,
  );
  return rows;
}

export interface AuditEnvironment {
  environmentId: string;
  revision: number;
  machineVersion: number;
}

/** One page of Environments in ID order, after `after` (keyset paging). */
export async function auditEnvironmentsPage(
  q: Queryable,
  after: string | null,
  limit: number,
): Promise<AuditEnvironment[]> {
  const { rows } = await q.query<AuditEnvironment>(
    `SELECT environment_id AS "environmentId", revision::int AS revision, machine_version AS "machineVersion"
       FROM environments WHERE ($1::text IS NULL OR environment_id > $1)
      ORDER BY environment_id LIMIT $2`,
    [after, limit],
  );
  return rows;
}

/** The journals of these Environments, by Environment then revision. */
export async function journalsOf(q: Queryable, environmentIds: readonly string[]): Promise<JournalEntry[]> {
  const { rows } = await q.query<JournalEntry>(
    `SELECT environment_id AS "environmentId", revision::int AS revision, event_type AS "eventType", event,
            from_state AS "fromState", to_state AS "toState", actor, source, recorded_at AS "recordedAt"
       FROM environment_journal WHERE environment_id = ANY($1::text[])
      ORDER BY environment_id, revision`,
    [[...environmentIds]],
  );
  return rows;
}

/** Whether the simulated provider's call log exists here (its migration 0003 was applied). */
export async function hasSimulatedCallLog(q: Queryable): Promise<boolean> {
  const { rows } = await q.query<{ present: boolean }>(
    `SELECT to_regclass('simulated_provider_calls') IS NOT NULL AS present`,
  );
  return rows[0]?.present === true;
}

export interface UnattemptedCall {
  callId: number;
  operation: string;
  operationId: string | null;
  ownerHash: string | null;
  providerFence: number | null;
  calledAt: Date;
}

/**
 * Simulated provider calls with no attempt created before them of a kind that makes that call:
 * the same operation when the call names one, else the same owner hash and provider fence. A call
 * made before the attempts of its operation or owner hash were compacted (store/prune.ts) is
 * accounted for by that summary.
 */
export async function callsWithoutAttempt(q: Queryable): Promise<UnattemptedCall[]> {
  const { rows } = await q.query<UnattemptedCall>(
    `WITH compacted AS MATERIALIZED (
       SELECT s.event->'attempts' AS attempts, (s.event->'attempts'->>'compactedAt')::timestamptz AS at
         FROM environment_journal s WHERE s.revision = 0 AND s.event ? 'attempts'
     ), accounted_operations AS MATERIALIZED (
       SELECT x AS operation_id, max(at) AS at
         FROM compacted, jsonb_array_elements_text(attempts->'operations') x GROUP BY x
     ), accounted_owners AS MATERIALIZED (
       SELECT x AS owner_hash, max(at) AS at
         FROM compacted, jsonb_array_elements_text(attempts->'ownerHashes') x GROUP BY x
     )
     SELECT c.call_id::float8 AS "callId", c.operation, c.operation_id AS "operationId",
            c.owner_hash AS "ownerHash", c.provider_fence::float8 AS "providerFence", c.called_at AS "calledAt"
       FROM simulated_provider_calls c
      WHERE NOT EXISTS (SELECT 1 FROM accounted_operations o
                         WHERE o.operation_id = c.operation_id AND c.called_at <= o.at)
        AND NOT EXISTS (SELECT 1 FROM accounted_owners o
                         WHERE o.owner_hash = c.owner_hash AND c.called_at <= o.at)
        AND NOT EXISTS (
        SELECT 1 FROM provider_attempts a
         WHERE a.created_at <= c.called_at
           AND a.kind = ANY(CASE c.operation
                 WHEN 'listOwned' THEN ARRAY['listOwned', 'sweep', 'release']
                 WHEN 'release' THEN ARRAY['release', 'cleanup']
                 ELSE ARRAY[c.operation] END)
           AND (CASE WHEN c.operation_id IS NOT NULL THEN a.operation_id = c.operation_id
                           -- A lease's release also releases a stray of another operation under
                           -- its owner hash and fence, under the stray's own binding.
                           OR (c.operation = 'release' AND a.kind = 'release'
                               AND a.provider_fence = c.provider_fence
                               AND a.request->>'ownerHash' = c.owner_hash)
                     ELSE a.provider_fence = c.provider_fence AND a.request->>'ownerHash' = c.owner_hash END))
      ORDER BY c.call_id`,
  );
  return rows;
}

export interface OverdueAttempt {
  attemptId: string;
  environmentId: string;
  operationId: string;
  kind: string;
  state: string;
  deadlineAt: Date;
}

/** Unresolved attempts whose call deadline has passed (the reconciler's to settle, not a finding). */
export async function overdueUnresolvedAttempts(q: Queryable, now: Date): Promise<OverdueAttempt[]> {
  const { rows } = await q.query<OverdueAttempt>(
    `SELECT attempt_id AS "attemptId", environment_id AS "environmentId", operation_id AS "operationId",
            kind, state, deadline_at AS "deadlineAt"
       FROM provider_attempts
      WHERE state IN ('Pending', 'Dispatched', 'Unknown') AND deadline_at < $1
      ORDER BY deadline_at, attempt_id`,
    [now],
  );
  return rows;
}

export interface ExpiredClaim {
  cleanupId: string;
  environmentId: string;
  resourceId: string;
  claimExpiresAt: Date;
}

/** Cleanup records Claimed past their claim's expiry (another reconciler may claim them again). */
export async function expiredCleanupClaims(q: Queryable, now: Date): Promise<ExpiredClaim[]> {
  const { rows } = await q.query<ExpiredClaim>(
    `SELECT cleanup_id AS "cleanupId", environment_id AS "environmentId", resource_id AS "resourceId",
            claim_expires_at AS "claimExpiresAt"
       FROM late_resource_cleanups WHERE state = 'Claimed' AND claim_expires_at < $1
      ORDER BY claim_expires_at, cleanup_id`,
    [now],
  );
  return rows;
}

export interface OpenWorkspaceConflict {
  cleanupId: string;
  environmentId: string;
  resourceId: string;
  state: string;
  sourceLease: number;
  volumeId: string;
  heldByLease: number | null;
}

/** Open cleanup records whose late resource could not hold its Workspace volume (migration 0027). */
export async function openWorkspaceConflicts(q: Queryable): Promise<OpenWorkspaceConflict[]> {
  const { rows } = await q.query<OpenWorkspaceConflict>(
    `SELECT cleanup_id AS "cleanupId", environment_id AS "environmentId", resource_id AS "resourceId", state,
            source_resource_generation AS "sourceLease", workspace_conflict->>'volumeId' AS "volumeId",
            (workspace_conflict->>'heldByLease')::int AS "heldByLease"
       FROM late_resource_cleanups
      WHERE state IN ('Pending', 'Claimed') AND workspace_conflict IS NOT NULL
      ORDER BY created_at, cleanup_id`,
  );
  return rows;
}
