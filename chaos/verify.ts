// The end-of-run checks, by SQL against the run's database once reconciliation has quiesced:
//   lost: an Environment the driver was told exists that PostgreSQL lacks, or that did not end
//     Released with its lease Released;
//   duplicated: an Environment with more than one current lease (the audit), more than one lease
//     (each lifecycle provisions once), more provider resources than leases, or two duplicate
//     requests that answered differently;
//   stale fences that changed state: a journal row or a lease that carries the idempotency key of
//     a stale-fence request;
//   attempts dispatched more than once (a call made twice).
// And over the whole run, not only its end (chaos/timeline.ts): resources live after their
// Environment was said to be Released, and volumes mounted by two live resources at once.
import type { AuditReport } from '../actors/audit.ts';
import type { Database } from '../store/db.ts';
import type { EnvironmentRecord } from './lifecycle.ts';
import type { Recorder } from './recorder.ts';
import { answeredReleased, journalReleased } from './timeline-sources.ts';
import {
  firstReleased,
  releasedWhileLive,
  volumeDoubleMounts,
  type ReleasedWhileLive,
  type ResourceLifetime,
  type VolumeDoubleMount,
} from './timeline.ts';

export interface Verdict {
  lost: { environmentId: string; key: string; why: string }[];
  orphaned: { resourceId: string; environmentId: string; why: string }[];
  duplicated: { environmentId: string; why: string }[];
  staleFenceChanges: { environmentId: string; key: string; where: string }[];
  repeatedDispatches: { attemptId: string; environmentId: string; kind: string; dispatchCount: number }[];
  /** Attempts that recorded a result after their lease had moved on: stale writes, fenced. */
  lateResults: number;
  releasedWhileLive: ReleasedWhileLive[];
  volumeDoubleMounted: VolumeDoubleMount[];
  /** What the whole-run checks examined. */
  timeline: { resources: number; releasedEnvironments: number };
}

export async function verify(
  db: Database,
  records: readonly EnvironmentRecord[],
  audit: AuditReport | null,
  recorder: Recorder,
  /** When each provider resource existed, over the whole run (chaos/timeline-sources.ts). */
  resources: readonly ResourceLifetime[],
  /** Agent Sandbox: the claim names the fake saw created, per operation. */
  claimsByOperation?: Map<string, Set<string>>,
): Promise<Verdict> {
  const known = records.filter((r) => r.environmentId !== null);
  const ids = known.map((r) => r.environmentId as string);
  const environments = await db.query<{ id: string; state: string }>(
    `SELECT environment_id AS id, lifecycle_state AS state FROM environments WHERE environment_id = ANY($1::text[])`,
    [ids],
  );
  const leases = await db.query<{ id: string; state: string; n: number }>(
    `SELECT environment_id AS id, string_agg(state, ',' ORDER BY resource_generation) AS state, count(*)::int AS n
       FROM sandbox_leases GROUP BY environment_id`,
  );
  const stateOf = new Map(environments.rows.map((r) => [r.id, r.state]));
  const leasesOf = new Map(leases.rows.map((r) => [r.id, r]));
  const lost: Verdict['lost'] = [];
  for (const r of known) {
    const id = r.environmentId as string;
    const state = stateOf.get(id);
    const lease = leasesOf.get(id);
    let why: string | null = null;
    if (state === undefined) why = 'missing from PostgreSQL';
    else if (state !== 'Released') why = `lifecycle ${state}, expected Released`;
    else if (r.operationId !== null && lease === undefined) why = 'its lease is missing';
    else if (lease !== undefined && lease.state.split(',').some((s) => s !== 'Released')) {
      why = `leases ${lease.state}, expected Released`;
    }
    if (why !== null) lost.push({ environmentId: id, key: r.key, why });
  }

  const duplicated: Verdict['duplicated'] = [];
  for (const m of audit?.findings.multipleCurrentLeases ?? []) {
    duplicated.push({ environmentId: m.environmentId, why: `current leases ${m.states.join(', ')}` });
  }
  for (const lease of leases.rows) {
    if (lease.n > 1) duplicated.push({ environmentId: lease.id, why: `${lease.n} leases (${lease.state})` });
  }
  const extra = await db.query<{ id: string; resources: number; leases: number }>(
    `WITH res AS (SELECT owner->>'environmentId' AS id, count(*)::int AS resources FROM simulated_resources
                   WHERE operation_id NOT LIKE '%/stray' GROUP BY 1),
          lea AS (SELECT environment_id AS id, count(*)::int AS leases FROM sandbox_leases GROUP BY 1)
     SELECT res.id, res.resources, coalesce(lea.leases, 0) AS leases
       FROM res LEFT JOIN lea USING (id) WHERE res.resources > coalesce(lea.leases, 0)`,
  );
  for (const row of extra.rows) {
    duplicated.push({
      environmentId: row.id,
      why: `${row.resources} provider resources for ${row.leases} lease(s)`,
    });
  }
  if (claimsByOperation !== undefined) {
    const ops = await db.query<{ op: string; id: string }>(
      'SELECT operation_id AS op, environment_id AS id FROM sandbox_leases',
    );
    const environmentOf = new Map(ops.rows.map((r) => [r.op, r.id]));
    for (const [operationId, names] of claimsByOperation) {
      if (names.size > 1) {
        duplicated.push({
          environmentId: environmentOf.get(operationId) ?? `(operation ${operationId})`,
          why: `${names.size} SandboxClaims created for operation ${operationId}: ${[...names].join(', ')}`,
        });
      }
    }
  }
  for (const f of recorder.findings) {
    if (f.kind === 'duplicate-answers-differ') {
      duplicated.push({ environmentId: f.environmentId ?? '(none)', why: f.detail });
    }
  }

  const orphaned: Verdict['orphaned'] = [
    ...(audit?.findings.orphans ?? []).map((o) => ({
      resourceId: o.resourceId,
      environmentId: o.environmentId,
      why: 'no lease and no cleanup record',
    })),
    ...(audit?.findings.uncoveredTerminal ?? []).map((o) => ({
      resourceId: o.resourceId,
      environmentId: o.environmentId,
      why: `live resource of a ${o.leaseState} lease with no cleanup record`,
    })),
  ];

  const staleKeys = known.flatMap((r) => r.staleKeys);
  const staleFenceChanges: Verdict['staleFenceChanges'] = [];
  const journal = await db.query<{ id: string; key: string; revision: string; type: string }>(
    `SELECT environment_id AS id, event->>'idempotencyKey' AS key, revision::text AS revision, event_type AS type
       FROM environment_journal WHERE event->>'idempotencyKey' = ANY($1::text[])`,
    [staleKeys],
  );
  for (const j of journal.rows) {
    staleFenceChanges.push({
      environmentId: j.id,
      key: j.key,
      where: `journal revision ${j.revision} ${j.type}`,
    });
  }
  const staleLeases = await db.query<{ id: string; key: string; gen: number }>(
    `SELECT environment_id AS id, idempotency_key AS key, resource_generation AS gen
       FROM sandbox_leases WHERE idempotency_key = ANY($1::text[])`,
    [staleKeys],
  );
  for (const l of staleLeases.rows) {
    staleFenceChanges.push({ environmentId: l.id, key: l.key, where: `lease generation ${l.gen}` });
  }

  const repeated = await db.query<{
    attemptId: string;
    environmentId: string;
    kind: string;
    dispatchCount: number;
  }>(
    `SELECT attempt_id AS "attemptId", environment_id AS "environmentId", kind, dispatch_count AS "dispatchCount"
       FROM provider_attempts WHERE dispatch_count > 1 ORDER BY created_at`,
  );
  const late = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM provider_attempts WHERE late_result IS NOT NULL`,
  );
  const released = [...(await journalReleased(db)), ...answeredReleased(records)];
  return {
    lost,
    orphaned,
    duplicated,
    staleFenceChanges,
    repeatedDispatches: repeated.rows,
    lateResults: late.rows[0]?.n ?? 0,
    releasedWhileLive: releasedWhileLive(resources, released),
    volumeDoubleMounted: volumeDoubleMounts(resources),
    timeline: { resources: resources.length, releasedEnvironments: firstReleased(released).size },
  };
}
