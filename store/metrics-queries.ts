// The reads behind the scrape-time gauges. Each is one statement that stays cheap as history grows:
// it reads only rows a partial index already bounds (current leases, unresolved attempts, the
// outbox's unacknowledged rows), never the terminal leases or settled attempts that accumulate.
import { currentLeaseStates } from '../machines/environment-context.ts';
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
