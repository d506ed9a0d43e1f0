import type { Queryable } from './db.ts';

export interface OutboxRow {
  outboxId: number;
  environmentId: string;
  revision: number;
  kind: string;
  payload: unknown;
  /** The provider attempt this effect runs, when it runs one (the queue's job ID). */
  attemptId: string | null;
  /** The W3C `traceparent` of the transition that wrote it, when tracing was on. */
  traceContext: string | null;
}

export const outboxColumns = `outbox_id::int AS "outboxId", environment_id AS "environmentId", revision::int AS revision,
  kind, payload, attempt_id AS "attemptId", trace_context AS "traceContext"`;

export async function appendOutbox(
  tx: Queryable,
  row: Omit<OutboxRow, 'outboxId' | 'traceContext'> & { traceContext?: string | null },
): Promise<OutboxRow> {
  const { rows } = await tx.query<OutboxRow>(
    `INSERT INTO outbox (environment_id, revision, kind, payload, attempt_id, trace_context)
     VALUES ($1, $2, $3, $4, $5, $6)
     RETURNING ${outboxColumns}`,
    [
      row.environmentId,
      row.revision,
      row.kind,
      JSON.stringify(row.payload),
      row.attemptId,
      row.traceContext ?? null,
    ],
  );
  const inserted = rows[0];
  if (inserted === undefined) throw new Error('outbox insert returned no row');
  return inserted;
}

export async function readOutbox(q: Queryable, environmentId: string): Promise<OutboxRow[]> {
  const { rows } = await q.query<OutboxRow>(
    `SELECT ${outboxColumns} FROM outbox WHERE environment_id = $1 ORDER BY outbox_id`,
    [environmentId],
  );
  return rows;
}
