// Environment lifecycle use cases: register, release, read. A write asks authority before any read
// and again inside the transaction before commit; a read asks before and after (Guard).
import type { EnvironmentContext, LifecycleState } from '../machines/environment-context.ts';
import type { EnvironmentEvent } from '../machines/environment-events.ts';
import type { Queryable } from '../store/db.ts';
import type { EnvironmentRow } from '../store/environments.ts';
import { environmentIdOf } from './environment-id.ts';
import { ReleaseBlockedError, ReleaseConflictError } from './errors.ts';
import { Guard } from './guard.ts';
import type { EnvironmentAddress } from './owned.ts';
import type { Caller, Permission, ProjectsAuthority, RunSelectionSource } from './ports.ts';
import type { ActorRuntime } from './runtime.ts';
import { readOwnedAfterChange, type EnvironmentChanges, type WaitOptions } from './wait.ts';

export interface LifecycleView {
  environmentId: string;
  tenantId: string;
  projectId: string;
  runId: string;
  lifecycleGeneration: number;
  state: LifecycleState;
  revision: number;
  createdAt: string;
  updatedAt: string;
}

export type { EnvironmentAddress } from './owned.ts';

export interface LifecycleDeps {
  db: Queryable;
  runtime: ActorRuntime<EnvironmentEvent>;
  authority: ProjectsAuthority;
  selections: RunSelectionSource;
  /** Long-poll reads (`?wait=`); without it a read answers at once. */
  changes?: EnvironmentChanges;
}

const writePermissions: readonly Permission[] = ['WriteProjects', 'ReadRunSelection'];

export function viewOf(row: EnvironmentRow): LifecycleView {
  return {
    environmentId: row.environmentId,
    tenantId: row.tenantId,
    projectId: row.projectId,
    runId: row.runId,
    lifecycleGeneration: row.lifecycleGeneration,
    state: row.lifecycleState as LifecycleState,
    revision: row.revision,
    createdAt: new Date(row.createdAt).toISOString(),
    updatedAt: new Date(row.updatedAt).toISOString(),
  };
}

export class LifecycleService {
  constructor(private readonly deps: LifecycleDeps) {}

  #guard(caller: Caller, projectId: string, required: readonly Permission[]): Guard {
    return new Guard(this.deps, caller, projectId, required);
  }

  async register(
    caller: Caller,
    request: { projectId: string; runId: string; idempotencyKey: string },
  ): Promise<{ created: boolean; view: LifecycleView }> {
    const { projectId, runId, idempotencyKey } = request;
    const guard = this.#guard(caller, projectId, writePermissions);
    // Rechecked with authority inside the commit transaction: no check between the two.
    const selection = await guard.checkWithSelection(runId);

    const environmentId = environmentIdOf({ tenantId: caller.tenantId, projectId, runId, idempotencyKey });
    const identity = { environmentId, tenantId: caller.tenantId, projectId, runId, idempotencyKey };
    // First write and replay alike: fresh authority and the exact pinned selection at commit.
    const outcome = await this.deps.runtime.create(
      { ...identity, runSelectionHash: selection.selectionHash },
      { environmentId, tenantId: caller.tenantId, projectId, runId },
      guard.commit(runId),
    );
    return { created: outcome.created, view: viewOf(outcome.row) };
  }

  async release(
    caller: Caller,
    address: EnvironmentAddress,
    request: { expectedLifecycleGeneration: number; idempotencyKey: string },
  ): Promise<LifecycleView> {
    const guard = this.#guard(caller, address.projectId, writePermissions);
    await guard.owner(address);
    const outcome = await this.deps.runtime.send(
      address.environmentId,
      { type: 'environment.release', ...request },
      guard.commit(address.runId),
    );
    if (outcome.accepted) return viewOf(outcome.row);
    // Nothing committed, so no recheck ran in the transaction: ask before answering what was read.
    await guard.check();

    // Not accepted: a replay of the release that already moved it on answers the same; any
    // other key is a conflict, because a release always targets Released exactly once.
    const context = outcome.snapshot.context as EnvironmentContext;
    if (context.release?.idempotencyKey !== request.idempotencyKey) {
      const blocking = Object.keys(context.sandbox.unresolved);
      const reconciling = context.sandbox.lease?.reconcileAttemptId;
      const cleanups = Object.keys(context.cleanups);
      if (
        outcome.row.lifecycleState === 'Registered' &&
        (blocking.length > 0 || reconciling != null || cleanups.length > 0)
      ) {
        throw new ReleaseBlockedError(reconciling == null ? blocking : [...blocking, reconciling], cleanups);
      }
      throw new ReleaseConflictError(outcome.row.lifecycleState);
    }
    return viewOf(outcome.row);
  }

  async read(caller: Caller, address: EnvironmentAddress, wait?: WaitOptions): Promise<LifecycleView> {
    const guard = this.#guard(caller, address.projectId, ['ReadProjects']);
    const { changes, db } = this.deps;
    if (wait === undefined || changes === undefined) return viewOf(await guard.environment(address));
    return viewOf(await readOwnedAfterChange(changes, db, guard, address, wait));
  }
}
