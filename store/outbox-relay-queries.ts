// The outbox relay's SQL. Claims use FOR UPDATE SKIP LOCKED so several relays share the backlog
// instead of publishing the same rows; a row stays due until a worker acknowledges its attempt.
import type { Queryable } from './db.ts';

export interface DueOutboxRow {
  outboxId: number;
  attemptId: string;
  traceContext: string | null;
}

/**
 * Locks up to `limit` unacknowledged attempt rows never published, or published more than
 * `republishAfterMs` ago (the queue lost them, or their worker died). Hold the lock only as long as
 * the transaction that publishes them.
 */
export async function claimDueOutbox(
  tx: Queryable,
  options: { republishAfterMs: number; limit: number },
): Promise<DueOutboxRow[]> {
  const { rows } = await tx.query<DueOutboxRow>(
    `SELECT outbox_id::int AS "outboxId", attempt_id AS "attemptId", trace_context AS "traceContext"
       FROM outbox
      WHERE acknowledged_at IS NULL
        AND attempt_id IS NOT NULL
        AND (published_at IS NULL OR published_at < now() - $1::double precision * interval '1 millisecond')
      ORDER BY outbox_id
      LIMIT $2
        FOR UPDATE SKIP LOCKED`,
    [options.republishAfterMs, options.limit],
  );
  return rows;
}

export async function markOutboxPublished(tx: Queryable, outboxIds: readonly number[]): Promise<void> {
  await tx.query('UPDATE outbox SET published_at = now() WHERE outbox_id = ANY($1::bigint[])', [outboxIds]);
}

/** Returns the number of rows acknowledged now (0 when they already were). */
export async function acknowledgeAttemptOutbox(tx: Queryable, attemptId: string): Promise<number> {
  const { rowCount } = await tx.query(
    'UPDATE outbox SET acknowledged_at = now() WHERE attempt_id = $1 AND acknowledged_at IS NULL',
    [attemptId],
  );
  return rowCount;
}
