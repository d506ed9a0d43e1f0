// Environment lifecycle use cases: register, release, read. Authority is asked before any read,
// again after every asynchronous wait, and once more inside the transaction before commit.
import type { EnvironmentEvent } from '../machines/environment-events.ts';
import type { EnvironmentContext, LifecycleState } from '../machines/environment.ts';
import type { Database } from '../store/db.ts';
import type { EnvironmentRow } from '../store/environments.ts';
import { requirePermissions, requirePinnedSelection, requireSelection } from './authority.ts';
import { environmentIdOf } from './environment-id.ts';
import { ReleaseBlockedError, ReleaseConflictError } from './errors.ts';
import { readOwnedEnvironment, type EnvironmentAddress } from './owned.ts';
import type { Caller, Permission, ProjectsAuthority, RunSelectionSource } from './ports.ts';
import type { ActorRuntime } from './runtime.ts';

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
  db: Database;
  runtime: ActorRuntime<EnvironmentEvent>;
  authority: ProjectsAuthority;
  selections: RunSelectionSource;
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

  async register(
    caller: Caller,
    request: { projectId: string; runId: string; idempotencyKey: string },
  ): Promise<{ created: boolean; view: LifecycleView }> {
    const { authority, selections, runtime } = this.deps;
    const { projectId, runId, idempotencyKey } = request;
    await requirePermissions(authority, caller, projectId, writePermissions);
    const selection = await requireSelection(selections, caller, projectId, runId);
    await requirePermissions(authority, caller, projectId, writePermissions);

    const environmentId = environmentIdOf({ tenantId: caller.tenantId, projectId, runId, idempotencyKey });
    const identity = { environmentId, tenantId: caller.tenantId, projectId, runId, idempotencyKey };
    const outcome = await runtime.create(
      { ...identity, runSelectionHash: selection.selectionHash },
      { environmentId, tenantId: caller.tenantId, projectId, runId },
      {
        actor: caller.subject,
        // First write and replay alike: fresh authority and the exact pinned selection at commit.
        beforeCommit: async (tx, row) => {
          await requirePermissions(authority, caller, projectId, writePermissions, tx);
          await requirePinnedSelection(selections, caller, projectId, runId, row.runSelectionHash, tx);
        },
      },
    );
    return { created: outcome.created, view: viewOf(outcome.row) };
  }

  async release(
    caller: Caller,
    address: EnvironmentAddress,
    request: { expectedLifecycleGeneration: number; idempotencyKey: string },
  ): Promise<LifecycleView> {
    const { authority, selections, runtime } = this.deps;
    await requirePermissions(authority, caller, address.projectId, writePermissions);
    await this.#readOwned(caller, address);
    await requirePermissions(authority, caller, address.projectId, writePermissions);

    const outcome = await runtime.send(
      address.environmentId,
      { type: 'environment.release', ...request },
      {
        actor: caller.subject,
        beforeCommit: async (tx, updated) => {
          await requirePermissions(authority, caller, address.projectId, writePermissions, tx);
          await requirePinnedSelection(
            selections,
            caller,
            address.projectId,
            address.runId,
            updated.runSelectionHash,
            tx,
          );
        },
      },
    );
    if (outcome.accepted) return viewOf(outcome.row);

    // Not accepted: a replay of the release that already moved it on answers the same; any
    // other key is a conflict, because a release always targets Released exactly once.
    const context = outcome.snapshot.context as EnvironmentContext;
    if (context.release?.idempotencyKey !== request.idempotencyKey) {
      const blocking = Object.keys(context.sandbox.unresolved);
      const reconciling = context.sandbox.lease?.reconcileAttemptId;
      if (outcome.row.lifecycleState === 'Registered' && (blocking.length > 0 || reconciling != null)) {
        throw new ReleaseBlockedError(reconciling == null ? blocking : [...blocking, reconciling]);
      }
      throw new ReleaseConflictError(outcome.row.lifecycleState);
    }
    await requirePermissions(authority, caller, address.projectId, writePermissions);
    return viewOf(outcome.row);
  }

  async read(caller: Caller, address: EnvironmentAddress): Promise<LifecycleView> {
    const { authority } = this.deps;
    await requirePermissions(authority, caller, address.projectId, ['ReadProjects']);
    const row = await this.#readOwned(caller, address);
    await requirePermissions(authority, caller, address.projectId, ['ReadProjects']);
    return viewOf(row);
  }

  #readOwned(caller: Caller, address: EnvironmentAddress): Promise<EnvironmentRow> {
    return readOwnedEnvironment(this.deps.db, caller, address);
  }
}
