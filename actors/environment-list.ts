// Finding Environments: one page of the caller's tenant's Environments in a project or a run, with
// what a list needs and nothing secret. Fresh ReadProjects before and after the read, as every
// read (Guard.around). The cursor is opaque to callers: the position of the page's last row and a
// digest of the scope and filters it was given for, so it cannot be replayed against another query.
import { createHash } from 'node:crypto';
import type { SandboxState } from '../machines/environment-context.ts';
import type { LifecycleState } from '../machines/environment-context.ts';
import {
  listEnvironments,
  type ListFilters,
  type ListPosition,
  type ListedEnvironment,
} from '../store/environment-list.ts';
import { InvalidCursorError } from './errors.ts';
import { Guard, type AuthorityDeps } from './guard.ts';
import type { Caller } from './ports.ts';

export const maxListLimit = 200;
export const defaultListLimit = 50;

export interface EnvironmentSummary {
  environmentId: string;
  projectId: string;
  runId: string;
  idempotencyKey: string;
  lifecycleGeneration: number;
  state: LifecycleState;
  sandboxState: SandboxState | null;
  leaseExpiresAt: string | null;
  unresolvedAttempts: number;
  pendingCleanups: number;
  quarantined: boolean;
  revision: number;
  createdAt: string;
  updatedAt: string;
}

export interface EnvironmentPage {
  environments: EnvironmentSummary[];
  /** Pass as `cursor` for the next page; null on the last page. */
  nextCursor: string | null;
}

export interface ListRequest extends ListFilters {
  projectId: string;
  runId?: string | undefined;
  limit?: number | undefined;
  cursor?: string | undefined;
}

const summaryOf = (row: ListedEnvironment): EnvironmentSummary => ({
  environmentId: row.environmentId,
  projectId: row.projectId,
  runId: row.runId,
  idempotencyKey: row.idempotencyKey,
  lifecycleGeneration: row.lifecycleGeneration,
  state: row.lifecycleState as LifecycleState,
  sandboxState: row.sandboxState as SandboxState | null,
  leaseExpiresAt: row.leaseExpiresAt === null ? null : new Date(row.leaseExpiresAt).toISOString(),
  unresolvedAttempts: row.unresolvedAttempts,
  pendingCleanups: row.openCleanups,
  quarantined: row.quarantined,
  revision: row.revision,
  createdAt: new Date(row.createdAt).toISOString(),
  updatedAt: new Date(row.updatedAt).toISOString(),
});

/** The scope and filters a cursor belongs to, in a fixed order. */
function queryDigest(tenantId: string, request: ListRequest): string {
  const { projectId, runId, lifecycleState, sandboxState, hasUnresolvedAttempts, hasPendingCleanups } =
    request;
  const shape = [
    tenantId,
    projectId,
    runId ?? null,
    lifecycleState ?? null,
    sandboxState ?? null,
    hasUnresolvedAttempts ?? null,
    hasPendingCleanups ?? null,
    request.updatedSince?.toISOString() ?? null,
  ];
  return createHash('sha256').update(JSON.stringify(shape)).digest('base64url').slice(0, 22);
}

function encodeCursor(digest: string, last: ListedEnvironment): string {
  return Buffer.from(JSON.stringify([1, digest, last.createdAtMicros, last.environmentId])).toString(
    'base64url',
  );
}

function decodeCursor(digest: string, cursor: string): ListPosition {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw new InvalidCursorError('is not one this server gave');
  }
  if (
    !Array.isArray(parsed) ||
    parsed.length !== 4 ||
    parsed[0] !== 1 ||
    typeof parsed[1] !== 'string' ||
    typeof parsed[2] !== 'string' ||
    !/^-?[0-9]{1,19}$/.test(parsed[2]) ||
    typeof parsed[3] !== 'string' ||
    !/^env_[a-z2-7]{32}$/.test(parsed[3])
  ) {
    throw new InvalidCursorError('is not one this server gave');
  }
  if (parsed[1] !== digest) throw new InvalidCursorError('was given for another scope or other filters');
  return { createdAtMicros: BigInt(parsed[2]), environmentId: parsed[3] };
}

export class EnvironmentList {
  constructor(private readonly deps: AuthorityDeps) {}

  async list(caller: Caller, request: ListRequest): Promise<EnvironmentPage> {
    const limit = request.limit ?? defaultListLimit;
    const digest = queryDigest(caller.tenantId, request);
    // A bad cursor is refused before any upstream question: it needs none to be wrong.
    const after = request.cursor === undefined ? undefined : decodeCursor(digest, request.cursor);
    const guard = new Guard(this.deps, caller, request.projectId, ['ReadProjects']);
    const scope = {
      tenantId: caller.tenantId,
      projectId: request.projectId,
      ...(request.runId === undefined ? {} : { runId: request.runId }),
    };
    const rows = await guard.around(() =>
      listEnvironments(this.deps.db, scope, request, {
        limit: limit + 1,
        ...(after === undefined ? {} : { after }),
      }),
    );
    const shown = rows.slice(0, limit);
    const last = shown.at(-1);
    return {
      environments: shown.map(summaryOf),
      nextCursor: rows.length > limit && last !== undefined ? encodeCursor(digest, last) : null,
    };
  }
}
