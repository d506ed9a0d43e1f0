// What pruning removes, and what it never touches. Two kinds of rows grow with every lifecycle and
// stop being useful: outbox rows once their attempt began (the queue no longer needs them), and the
// journal of an Environment released long ago. Pruning deletes the first after a short grace, and
// compacts the second, past the retention window, into one summary row (revision 0) beside the
// final transition. Late-resource cleanups, provider attempts (Unknown ones above all) and leases
// are never pruned, and an Environment with an open cleanup or an unresolved attempt is not
// compacted.
import type { Queryable } from './db.ts';

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
}

export interface PruneCounts {
  outboxRows: number;
  environmentsCompacted: number;
  journalRowsCompacted: number;
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
