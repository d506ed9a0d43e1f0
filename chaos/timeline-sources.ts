// Where the whole-run checks (chaos/timeline.ts) get their intervals and moments:
//   - the simulated provider's table: every resource ever created (rows are only soft-deleted),
//     created and deleted on PostgreSQL's clock (clock_timestamp(), its migration 0005);
//   - the fake Kubernetes API's lifetime log, kept in the harness's process (which chaos never
//     kills), on that process's Date.now(): the same host clock the run's PostgreSQL reads;
//   - the Environment journal: the first row whose lifecycle is Released, at its recorded_at (the
//     now() of the transaction that wrote it, no later than the moment it became visible);
//   - the answers the chaos client received that said Released, at the moment it had them.
import { ANNOTATIONS, LABELS, MANAGED_BY } from '../providers/agent-sandbox/names.ts';
import type { Database } from '../store/db.ts';
import { listSimulatedLifetimes } from '../store/simulated-resources.ts';
import type { ObjectLifetime } from '../test/fakes/kube-api/index.ts';
import type { EnvironmentRecord } from './lifecycle.ts';
import type { ReleasedMoment, ResourceLifetime } from './timeline.ts';

/** The `duplicate-resource` fault's stray carries `<operation>/stray`: a duplicate of that operation. */
const STRAY = /\/stray$/;

export async function simulatedLifetimes(db: Database): Promise<ResourceLifetime[]> {
  return (await listSimulatedLifetimes(db)).map((row) => ({
    resource: row.resourceId,
    environmentId: row.environmentId,
    operationId: row.operationId.replace(STRAY, ''),
    volumes: row.volumeId === null ? [] : [row.volumeId],
    createdAtMs: row.createdAtMs,
    deletedAtMs: row.deletedAtMs,
  }));
}

/**
 * Sandlot's SandboxClaims (the resource the adapter creates and deletes) and the Pods under them
 * (Pod → Sandbox → SandboxClaim by owner UID), which are what mount the Workspace PVC. Pods that
 * no Sandlot claim owns (none in a chaos run) are not sandboxes and are left out.
 */
export function kubeLifetimes(objects: readonly ObjectLifetime[]): ResourceLifetime[] {
  const byUid = new Map(objects.map((o) => [o.uid, o]));
  const claimOf = (o: ObjectLifetime, depth = 0): ObjectLifetime | undefined => {
    if (o.kind === 'SandboxClaim') return o.labels[LABELS.managedBy] === MANAGED_BY ? o : undefined;
    if (depth > 4) return undefined;
    for (const uid of o.ownerUids) {
      const owner = byUid.get(uid);
      const claim = owner === undefined ? undefined : claimOf(owner, depth + 1);
      if (claim !== undefined) return claim;
    }
    return undefined;
  };
  const lifetimes: ResourceLifetime[] = [];
  for (const o of objects) {
    if (o.kind !== 'SandboxClaim' && o.kind !== 'Pod') continue;
    const claim = claimOf(o);
    if (claim === undefined) continue;
    lifetimes.push({
      resource: `${o.kind} ${o.namespace ?? ''}/${o.name} (${o.uid})`,
      environmentId: claim.annotations[ANNOTATIONS.environmentId] ?? null,
      operationId: claim.labels[LABELS.operationId] ?? `(claim ${claim.uid})`,
      volumes: o.claimNames,
      createdAtMs: o.createdAtMs,
      deletedAtMs: o.deletedAtMs,
    });
  }
  return lifetimes;
}

export async function journalReleased(db: Database): Promise<ReleasedMoment[]> {
  // Ordered by the table's columns: an output column named like one (a text revision) would win.
  const { rows } = await db.query<{ id: string; rev: number; type: string; atMs: number }>(
    `SELECT DISTINCT ON (j.environment_id) j.environment_id AS id, j.revision::int AS rev,
            j.event_type AS type, (extract(epoch FROM j.recorded_at) * 1000)::float8 AS "atMs"
       FROM environment_journal j WHERE j.to_state->>'lifecycle' = 'Released'
      ORDER BY j.environment_id, j.revision`,
  );
  return rows.map((r) => ({
    environmentId: r.id,
    atMs: r.atMs,
    source: `journal revision ${r.rev} (${r.type})`,
  }));
}

export function answeredReleased(records: readonly EnvironmentRecord[]): ReleasedMoment[] {
  return records.flatMap((r) =>
    r.environmentId === null || r.releasedAnswer === null
      ? []
      : [{ environmentId: r.environmentId, atMs: r.releasedAnswer.atMs, source: r.releasedAnswer.what }],
  );
}
