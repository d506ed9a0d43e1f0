// The reads behind the scrape-time gauges. Each is one statement that stays cheap as history grows:
// it reads only rows a partial index already bounds (current leases, unresolved attempts, the
// outbox's unacknowledged rows), never the terminal leases or settled attempts that accumulate.
import { authorityLapseCodes, currentLeaseStates } from '../machines/environment-context.ts';
import type { Queryable } from './db.ts';

/** Age buckets of an unresolved attempt, by its creation: the label values of `age`. */
export const ATTEMPT_AGE_BUCKETS = ['lt_1m', '1m_10m', '10m_1h', 'gte_1h'] as const;

/** Every current lease state with its count (zero included, so a drained state reads 0, not absent). */
export async function currentLeaseCounts(q: Queryable): Promise<{ state: string; count: number }[]> {
  const { rows } = await q.query<{ state: string; count: number }>(
    `SELECT state, count(*)::int AS count FROM sandbox_leases WHERE state = ANY($1::text[]) GROUP BY state`,
    [[...currentLeaseStates]],
  );
  const counted = new Map(rows.map((row) => [row.state, row.count]));
  return currentLeaseStates.map((state) => ({ state, count: counted.get(state) ?? 0 }));
}

export async function unresolvedAttemptCounts(
  q: Queryable,
): Promise<{ kind: string; state: string; age: string; count: number }[]> {
  const { rows } = await q.query<{ kind: string; state: string; age: string; count: number }>(
    `SELECT kind, state,
            CASE WHEN age < interval '1 minute' THEN 'lt_1m'
                 WHEN age < interval '10 minutes' THEN '1m_10m'
                 WHEN age < interval '1 hour' THEN '10m_1h'
                 ELSE 'gte_1h' END AS age,
            count(*)::int AS count
       FROM (SELECT kind, state, now() - created_at AS age FROM provider_attempts
              WHERE state IN ('Pending', 'Dispatched', 'Unknown')) AS unresolved
      GROUP BY 1, 2, 3`,
  );
  return rows;
}

/** Seconds since the oldest unacknowledged, never-published outbox row was written (0: none). */
export async function outboxLagSeconds(q: Queryable): Promise<number> {
  const { rows } = await q.query<{ seconds: number }>(
    `SELECT extract(epoch FROM now() - created_at)::float8 AS seconds FROM outbox
      WHERE acknowledged_at IS NULL AND published_at IS NULL
      ORDER BY outbox_id LIMIT 1`,
  );
  return Math.max(0, rows[0]?.seconds ?? 0);
}

/** The oldest Dispatched and the oldest Unknown attempt's age since dispatch (both states, 0: none). */
export async function oldestUnresolvedAttemptSeconds(
  q: Queryable,
): Promise<{ state: string; seconds: number }[]> {
  const { rows } = await q.query<{ state: string; seconds: number }>(
    `SELECT state, extract(epoch FROM now() - min(coalesce(dispatched_at, created_at)))::float8 AS seconds
       FROM provider_attempts WHERE state IN ('Dispatched', 'Unknown') GROUP BY state`,
  );
  const found = new Map(rows.map((row) => [row.state, Math.max(0, row.seconds)]));
  return ['Dispatched', 'Unknown'].map((state) => ({ state, seconds: found.get(state) ?? 0 }));
}

/**
 * Seconds since the Active lease the observer would take next was last observed (never observed:
 * since its row last changed, which is when it became Active at the latest). The observer's own
 * index (migration 0004) orders it, so this reads one row.
 */
export async function oldestActiveObservationSeconds(q: Queryable): Promise<number> {
  const { rows } = await q.query<{ seconds: number }>(
    `SELECT extract(epoch FROM now() - coalesce(observed_at, updated_at))::float8 AS seconds
       FROM sandbox_leases WHERE state = 'Active'
      ORDER BY observed_at NULLS FIRST, updated_at LIMIT 1`,
  );
  return Math.max(0, rows[0]?.seconds ?? 0);
}

/** Late-resource cleanups not yet released, by state (both states, zero included). */
export async function openCleanupCounts(q: Queryable): Promise<{ state: string; count: number }[]> {
  const { rows } = await q.query<{ state: string; count: number }>(
    `SELECT state, count(*)::int AS count FROM late_resource_cleanups
      WHERE state IN ('Pending', 'Claimed') GROUP BY state`,
  );
  const counted = new Map(rows.map((row) => [row.state, row.count]));
  return ['Pending', 'Claimed'].map((state) => ({ state, count: counted.get(state) ?? 0 }));
}

/** Leases parked for a lapsed authority (a current lease, so the one-current index bounds it). */
export async function parkedLeaseCounts(q: Queryable): Promise<{ reason: string; count: number }[]> {
  const { rows } = await q.query<{ reason: string; count: number }>(
    `SELECT failure->>'code' AS reason, count(*)::int AS count FROM sandbox_leases
      WHERE state = 'ReconciliationRequired' AND failure->>'code' = ANY($1::text[]) GROUP BY 1`,
    [[...authorityLapseCodes]],
  );
  const counted = new Map(rows.map((row) => [row.reason, row.count]));
  return authorityLapseCodes.map((reason) => ({ reason, count: counted.get(reason) ?? 0 }));
}

export interface LeaseTiming {
  provider: string;
  /** From the lease's provision commit to this transition's commit. */
  sinceProvision: number;
  /** From the transition that entered Releasing last (null: none before this one). */
  sinceRelease: number | null;
}

/**
 * The stored times around one committed transition: its journal row's time against the lease row's
 * creation (the provision commit) and the latest journal row that entered Releasing. Both are
 * PostgreSQL transaction times, so the figures hold whichever process committed each step and
 * across restarts. Reads the journal by its primary key, newest first.
 */
export async function leaseTiming(
  q: Queryable,
  environmentId: string,
  revision: number,
  resourceGeneration: number,
): Promise<LeaseTiming | null> {
  const { rows } = await q.query<LeaseTiming>(
    `SELECT l.provider_identity->>'providerId' AS provider,
            extract(epoch FROM j.recorded_at - l.created_at)::float8 AS "sinceProvision",
            extract(epoch FROM j.recorded_at - (
              SELECT r.recorded_at FROM environment_journal r
               WHERE r.environment_id = j.environment_id AND r.revision < j.revision
                 AND r.to_state->>'sandbox' = 'Releasing'
                 AND r.from_state->>'sandbox' IS DISTINCT FROM 'Releasing'
               ORDER BY r.revision DESC LIMIT 1))::float8 AS "sinceRelease"
       FROM environment_journal j
       JOIN sandbox_leases l ON l.environment_id = j.environment_id AND l.resource_generation = $3
      WHERE j.environment_id = $1 AND j.revision = $2`,
    [environmentId, revision, resourceGeneration],
  );
  return rows[0] ?? null;
}

/**
 * Marks a lease's first answer ready for dispatch (migration 0033): its provider and the seconds
 * from the provision commit, or null when an earlier answer (in any process) already marked it.
 */
export async function markFirstReady(
  q: Queryable,
  operationId: string,
): Promise<{ provider: string; sinceProvision: number } | null> {
  const { rows } = await q.query<{ provider: string; sinceProvision: number }>(
    `UPDATE sandbox_leases SET first_ready_at = now()
      WHERE operation_id = $1 AND first_ready_at IS NULL
      RETURNING provider_identity->>'providerId' AS provider,
                extract(epoch FROM first_ready_at - created_at)::float8 AS "sinceProvision"`,
    [operationId],
  );
  return rows[0] ?? null;
}
