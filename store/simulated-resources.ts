// Rows of the simulated provider's stand-in cluster. Insert-only plus soft delete: a row is never
// removed, so UNIQUE (operation_id) keeps a released operation from ever making a second resource.
import type {
  OwnerBinding,
  ProviderOptionsSnapshot,
  ProviderResource,
  WorkspaceMount,
} from '../providers/provider.ts';
import type { Queryable } from './db.ts';

export interface SimulatedResourceRow {
  resourceId: string;
  owner: OwnerBinding;
  workspace: WorkspaceMount;
  networkPolicyGeneration: number;
  options: ProviderOptionsSnapshot;
  createdAtMs: number;
  deleted: boolean;
  deletedAtMs: number | null;
  finished: NonNullable<ProviderResource['finished']> | null;
  /** The lease's expiry (epoch ms) as last provisioned or renewed; null for a lease that never expires. */
  expiresAtMs: number | null;
}

export type NewSimulatedResource = Omit<SimulatedResourceRow, 'deleted' | 'deletedAtMs' | 'finished'>;

export interface SimulatedResourceFilter {
  ownerHash?: string;
  providerFence?: number;
  operationId?: string;
  /** Released resources are left out unless asked for. */
  includeDeleted?: boolean;
}

const columns = `resource_id AS "resourceId", owner, workspace,
  network_policy_generation AS "networkPolicyGeneration", options,
  created_at_ms::float8 AS "createdAtMs", deleted, deleted_at_ms::float8 AS "deletedAtMs", finished,
  expires_at_ms::float8 AS "expiresAtMs"`;

/** Returns false when the operation (or resource ID) already has a row; the caller reads that one. */
export async function insertSimulatedResource(q: Queryable, row: NewSimulatedResource): Promise<boolean> {
  const { rowCount } = await q.query(
    `INSERT INTO simulated_resources (resource_id, operation_id, owner, owner_hash, provider_fence,
       lifecycle_generation, resource_generation, workspace, network_policy_generation, options, created_at_ms,
       expires_at_ms)
     VALUES ($1, $2, $3::jsonb, $4, $5, $6, $7, $8::jsonb, $9, $10::jsonb, $11, $12)
     ON CONFLICT DO NOTHING`,
    [
      row.resourceId,
      row.owner.operationId,
      JSON.stringify(row.owner),
      row.owner.ownerHash,
      row.owner.providerFence,
      row.owner.lifecycleGeneration,
      row.owner.resourceGeneration,
      JSON.stringify(row.workspace),
      row.networkPolicyGeneration,
      JSON.stringify(row.options),
      row.createdAtMs,
      row.expiresAtMs,
    ],
  );
  return rowCount === 1;
}

export async function findSimulatedResource(
  q: Queryable,
  resourceId: string,
): Promise<SimulatedResourceRow | null> {
  const { rows } = await q.query<SimulatedResourceRow>(
    `SELECT ${columns} FROM simulated_resources WHERE resource_id = $1`,
    [resourceId],
  );
  return rows[0] ?? null;
}

export async function findSimulatedResourceByOperation(
  q: Queryable,
  operationId: string,
): Promise<SimulatedResourceRow | null> {
  const { rows } = await q.query<SimulatedResourceRow>(
    `SELECT ${columns} FROM simulated_resources WHERE operation_id = $1`,
    [operationId],
  );
  return rows[0] ?? null;
}

function where(filter: SimulatedResourceFilter): { sql: string; params: unknown[] } {
  const conditions: string[] = [];
  const params: unknown[] = [];
  const add = (column: string, value: unknown) => {
    params.push(value);
    conditions.push(`${column} = $${params.length}`);
  };
  if (filter.ownerHash !== undefined) add('owner_hash', filter.ownerHash);
  if (filter.providerFence !== undefined) add('provider_fence', filter.providerFence);
  if (filter.operationId !== undefined) add('operation_id', filter.operationId);
  if (filter.includeDeleted !== true) conditions.push('NOT deleted');
  return { sql: conditions.length === 0 ? '' : `WHERE ${conditions.join(' AND ')}`, params };
}

export async function listSimulatedResources(
  q: Queryable,
  filter: SimulatedResourceFilter,
): Promise<SimulatedResourceRow[]> {
  const { sql, params } = where(filter);
  const { rows } = await q.query<SimulatedResourceRow>(
    `SELECT ${columns} FROM simulated_resources ${sql} ORDER BY created_at_ms, resource_id`,
    params,
  );
  return rows;
}

export async function countSimulatedResources(
  q: Queryable,
  filter: SimulatedResourceFilter = {},
): Promise<number> {
  const { sql, params } = where(filter);
  const { rows } = await q.query<{ count: number }>(
    `SELECT count(*)::int AS count FROM simulated_resources ${sql}`,
    params,
  );
  return rows[0]?.count ?? 0;
}

/** Returns whether this call deleted it (false when it was already gone). */
export async function markSimulatedResourceDeleted(
  q: Queryable,
  resourceId: string,
  atMs: number,
): Promise<boolean> {
  const { rowCount } = await q.query(
    `UPDATE simulated_resources SET deleted = true, deleted_at_ms = $2, deleted_at = clock_timestamp()
      WHERE resource_id = $1 AND NOT deleted`,
    [resourceId, atMs],
  );
  return rowCount === 1;
}

/** Moves a live resource's term; returns false when there is no live row (absent or released). */
export async function renewSimulatedResource(
  q: Queryable,
  resourceId: string,
  expiresAtMs: number,
): Promise<boolean> {
  const { rowCount } = await q.query(
    `UPDATE simulated_resources SET expires_at_ms = $2 WHERE resource_id = $1 AND NOT deleted`,
    [resourceId, expiresAtMs],
  );
  return rowCount === 1;
}

/** Marks a live resource's run finished, as a sandbox whose agent exited would be (tests, bench). */
export async function markSimulatedResourceFinished(
  q: Queryable,
  resourceId: string,
  finished: NonNullable<ProviderResource['finished']>,
): Promise<boolean> {
  const { rowCount } = await q.query(
    `UPDATE simulated_resources SET finished = $2::jsonb WHERE resource_id = $1 AND NOT deleted`,
    [resourceId, JSON.stringify(finished)],
  );
  return rowCount === 1;
}

/** One row of the change feed: a resource and the change number its last write took. */
export interface SimulatedChange {
  resourceId: string;
  changeSeq: number;
  /** Whether its write is older than the settle window (numbers before it can no longer appear). */
  settled: boolean;
}

/** The highest change number so far (0: none), where a new follower starts. */
export async function lastSimulatedChange(q: Queryable): Promise<number> {
  const { rows } = await q.query<{ seq: number | null }>(
    'SELECT max(change_seq)::float8 AS seq FROM simulated_resources WHERE change_seq IS NOT NULL',
  );
  return rows[0]?.seq ?? 0;
}

/** Rows whose last write took a change number above `after`, in number order (migration 0006). */
export async function simulatedChangesAfter(
  q: Queryable,
  after: number,
  settleMs: number,
  limit: number,
): Promise<SimulatedChange[]> {
  const { rows } = await q.query<SimulatedChange>(
    `SELECT resource_id AS "resourceId", change_seq::float8 AS "changeSeq",
            changed_at < clock_timestamp() - make_interval(secs => $2::float8 / 1000) AS settled
       FROM simulated_resources WHERE change_seq IS NOT NULL AND change_seq > $1
      ORDER BY change_seq LIMIT $3`,
    [after, settleMs, limit],
  );
  return rows;
}

/** When one resource existed, on the database's clock (epoch milliseconds, microsecond fractions). */
export interface SimulatedLifetime {
  resourceId: string;
  operationId: string;
  environmentId: string | null;
  /** The Workspace volume it mounts. */
  volumeId: string | null;
  createdAtMs: number;
  /** Null while it is live. */
  deletedAtMs: number | null;
}

/**
 * Every resource ever created, released ones included (rows are never removed). Rows written before
 * the database clock columns existed fall back to the provider's own epoch milliseconds.
 */
export async function listSimulatedLifetimes(q: Queryable): Promise<SimulatedLifetime[]> {
  const { rows } = await q.query<SimulatedLifetime>(
    `SELECT resource_id AS "resourceId", operation_id AS "operationId",
            owner->>'environmentId' AS "environmentId", workspace->>'volumeId' AS "volumeId",
            coalesce(extract(epoch FROM created_at) * 1000, created_at_ms)::float8 AS "createdAtMs",
            CASE WHEN deleted THEN coalesce(extract(epoch FROM deleted_at) * 1000, deleted_at_ms)::float8
            END AS "deletedAtMs"
       FROM simulated_resources ORDER BY created_at, resource_id`,
  );
  return rows;
}
