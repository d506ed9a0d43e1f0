// Sandbox lease use cases: provision, inspect, abandon, reconcile, attempt reads. Every route needs
// WriteProjects and ReadRunSelection before the run selection is read or a provider contacted, and
// asks again after every asynchronous step and inside the transaction before commit.
import type { EnvironmentEvent } from '../machines/environment-events.ts';
import type { SandboxProvider, WorkspaceMount } from '../providers/provider.ts';
import { readAttemptsOfOperation, type AttemptRow } from '../store/attempts.ts';
import type { Database } from '../store/db.ts';
import type { EnvironmentRow } from '../store/environments.ts';
import {
  readCurrentLease,
  readLatestLease,
  readLeaseByKey,
  readLeaseByOperation,
  type LeaseRow,
} from '../store/leases.ts';
import { requirePermissions, requirePinnedSelection, requireSelection } from './authority.ts';
import { operationIdOf, ownerHashOf } from './environment-id.ts';
import {
  LeaseConflictError,
  LeaseNotFoundError,
  RunSelectionChangedError,
  StaleLeaseFenceError,
} from './errors.ts';
import { readOwnedEnvironment, type EnvironmentAddress } from './owned.ts';
import type {
  Caller,
  NetworkPolicyVerifier,
  Permission,
  ProjectsAuthority,
  RunSelectionSource,
} from './ports.ts';
import type { ActorRuntime, CommitContext } from './runtime.ts';
import { selectProvider, verifyNetworkPolicy, verifyWorkspace } from './sandbox-admission.ts';
import { inspectLease, type Readiness } from './sandbox-inspect.ts';
import { leaseView, type LeaseView } from './sandbox-view.ts';

export interface SandboxDeps {
  db: Database;
  runtime: ActorRuntime<EnvironmentEvent>;
  authority: ProjectsAuthority;
  selections: RunSelectionSource;
  provider: SandboxProvider;
  /** Verifies a network policy generation afresh, at provision and at every inspection. */
  networkPolicies: NetworkPolicyVerifier;
  /** The provider phase that counts as ready for dispatch (default `started`). */
  readyPhase?: string;
  describeTimeoutMs?: number;
}

export interface ProvisionRequest {
  idempotencyKey: string;
  workspace: WorkspaceMount;
  networkPolicyGeneration: number;
}

export interface LeaseFences {
  resourceGeneration: number;
  providerFence: number;
}

function sameProvisionRequest(lease: LeaseRow, request: ProvisionRequest): boolean {
  const a = lease.workspace;
  const b = request.workspace;
  return (
    lease.networkPolicyGeneration === request.networkPolicyGeneration &&
    a.volumeId === b.volumeId &&
    a.resourceGeneration === b.resourceGeneration &&
    a.dataGeneration === b.dataGeneration &&
    a.mountPath === b.mountPath &&
    a.readOnly === b.readOnly
  );
}

const sandboxPermissions: readonly Permission[] = ['WriteProjects', 'ReadRunSelection'];

export class SandboxService {
  constructor(private readonly deps: SandboxDeps) {}

  /** Fresh authority, then the owned Environment, then fresh authority again. */
  async #admit(
    caller: Caller,
    address: EnvironmentAddress,
    required = sandboxPermissions,
  ): Promise<EnvironmentRow> {
    await requirePermissions(this.deps.authority, caller, address.projectId, required);
    const env = await readOwnedEnvironment(this.deps.db, caller, address);
    await requirePermissions(this.deps.authority, caller, address.projectId, required);
    return env;
  }

  #commit(caller: Caller, address: EnvironmentAddress): CommitContext {
    const { authority, selections } = this.deps;
    return {
      actor: caller.subject,
      beforeCommit: async (tx, row) => {
        await requirePermissions(authority, caller, address.projectId, sandboxPermissions, tx);
        await requirePinnedSelection(
          selections,
          caller,
          address.projectId,
          address.runId,
          row.runSelectionHash,
          tx,
        );
      },
    };
  }

  async provision(
    caller: Caller,
    address: EnvironmentAddress,
    request: ProvisionRequest,
  ): Promise<LeaseView> {
    const { db, selections, provider, runtime, networkPolicies } = this.deps;
    const env = await this.#admit(caller, address);
    const replay = await readLeaseByKey(db, env.environmentId, request.idempotencyKey);
    if (replay !== null) {
      // A key names one request: reusing it for a different one would silently return the wrong lease.
      if (!sameProvisionRequest(replay, request)) {
        throw new LeaseConflictError(
          'idempotency-key-reused',
          'this idempotency key already provisioned a lease with a different Workspace or network policy generation',
        );
      }
      return this.#replay(caller, address, replay);
    }

    const selection = await requireSelection(selections, caller, address.projectId, address.runId);
    if (selection.selectionHash !== env.runSelectionHash) throw new RunSelectionChangedError(address.runId);
    selectProvider(selection, provider.identity);
    await verifyWorkspace(db, env.environmentId, request.workspace);
    await verifyNetworkPolicy(
      networkPolicies,
      caller.tenantId,
      address.projectId,
      request.networkPolicyGeneration,
    );
    await requirePermissions(this.deps.authority, caller, address.projectId, sandboxPermissions);

    const outcome = await runtime.send(
      env.environmentId,
      {
        type: 'sandbox.provision',
        operationId: operationIdOf(env.environmentId, request.idempotencyKey),
        idempotencyKey: request.idempotencyKey,
        ownerHash: ownerHashOf(env),
        workspace: request.workspace,
        networkPolicyGeneration: request.networkPolicyGeneration,
        providerIdentity: { ...provider.identity },
        providerOptions: { ...provider.optionsSnapshot() },
        runSelection: { ...selection },
      },
      this.#commit(caller, address),
    );
    const lease = await readLeaseByKey(db, env.environmentId, request.idempotencyKey);
    if (lease !== null) return outcome.accepted ? leaseView(lease) : this.#replay(caller, address, lease);
    if (outcome.row.lifecycleState !== 'Registered') {
      throw new LeaseConflictError(
        'environment-not-registered',
        `the Environment is ${outcome.row.lifecycleState}`,
      );
    }
    throw new LeaseConflictError(
      'lease-conflict',
      'another lease is current for this Environment; release or abandon it before provisioning again',
    );
  }

  async #replay(caller: Caller, address: EnvironmentAddress, lease: LeaseRow): Promise<LeaseView> {
    await requirePermissions(this.deps.authority, caller, address.projectId, sandboxPermissions);
    return leaseView(lease);
  }

  /** The current lease, or the newest one when none is current. */
  async current(caller: Caller, address: EnvironmentAddress): Promise<LeaseRow> {
    const env = await this.#admit(caller, address);
    const lease =
      (await readCurrentLease(this.deps.db, env.environmentId)) ??
      (await readLatestLease(this.deps.db, env.environmentId));
    if (lease === null) throw new LeaseNotFoundError('the Environment has no sandbox lease');
    return lease;
  }

  async inspect(
    caller: Caller,
    address: EnvironmentAddress,
    networkPolicyGeneration: number | undefined,
  ): Promise<{ lease: LeaseView } & Readiness> {
    const env = await this.#admit(caller, address);
    const lease = await this.current(caller, address);
    const readiness = await inspectLease(
      {
        ...this.deps,
        readyPhase: this.deps.readyPhase ?? 'started',
        describeTimeoutMs: this.deps.describeTimeoutMs ?? 5_000,
      },
      env,
      lease,
      networkPolicyGeneration,
      caller.subject,
    );
    const after = (await readLeaseByOperation(this.deps.db, lease.operationId)) ?? lease;
    await requirePermissions(this.deps.authority, caller, address.projectId, sandboxPermissions);
    return { lease: leaseView(after), ...readiness };
  }

  async attempts(caller: Caller, address: EnvironmentAddress, operationId: string): Promise<AttemptRow[]> {
    const env = await this.#admit(caller, address, ['ReadRunSelection']);
    const lease = await readLeaseByOperation(this.deps.db, operationId);
    if (lease?.environmentId !== env.environmentId)
      throw new LeaseNotFoundError(`no operation ${operationId} here`);
    const attempts = await readAttemptsOfOperation(this.deps.db, operationId);
    await requirePermissions(this.deps.authority, caller, address.projectId, ['ReadRunSelection']);
    return attempts;
  }

  async abandon(
    caller: Caller,
    address: EnvironmentAddress,
    request: LeaseFences & { idempotencyKey: string },
  ): Promise<LeaseView> {
    const env = await this.#admit(caller, address);
    const lease = await this.#fenced(env, request);
    const outcome = await this.deps.runtime.send(
      env.environmentId,
      { type: 'sandbox.abandon', ...request },
      this.#commit(caller, address),
    );
    const after = await this.#fenced(env, request, lease);
    if (outcome.accepted) return leaseView(after);
    const context = outcome.snapshot.context as {
      sandbox: { lease: { release: { idempotencyKey: string | null } | null } | null };
    };
    if (context.sandbox.lease?.release?.idempotencyKey === request.idempotencyKey)
      return this.#replay(caller, address, after);
    throw new LeaseConflictError(
      'lease-not-abandonable',
      `the lease is ${after.state} and cannot be abandoned now`,
    );
  }

  /** Returns the lease and whether a reconciliation was started by this call. */
  async reconcile(
    caller: Caller,
    address: EnvironmentAddress,
    request: LeaseFences & { operationId: string },
  ): Promise<{ started: boolean; lease: LeaseView }> {
    const env = await this.#admit(caller, address);
    const named = await readLeaseByOperation(this.deps.db, request.operationId);
    if (named?.environmentId !== env.environmentId)
      throw new LeaseNotFoundError(`no operation ${request.operationId} here`);
    if (
      named.resourceGeneration !== request.resourceGeneration ||
      named.providerFence !== request.providerFence
    ) {
      throw new StaleLeaseFenceError(
        { resourceGeneration: named.resourceGeneration, providerFence: named.providerFence },
        'the operation has another resource generation or provider fence',
      );
    }
    // Terminal leases have nothing to recover: answer with their result.
    if (!leaseView(named).current) return { started: false, lease: leaseView(named) };
    const outcome = await this.deps.runtime.send(
      env.environmentId,
      { type: 'sandbox.reconcile', ...request },
      this.#commit(caller, address),
    );
    const after = (await readLeaseByOperation(this.deps.db, request.operationId)) ?? named;
    await requirePermissions(this.deps.authority, caller, address.projectId, sandboxPermissions);
    return { started: outcome.accepted, lease: leaseView(after) };
  }

  /** The current lease must carry exactly these fences; anything else is stale and changes nothing. */
  async #fenced(env: EnvironmentRow, fences: LeaseFences, fallback?: LeaseRow): Promise<LeaseRow> {
    const lease =
      (await readCurrentLease(this.deps.db, env.environmentId)) ??
      fallback ??
      (await readLatestLease(this.deps.db, env.environmentId));
    if (lease === null) throw new StaleLeaseFenceError(null, 'the Environment has no current lease');
    if (
      lease.resourceGeneration !== fences.resourceGeneration ||
      lease.providerFence !== fences.providerFence
    ) {
      throw new StaleLeaseFenceError(
        { resourceGeneration: lease.resourceGeneration, providerFence: lease.providerFence },
        `the current lease is resource generation ${lease.resourceGeneration}, provider fence ${lease.providerFence}`,
      );
    }
    return lease;
  }
}
