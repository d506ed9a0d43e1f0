// One page of a tenant's Environments in a project (or one run), newest first, from the listing
// columns the writer projects with every snapshot (migration 0031). Each filter has an index whose
// order is the page order, so a page reads `limit + 1` index entries whatever the table holds; the
// position is a keyset (created_at, environment_id), never an offset.
import type { Queryable } from './db.ts';

export interface ListScope {
  tenantId: string;
  projectId: string;
  /** Only this run's Environments; absent: the whole project. */
  runId?: string;
}

export interface ListFilters {
  lifecycleState?: string | undefined;
  sandboxState?: string | undefined;
  hasUnresolvedAttempts?: boolean | undefined;
  hasPendingCleanups?: boolean | undefined;
  /** Only Environments whose row changed at or after this instant. */
  updatedSince?: Date | undefined;
}

/** Where the previous page ended: its last row's creation time (µs since the epoch) and ID. */
export interface ListPosition {
  createdAtMicros: bigint;
  environmentId: string;
}

export interface ListedEnvironment {
  environmentId: string;
  projectId: string;
  runId: string;
  idempotencyKey: string;
  lifecycleGeneration: number;
  lifecycleState: string;
  sandboxState: string | null;
  leaseExpiresAt: Date | null;
  unresolvedAttempts: number;
  openCleanups: number;
  quarantined: boolean;
  revision: number;
  createdAt: Date;
  updatedAt: Date;
  createdAtMicros: string;
}

export interface ListPage {
  limit: number;
  after?: ListPosition;
}

export async function listEnvironments(
  q: Queryable,
  scope: ListScope,
  filters: ListFilters,
  page: ListPage,
): Promise<ListedEnvironment[]> {
  const { text, values } = listStatement(scope, filters, page);
  const { rows } = await q.query<ListedEnvironment>(text, values);
  return rows;
}

/** The page's statement and its parameters (bench/list.ts explains it). */
export function listStatement(
  scope: ListScope,
  filters: ListFilters,
  page: ListPage,
): { text: string; values: unknown[] } {
  const values: unknown[] = [scope.tenantId, scope.projectId];
  const where = ['tenant_id = $1', 'project_id = $2'];
  const bind = (value: unknown) => `$${values.push(value)}`;
  if (scope.runId !== undefined) where.push(`run_id = ${bind(scope.runId)}`);
  if (filters.lifecycleState !== undefined) where.push(`lifecycle_state = ${bind(filters.lifecycleState)}`);
  if (filters.sandboxState !== undefined) where.push(`sandbox_state = ${bind(filters.sandboxState)}`);
  // The partial indexes' own predicates, spelled the same so the planner can use them.
  if (filters.hasUnresolvedAttempts === true) where.push('unresolved_attempts > 0');
  if (filters.hasUnresolvedAttempts === false) where.push('unresolved_attempts = 0');
  if (filters.hasPendingCleanups === true) where.push('open_cleanups > 0');
  if (filters.hasPendingCleanups === false) where.push('open_cleanups = 0');
  if (filters.updatedSince !== undefined) where.push(`updated_at >= ${bind(filters.updatedSince)}`);
  if (page.after !== undefined) {
    const at = bind(page.after.createdAtMicros.toString());
    const id = bind(page.after.environmentId);
    where.push(
      `(created_at, environment_id) < (timestamptz 'epoch' + ${at}::bigint * interval '1 microsecond', ${id})`,
    );
  }
  const text = `SELECT environment_id AS "environmentId", project_id AS "projectId", run_id AS "runId",
            idempotency_key AS "idempotencyKey", lifecycle_generation AS "lifecycleGeneration",
            lifecycle_state AS "lifecycleState", sandbox_state AS "sandboxState",
            lease_expires_at AS "leaseExpiresAt", unresolved_attempts AS "unresolvedAttempts",
            open_cleanups AS "openCleanups", quarantined_at IS NOT NULL AS quarantined,
            revision::int AS revision, created_at AS "createdAt", updated_at AS "updatedAt",
            ((extract(epoch FROM created_at) * 1000000)::bigint)::text AS "createdAtMicros"
       FROM environments
      WHERE ${where.join(' AND ')}
      ORDER BY created_at DESC, environment_id DESC
      LIMIT ${bind(page.limit)}`;
  return { text, values };
}
