import type { Queryable } from './db.ts';

/** Where a journaled event came from (mirrors actors/runtime.ts EventSource). */
export type JournalSource = 'http' | 'worker' | 'reconciler' | 'observer' | 'provider' | 'system';

export interface JournalEntry {
  environmentId: string;
  revision: number;
  eventType: string;
  event: unknown;
  fromState: unknown;
  toState: unknown;
  actor: string;
  /** Null on rows written before sources were recorded (migration 0010). */
  source: JournalSource | null;
  recordedAt: Date;
}

export async function appendJournal(
  tx: Queryable,
  entry: Omit<JournalEntry, 'recordedAt' | 'source'> & { source?: JournalSource },
): Promise<void> {
  await tx.query(
    `INSERT INTO environment_journal
       (environment_id, revision, event_type, event, from_state, to_state, actor, source)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [
      entry.environmentId,
      entry.revision,
      entry.eventType,
      JSON.stringify(entry.event),
      entry.fromState === null ? null : JSON.stringify(entry.fromState),
      JSON.stringify(entry.toState),
      entry.actor,
      entry.source ?? null,
    ],
  );
}

export async function readJournal(q: Queryable, environmentId: string): Promise<JournalEntry[]> {
  const { rows } = await q.query<JournalEntry>(
    `SELECT environment_id AS "environmentId", revision::int AS revision, event_type AS "eventType", event,
            from_state AS "fromState", to_state AS "toState", actor, source,
            recorded_at AS "recordedAt"
       FROM environment_journal WHERE environment_id = $1 ORDER BY revision`,
    [environmentId],
  );
  return rows;
}

/**
 * The subject of the last release or abandon a caller sent over HTTP since `since` (the lease's
 * reservation), or null when none did (a lifecycle release: the lease's own provisioner stands).
 */
export async function readReleaseRequester(
  q: Queryable,
  environmentId: string,
  since: Date,
): Promise<string | null> {
  const { rows } = await q.query<{ actor: string }>(
    `SELECT actor FROM environment_journal
      WHERE environment_id = $1 AND source = 'http' AND recorded_at >= $2
        AND event_type IN ('environment.release', 'sandbox.abandon')
      ORDER BY revision DESC LIMIT 1`,
    [environmentId, since],
  );
  return rows[0]?.actor ?? null;
}
