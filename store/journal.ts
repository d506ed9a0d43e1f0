import type { Queryable } from './db.ts';

export interface JournalEntry {
  environmentId: string;
  revision: number;
  eventType: string;
  event: unknown;
  fromState: unknown;
  toState: unknown;
  actor: string;
  recordedAt: Date;
}

export async function appendJournal(tx: Queryable, entry: Omit<JournalEntry, 'recordedAt'>): Promise<void> {
  await tx.query(
    `INSERT INTO environment_journal (environment_id, revision, event_type, event, from_state, to_state, actor)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [
      entry.environmentId,
      entry.revision,
      entry.eventType,
      JSON.stringify(entry.event),
      entry.fromState === null ? null : JSON.stringify(entry.fromState),
      JSON.stringify(entry.toState),
      entry.actor,
    ],
  );
}

export async function readJournal(q: Queryable, environmentId: string): Promise<JournalEntry[]> {
  const { rows } = await q.query<JournalEntry>(
    `SELECT environment_id AS "environmentId", revision::int AS revision, event_type AS "eventType", event,
            from_state AS "fromState", to_state AS "toState", actor, recorded_at AS "recordedAt"
       FROM environment_journal WHERE environment_id = $1 ORDER BY revision`,
    [environmentId],
  );
  return rows;
}
