// What pruning removes, and what it never touches. Two kinds of rows grow with every lifecycle and
// stop being useful: outbox rows once their attempt began (the queue no longer needs them), and the
// journal of an Environment released long ago. Pruning deletes the first after a short grace, and
// compacts the second, past the retention window, into one summary row (revision 0) beside the
// final transition; once nothing can still come to that Environment (no open cleanup, no late
// sweep due, no BuildTest step left, no unresolved attempt) its settled provider attempts go too,
// counted into that summary with the operations and owner hashes they were made under, so the
// audit can still account for every provider call. Late-resource cleanups, leases and unresolved
// attempts (Unknown ones above all) are never pruned.
import type { Queryable } from './db.ts';
import { LATE_SWEEPS, MAX_SWEEPS_OPENED } from './leases.ts';

/** The event type of the summary row a compacted journal starts with (revision 0). */
export const COMPACTED = 'journal.compacted';

export interface CompactedSummary {
  /** Journal rows the summary replaced: revisions 1..through. */
  rows: number;
  through: number;
  firstRecordedAt: string;
  lastRecordedAt: string;
  /** How many rows of each event type it replaced. */
  events: Record<string, number>;
  /** The subject of the last release or abandon sent over HTTP, if any. */
  releasedBy: string | null;
  /** The settled provider attempts compacted into this summary, once they were. */
  attempts?: CompactedAttempts;
}

export interface CompactedAttempts {
  rows: number;
  /** How many attempts of each `kind/state` it replaced, e.g. `provision/Succeeded`. */
  counts: Record<string, number>;
  /** The operations and owner hashes the attempts were made under (the audit reads them). */
  operations: string[];
  ownerHashes: string[];
  firstCreatedAt: string;
  lastCreatedAt: string;
  /** When the attempts were compacted: provider calls up to then are accounted for. */
  compactedAt: string;
}

export interface PruneCounts {
  outboxRows: number;
  environmentsCompacted: number;
  journalRowsCompacted: number;
  /** Settled provider attempts of compacted Environments, folded into their summary rows. */
  attemptsCompacted: number;
}

/** Acknowledged outbox rows older than `before`: deleted (or, dry, counted), `batch` at a time. */
export async function pruneOutbox(
  q: Queryable,
  before: Date,
  batch: number,
  dryRun: boolean,
): Promise<number> {
  if (dryRun) {
    const { rows } = await q.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM outbox WHERE acknowledged_at < $1',
      [before],
    );
    return rows[0]?.n ?? 0;
  }
  const { rowCount } = await q.query(
    `DELETE FROM outbox WHERE outbox_id IN (
       SELECT outbox_id FROM outbox WHERE acknowledged_at < $1 ORDER BY outbox_id LIMIT $2)`,
    [before, batch],
  );
  return rowCount ?? 0;
}

/**
 * Released Environments whose last change is older than `before`, whose journal is not compacted
 * yet, with no open late-resource cleanup and no unresolved provider attempt.
 */
async function compactable(q: Queryable, before: Date, limit: number): Promise<string[]> {
  const { rows } = await q.query<{ environmentId: string }>(
    `SELECT e.environment_id AS "environmentId" FROM environments e
      WHERE e.lifecycle_state = 'Released' AND e.updated_at < $1 AND e.revision > 1
        AND NOT EXISTS (SELECT 1 FROM environment_journal j
                         WHERE j.environment_id = e.environment_id AND j.revision = 0)
        AND NOT EXISTS (SELECT 1 FROM late_resource_cleanups c
                         WHERE c.environment_id = e.environment_id AND c.state IN ('Pending', 'Claimed'))
        AND NOT EXISTS (SELECT 1 FROM provider_attempts a
                         WHERE a.environment_id = e.environment_id
                           AND a.state IN ('Pending', 'Dispatched', 'Unknown'))
      ORDER BY e.updated_at LIMIT $2`,
    [before, limit],
  );
  return rows.map((r) => r.environmentId);
}

/**
 * Compacts the journals of up to `limit` Environments released before `before`: every row but the
 * final transition becomes one summary row at revision 0 (`journal.compacted`, its event a
 * CompactedSummary). Dry: counts what would go and changes nothing.
 */
export async function compactReleased(
  q: Queryable,
  before: Date,
  limit: number,
  dryRun: boolean,
): Promise<{ environments: number; rows: number }> {
  const ids = await compactable(q, before, limit);
  if (ids.length === 0) return { environments: 0, rows: 0 };
  if (dryRun) {
    const { rows } = await q.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM environment_journal j JOIN environments e USING (environment_id)
        WHERE j.environment_id = ANY($1::text[]) AND j.revision < e.revision`,
      [ids],
    );
    return { environments: ids.length, rows: rows[0]?.n ?? 0 };
  }
  // One statement: the summary is written from the rows it replaces, which are then deleted.
  const { rows } = await q.query<{ n: number }>(
    `WITH gone AS (
       SELECT j.* FROM environment_journal j JOIN environments e USING (environment_id)
        WHERE j.environment_id = ANY($1::text[]) AND j.revision < e.revision
     ), counted AS (
       SELECT environment_id, event_type, count(*)::int AS n FROM gone GROUP BY environment_id, event_type
     ), summary AS (
       INSERT INTO environment_journal
         (environment_id, revision, event_type, event, from_state, to_state, actor, source)
       SELECT g.environment_id, 0, '${COMPACTED}',
              jsonb_build_object(
                'rows', count(*), 'through', max(g.revision),
                'firstRecordedAt', min(g.recorded_at), 'lastRecordedAt', max(g.recorded_at),
                'events', (SELECT jsonb_object_agg(c.event_type, c.n) FROM counted c
                            WHERE c.environment_id = g.environment_id),
                'releasedBy', (SELECT r.actor FROM gone r
                                WHERE r.environment_id = g.environment_id AND r.source = 'http'
                                  AND r.event_type IN ('environment.release', 'sandbox.abandon')
                                ORDER BY r.revision DESC LIMIT 1)),
              NULL, (array_agg(g.to_state ORDER BY g.revision DESC))[1], 'pruner', 'system'
         FROM gone g GROUP BY g.environment_id
       -- Another pruner compacting the same Environment at once: its summary stands.
       ON CONFLICT (environment_id, revision) DO NOTHING
     ), deleted AS (
       DELETE FROM environment_journal j USING gone
        WHERE j.environment_id = gone.environment_id AND j.revision = gone.revision
       RETURNING 1
     )
     SELECT count(*)::int AS n FROM deleted`,
    [ids],
  );
  return { environments: ids.length, rows: rows[0]?.n ?? 0 };
}

/**
 * Released Environments past `before` whose journal is compacted (`summarized`), that still hold attempts, and
 * to which nothing can come any more: no open cleanup, no unresolved attempt, no late sweep due on
 * any of their leases and no BuildTest step left. compactAttempts takes each one's advisory lock
 * (skipping those a transition holds), so no attempt is written under one while it is compacted.
 */
const attemptCandidates = (summarized: boolean) => `
  SELECT e.environment_id FROM environments e
   WHERE e.lifecycle_state = 'Released' AND e.updated_at < $1
     ${summarized ? 'AND EXISTS (SELECT 1 FROM environment_journal j WHERE j.environment_id = e.environment_id AND j.revision = 0)' : ''}
     AND EXISTS (SELECT 1 FROM provider_attempts a WHERE a.environment_id = e.environment_id)
     AND NOT EXISTS (SELECT 1 FROM provider_attempts a
                      WHERE a.environment_id = e.environment_id
                        AND a.state IN ('Pending', 'Dispatched', 'Unknown'))
     AND NOT EXISTS (SELECT 1 FROM late_resource_cleanups c
                      WHERE c.environment_id = e.environment_id AND c.state IN ('Pending', 'Claimed'))
     AND NOT EXISTS (SELECT 1 FROM sandbox_leases l
                      WHERE l.environment_id = e.environment_id
                        AND (l.state NOT IN ('Released', 'Failed')
                             OR (l.sweeps_listed < ${LATE_SWEEPS} AND l.late_sweeps < ${MAX_SWEEPS_OPENED})))
     AND NOT EXISTS (SELECT 1 FROM build_test_operations o
                      WHERE o.environment_id = e.environment_id
                        AND o.step IS NOT NULL AND o.cleaned_at IS NULL)
   ORDER BY e.updated_at LIMIT $2`;

/**
 * Folds the settled attempts of up to `limit` compacted Environments (see attemptCandidates) into
 * their summary rows (`attempts`, a CompactedAttempts, added to one already there) and deletes
 * them, in one statement. Dry: counts the attempts that would go in this pass, which compacts the
 * journals first (so the summary need not be there yet).
 */
export async function compactAttempts(
  q: Queryable,
  before: Date,
  limit: number,
  dryRun: boolean,
): Promise<{ environments: number; rows: number }> {
  if (dryRun) {
    const { rows } = await q.query<{ environments: number; n: number }>(
      `WITH target AS (${attemptCandidates(false)})
       SELECT (SELECT count(*)::int FROM target) AS environments,
              (SELECT count(*)::int FROM provider_attempts a JOIN target t USING (environment_id)) AS n`,
      [before, limit],
    );
    return { environments: rows[0]?.environments ?? 0, rows: rows[0]?.n ?? 0 };
  }
  const { rows } = await q.query<{ environments: number; n: number }>(
    `WITH candidate AS MATERIALIZED (${attemptCandidates(true)}),
     -- The Environment's advisory lock (store/environments.ts), skipping one a transition holds.
     target AS MATERIALIZED (
       SELECT environment_id FROM candidate
        WHERE pg_try_advisory_xact_lock(hashtextextended('environment:' || environment_id, 0))
     ), gone AS (
       DELETE FROM provider_attempts a USING target t
        WHERE a.environment_id = t.environment_id
       RETURNING a.environment_id, a.operation_id, a.kind, a.state, a.request->>'ownerHash' AS owner_hash,
                 a.created_at
     ), counted AS (
       SELECT environment_id, kind || '/' || state AS key, count(*)::int AS n
         FROM gone GROUP BY environment_id, kind, state
     ), fresh AS (
       SELECT g.environment_id, count(*)::int AS n,
              (SELECT jsonb_object_agg(c.key, c.n) FROM counted c WHERE c.environment_id = g.environment_id)
                AS counts,
              jsonb_agg(DISTINCT g.operation_id) AS operations,
              coalesce(jsonb_agg(DISTINCT g.owner_hash) FILTER (WHERE g.owner_hash IS NOT NULL), '[]')
                AS owner_hashes,
              min(g.created_at) AS first_at, max(g.created_at) AS last_at
         FROM gone g GROUP BY g.environment_id
     ), merged AS (
       -- Attempts compacted before (a lease given again after a first compaction) are added to.
       SELECT f.environment_id,
              jsonb_build_object(
                'rows', f.n + coalesce((s.event->'attempts'->>'rows')::int, 0),
                'counts', (SELECT jsonb_object_agg(k, total) FROM (
                             SELECT k, sum(v::int) AS total FROM (
                               SELECT key AS k, value AS v FROM jsonb_each_text(f.counts)
                               UNION ALL
                               SELECT key, value FROM jsonb_each_text(coalesce(s.event->'attempts'->'counts', '{}'))
                             ) kv GROUP BY k) t),
                'operations', (SELECT jsonb_agg(DISTINCT x) FROM jsonb_array_elements_text(
                                 f.operations || coalesce(s.event->'attempts'->'operations', '[]')) x),
                'ownerHashes', (SELECT coalesce(jsonb_agg(DISTINCT x), '[]') FROM jsonb_array_elements_text(
                                  f.owner_hashes || coalesce(s.event->'attempts'->'ownerHashes', '[]')) x),
                'firstCreatedAt', coalesce(s.event->'attempts'->'firstCreatedAt', to_jsonb(f.first_at)),
                'lastCreatedAt', to_jsonb(f.last_at),
                'compactedAt', to_jsonb(now())) AS attempts
         FROM fresh f JOIN environment_journal s ON s.environment_id = f.environment_id AND s.revision = 0
     ), summarized AS (
       UPDATE environment_journal s SET event = s.event || jsonb_build_object('attempts', m.attempts)
         FROM merged m WHERE s.environment_id = m.environment_id AND s.revision = 0
       RETURNING 1
     )
     SELECT (SELECT count(*)::int FROM summarized) AS environments, (SELECT count(*)::int FROM gone) AS n`,
    [before, limit],
  );
  return { environments: rows[0]?.environments ?? 0, rows: rows[0]?.n ?? 0 };
}
