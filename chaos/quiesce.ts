// Waits until reconciliation has quiesced: no attempt that can still move (Pending or Dispatched,
// or an Unknown provision or release, which reconciliation must settle and which would block
// release), no open late-resource cleanup, no current lease, no Environment short of Released, no
// terminal lease still due a late sweep, and no outbox row unacknowledged. All zero twice in a row,
// a second apart: quiet. Whatever is left at the deadline is listed. Nothing ever settles an Unknown
// describe, listing, sweep or cleanup release (the cleanup record is what moves on), and nothing
// waits for one: those are counted apart, as the audit's expected unresolved.
import type { Database } from '../store/db.ts';
import { LATE_SWEEPS, MAX_SWEEPS_OPENED } from '../store/leases.ts';

export interface Unsettled {
  movableAttempts: number;
  openCleanups: number;
  currentLeases: number;
  environmentsNotReleased: number;
  sweepsDue: number;
  outboxUnacknowledged: number;
}

export interface QuiesceResult {
  quiet: boolean;
  waitedMs: number;
  last: Unsettled | null;
  /** When not quiet: some of what was left, with IDs. */
  leftovers: string[];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function unsettled(db: Database): Promise<Unsettled> {
  const { rows } = await db.query<Record<keyof Unsettled, number>>(
    `SELECT
       (SELECT count(*)::int FROM provider_attempts
          WHERE state IN ('Pending', 'Dispatched')
             OR (state = 'Unknown' AND kind IN ('provision', 'release'))) AS "movableAttempts",
       (SELECT count(*)::int FROM late_resource_cleanups WHERE state IN ('Pending', 'Claimed')) AS "openCleanups",
       (SELECT count(*)::int FROM sandbox_leases
          WHERE state IN ('Provisioning', 'Active', 'Releasing', 'ReconciliationRequired')) AS "currentLeases",
       (SELECT count(*)::int FROM environments WHERE lifecycle_state <> 'Released') AS "environmentsNotReleased",
       (SELECT count(*)::int FROM sandbox_leases l
          WHERE state IN ('Released', 'Failed') AND late_sweeps < ${MAX_SWEEPS_OPENED}
            AND (SELECT count(*) FROM provider_attempts a
                  WHERE a.operation_id = l.operation_id AND a.kind = 'sweep'
                    AND a.state = 'Succeeded') < ${LATE_SWEEPS}) AS "sweepsDue",
       (SELECT count(*)::int FROM outbox WHERE acknowledged_at IS NULL) AS "outboxUnacknowledged"`,
  );
  const row = rows[0];
  if (row === undefined) throw new Error('no answer');
  return row;
}

const zero = (u: Unsettled) => Object.values(u).every((n) => n === 0);

export async function waitQuiet(
  db: Database,
  timeoutMs: number,
  onPoll?: (u: Unsettled) => void,
): Promise<QuiesceResult> {
  const started = Date.now();
  let last: Unsettled | null = null;
  let quietOnce = false;
  for (;;) {
    try {
      last = await unsettled(db);
      onPoll?.(last);
      if (zero(last)) {
        if (quietOnce) return { quiet: true, waitedMs: Date.now() - started, last, leftovers: [] };
        quietOnce = true;
      } else quietOnce = false;
    } catch {
      quietOnce = false;
    }
    if (Date.now() - started > timeoutMs) {
      return { quiet: false, waitedMs: Date.now() - started, last, leftovers: await leftovers(db) };
    }
    await sleep(1_000);
  }
}

async function leftovers(db: Database): Promise<string[]> {
  const lines: string[] = [];
  const attempts = await db.query<{ id: string; env: string; kind: string; state: string }>(
    `SELECT attempt_id AS id, environment_id AS env, kind, state FROM provider_attempts
      WHERE state IN ('Pending', 'Dispatched') OR (state = 'Unknown' AND kind IN ('provision', 'release'))
      ORDER BY created_at LIMIT 20`,
  );
  for (const a of attempts.rows) lines.push(`attempt ${a.id} (${a.kind}) ${a.state}, environment ${a.env}`);
  const leases = await db.query<{ env: string; state: string; gen: number }>(
    `SELECT environment_id AS env, state, resource_generation AS gen FROM sandbox_leases
      WHERE state IN ('Provisioning', 'Active', 'Releasing', 'ReconciliationRequired') LIMIT 20`,
  );
  for (const l of leases.rows) lines.push(`lease ${l.env}/${l.gen} still ${l.state}`);
  const envs = await db.query<{ env: string; state: string }>(
    `SELECT environment_id AS env, lifecycle_state AS state FROM environments
      WHERE lifecycle_state <> 'Released' LIMIT 20`,
  );
  for (const e of envs.rows) lines.push(`environment ${e.env} still ${e.state}`);
  const cleanups = await db.query<{ id: string; env: string; state: string }>(
    `SELECT cleanup_id AS id, environment_id AS env, state FROM late_resource_cleanups
      WHERE state IN ('Pending', 'Claimed') LIMIT 20`,
  );
  for (const c of cleanups.rows) lines.push(`cleanup ${c.id} ${c.state}, environment ${c.env}`);
  const outbox = await db.query<{ id: string; env: string; kind: string }>(
    `SELECT outbox_id::text AS id, environment_id AS env, kind FROM outbox
      WHERE acknowledged_at IS NULL ORDER BY outbox_id LIMIT 20`,
  );
  for (const o of outbox.rows) lines.push(`outbox ${o.id} ${o.kind} unacknowledged, environment ${o.env}`);
  return lines;
}

/** Unknown attempts nothing settles and nothing waits for (kind → count). */
export async function unknownForGood(db: Database): Promise<Record<string, number>> {
  const { rows } = await db.query<{ kind: string; n: number }>(
    `SELECT kind, count(*)::int AS n FROM provider_attempts
      WHERE state = 'Unknown' AND kind NOT IN ('provision', 'release') GROUP BY kind ORDER BY kind`,
  );
  return Object.fromEntries(rows.map((r) => [r.kind, r.n]));
}
