// Recovery time after a fault: from the fault until everything that was in flight at that moment
// moved again. In flight: every attempt Pending or Dispatched, and every Environment the system
// itself must move on (not one waiting for its client): a lifecycle in Releasing, a current lease in
// Provisioning, Releasing or ReconciliationRequired, an open late-resource cleanup, or an Unknown
// provision or release (which reconciliation must settle). Moved:
// the attempt's state changed, the Environment's revision advanced. An Unknown describe, listing or
// sweep is not in flight: nothing ever settles one, and nothing waits for it. Read by SQL, never
// through the API.
import type { Database } from '../store/db.ts';

export interface InFlight {
  takenAt: number;
  environments: Map<string, number>;
  attempts: Map<string, string>;
}

export async function inFlight(db: Database): Promise<InFlight> {
  const takenAt = Date.now();
  const environments = await db.query<{ id: string; revision: string }>(
    `SELECT e.environment_id AS id, e.revision::text AS revision FROM environments e
      WHERE e.lifecycle_state = 'Releasing'
         OR EXISTS (SELECT 1 FROM provider_attempts a WHERE a.environment_id = e.environment_id
                       AND a.state = 'Unknown' AND a.kind IN ('provision', 'release'))
         OR EXISTS (SELECT 1 FROM sandbox_leases l WHERE l.environment_id = e.environment_id
                       AND l.state IN ('Provisioning', 'Releasing', 'ReconciliationRequired'))
         OR EXISTS (SELECT 1 FROM late_resource_cleanups c WHERE c.environment_id = e.environment_id
                       AND c.state IN ('Pending', 'Claimed'))`,
  );
  const attempts = await db.query<{ id: string; state: string }>(
    `SELECT attempt_id AS id, state FROM provider_attempts WHERE state IN ('Pending', 'Dispatched')`,
  );
  return {
    takenAt,
    environments: new Map(environments.rows.map((r) => [r.id, Number(r.revision)])),
    attempts: new Map(attempts.rows.map((r) => [r.id, r.state])),
  };
}

export interface Recovery {
  inFlightEnvironments: number;
  inFlightAttempts: number;
  /** From the fault until the last in-flight item moved; null when something never did. */
  recoveredMs: number | null;
  /** What had not moved when the wait gave up (at most 10 each). */
  stuck: string[];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls until every in-flight item moved, or `capMs` after the fault. */
export async function waitRecovered(
  db: Database,
  snapshot: InFlight,
  faultAt: number,
  capMs: number,
): Promise<Recovery> {
  const environments = new Map(snapshot.environments);
  const attempts = new Map(snapshot.attempts);
  const result = (recoveredMs: number | null, stuck: string[]): Recovery => ({
    inFlightEnvironments: snapshot.environments.size,
    inFlightAttempts: snapshot.attempts.size,
    recoveredMs,
    stuck,
  });
  for (;;) {
    try {
      if (environments.size > 0) {
        const { rows } = await db.query<{ id: string; revision: string }>(
          `SELECT environment_id AS id, revision::text AS revision FROM environments
            WHERE environment_id = ANY($1::text[])`,
          [[...environments.keys()]],
        );
        for (const row of rows) {
          if (Number(row.revision) > (environments.get(row.id) ?? Number.POSITIVE_INFINITY)) {
            environments.delete(row.id);
          }
        }
      }
      if (attempts.size > 0) {
        const { rows } = await db.query<{ id: string; state: string }>(
          `SELECT attempt_id AS id, state FROM provider_attempts WHERE attempt_id = ANY($1::text[])`,
          [[...attempts.keys()]],
        );
        for (const row of rows) if (row.state !== attempts.get(row.id)) attempts.delete(row.id);
      }
    } catch {
      // PostgreSQL restarting: ask again.
    }
    const now = Date.now();
    if (environments.size === 0 && attempts.size === 0) return result(now - faultAt, []);
    if (now - faultAt > capMs) {
      const stuck = [
        ...[...environments]
          .slice(0, 10)
          .map(([id, revision]) => `environment ${id} at revision ${revision}`),
        ...[...attempts].slice(0, 10).map(([id, state]) => `attempt ${id} still ${state}`),
      ];
      return result(null, stuck);
    }
    await sleep(250);
  }
}
