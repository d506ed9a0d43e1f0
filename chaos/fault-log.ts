// Counts the provider faults the children's injectors decided (chaos/child-entry.js writes one JSON
// line per fault, per process incarnation), and what they left in the attempts: the error codes
// recorded, which say how each fault reached the runtime.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Database } from '../store/db.ts';

export interface ProviderFaults {
  /** fault kind → count (a scripted latency spike is `latency-spike`). */
  byKind: Record<string, number>;
  /** `fault kind / operation` → count. */
  byOperation: Record<string, number>;
  /** `api` / `worker` → count. */
  byRole: Record<string, number>;
  total: number;
}

interface Decision {
  operation: string;
  fault: string | null;
}

const bump = (map: Record<string, number>, key: string) => {
  map[key] = (map[key] ?? 0) + 1;
};

export async function countProviderFaults(faultDir: string): Promise<ProviderFaults> {
  const result: ProviderFaults = { byKind: {}, byOperation: {}, byRole: {}, total: 0 };
  for (const file of await readdir(faultDir)) {
    const role = file.startsWith('api-') ? 'api' : 'worker';
    const text = await readFile(join(faultDir, file), 'utf8');
    for (const line of text.split('\n')) {
      if (line.trim() === '') continue;
      const decision = JSON.parse(line) as Decision;
      const kind = decision.fault ?? 'latency-spike';
      bump(result.byKind, kind);
      bump(result.byOperation, `${kind} / ${decision.operation}`);
      bump(result.byRole, role);
      result.total++;
    }
  }
  return result;
}

/** Attempts by the error code they recorded (`kind: code`), for the report. */
export async function attemptErrors(db: Database): Promise<Record<string, number>> {
  const { rows } = await db.query<{ key: string; n: number }>(
    `SELECT kind || ': ' || (error->>'code') AS key, count(*)::int AS n FROM provider_attempts
      WHERE error IS NOT NULL GROUP BY 1 ORDER BY 1`,
  );
  return Object.fromEntries(rows.map((r) => [r.key, r.n]));
}

/** Attempts per lease (operation), by kind: how many leases had one, and p50 / p99 / max of the count. */
export interface AttemptsPerLease {
  leases: number;
  p50: number;
  p99: number;
  max: number;
}

/**
 * Per attempt kind, how many attempts each lease collected: bounded when reconciliation backs off
 * a provider that keeps failing, growing with time when it does not.
 */
export async function attemptsPerLease(db: Database): Promise<Record<string, AttemptsPerLease>> {
  const { rows } = await db.query<{ kind: string } & AttemptsPerLease>(
    `SELECT kind, count(*)::int AS leases,
            percentile_disc(0.5) WITHIN GROUP (ORDER BY n)::int AS p50,
            percentile_disc(0.99) WITHIN GROUP (ORDER BY n)::int AS p99, max(n)::int AS max
       FROM (SELECT kind, operation_id, count(*) AS n FROM provider_attempts GROUP BY 1, 2) per_lease
      GROUP BY kind ORDER BY kind`,
  );
  return Object.fromEntries(rows.map(({ kind, ...counts }) => [kind, counts]));
}
