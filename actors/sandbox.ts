// Sandbox lease use cases: provision, inspect, abandon, reconcile, attempt reads. Every route needs
// WriteProjects and ReadRunSelection before the run selection is read or a provider contacted, and
// asks again after every asynchronous step and inside the transaction before commit (Guard).
import type { EnvironmentContext } from '../machines/environment-context.ts';
import type { EnvironmentEvent } from '../machines/environment-events.ts';
import type { SandboxProvider } from '../providers/provider.ts';
import { readAttempt, readAttemptsOfOperation, type AttemptRow } from '../store/attempts.ts';
import { readCleanup, readCleanupsOf, type CleanupRow } from '../store/cleanups.ts';
import type { Queryable } from '../store/db.ts';
import type { EnvironmentRow } from '../store/environments.ts';
import {
  readCurrentLease,
  readLatestLease,
  readLeaseByKey,
  readLeaseByOperation,
  type LeaseRow,
} from '../store/leases.ts';
import { claimCleanup, claimTtlMs, cleanupView, nextClaimable, type CleanupView } from './cleanups.ts';
import { operationIdOf, ownerHashOf } from './environment-id.ts';
import {
  LeaseConflictError,
  LeaseNotFoundError,
  RunSelectionChangedError,
  StaleLeaseFenceError,
} from './errors.ts';
import { Guard } from './guard.ts';
import type { EnvironmentAddress } from './owned.ts';
import type {
  AttemptRunner,
  Caller,
  NetworkPolicyVerifier,
  Permission,
  ProjectsAuthority,
  RunSelectionSource,
} from './ports.ts';
import type { ActorRuntime } from './runtime.ts';
import {
  networkPolicyVerified,
  selectProvider,
  verifyNetworkPolicy,
  verifyWorkspace,
} from './sandbox-admission.ts';
import { observeLease, type Observation } from './sandbox-observe.ts';
import { leaseView, type LeaseView } from './sandbox-view.ts';

export interface SandboxDeps {
  db: Queryable;
  runtime: ActorRuntime<EnvironmentEvent>;
  authority: ProjectsAuthority;
  selections: RunSelectionSource;
  /** What the configured provider advertises; its calls go through `runner` only. */
  provider: Pick<SandboxProvider, 'identity' | 'optionsSnapshot'>;
  runner: AttemptRunner;
  /** Verifies a network policy generation afresh, at provision and at every inspection. */
  networkPolicies: NetworkPolicyVerifier;
  /** The provider phase that counts as ready for dispatch (default `started`). */
  readyPhase?: string;
  /** How long an inspection waits for its describe (default 5 s). */
  describeTimeoutMs?: number;
  /** Lease time to live from reservation (unset: leases do not expire). */
  leaseTtlMs?: number;
}

type ProvisionEvent = Extract<EnvironmentEvent, { type: 'sandbox.provision' }>;
/** The caller's part of the machine's sandbox.provision event. */
export type ProvisionCommand = Pick<
  ProvisionEvent,
  'idempotencyKey' | 'workspace' | 'networkPolicyGeneration'
>;

export interface LeaseFences {
  resourceGeneration: number;
  providerFence: number;
}

export interface Readiness {
  readyForDispatch: boolean;
  observation: Observation | null;
  networkPolicy: { generation: number | null; verified: boolean };
}

function sameProvisionCommand(lease: LeaseRow, request: ProvisionCommand): boolean {
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

  #guard(caller: Caller, address: EnvironmentAddress, required = sandboxPermissions): Guard {
    return new Guard(this.deps, caller, address.projectId, required);
  }

  async provision(
    caller: Caller,
    address: EnvironmentAddress,
    request: ProvisionCommand,
  ): Promise<LeaseView> {
    const { db, provider, runtime, networkPolicies } = this.deps;
    const guard = this.#guard(caller, address);
    const env = await guard.environment(address);
    const replay = await readLeaseByKey(db, env.environmentId, request.idempotencyKey);
    if (replay !== null) {
      // A key names one request: reusing it for a different one would silently return the wrong lease.
      if (!sameProvisionCommand(replay, request)) {
        throw new LeaseConflictError(
          'idempotency-key-reused',
          'this idempotency key already provisioned a lease with a different Workspace or network policy generation',
        );
      }
      await guard.check();
      return leaseView(replay);
    }

    const selection = await guard.after(async () => {
      const current = await guard.selection(address.runId);
      if (current.selectionHash !== env.runSelectionHash) throw new RunSelectionChangedError(address.runId);
      selectProvider(current, provider.identity);
      await verifyWorkspace(db, env.environmentId, request.workspace);
      await verifyNetworkPolicy(
        networkPolicies,
        caller.tenantId,
        address.projectId,
        request.networkPolicyGeneration,
      );
      return current;
    });

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
        requestedBy: caller.subject,
        expiresAt:
          this.deps.leaseTtlMs === undefined
            ? null
            : new Date(Date.now() + this.deps.leaseTtlMs).toISOString(),
      },
      guard.commit(address.runId),
    );
    const lease = await readLeaseByKey(db, env.environmentId, request.idempotencyKey);
    if (lease !== null) {
      if (!outcome.accepted) await guard.check();
      return leaseView(lease);
    }
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

  /** The current lease, or the newest one when none is current. */
  async current(caller: Caller, address: EnvironmentAddress): Promise<LeaseRow> {
    const guard = this.#guard(caller, address);
    const env = await guard.environment(address);
    return guard.after(() => this.#currentOrLatest(env));
  }

  async #currentOrLatest(env: EnvironmentRow): Promise<LeaseRow> {
    const lease =
      (await readCurrentLease(this.deps.db, env.environmentId)) ??
      (await readLatestLease(this.deps.db, env.environmentId));
    if (lease === null) throw new LeaseNotFoundError('the Environment has no sandbox lease');
    return lease;
  }

  /**
   * The lease and whether it is ready for dispatch: Active, observed exactly (a describe attempt run
   * now through the one runner, awaited with a bounded wait) in the ready phase and not finished,
   * and the requested network policy generation verified afresh.
   */
  async inspect(
    caller: Caller,
    address: EnvironmentAddress,
    networkPolicyGeneration: number | undefined,
  ): Promise<{ lease: LeaseView } & Readiness> {
    const { db, networkPolicies, runtime, runner } = this.deps;
    const guard = this.#guard(caller, address);
    const env = await guard.environment(address);
    const lease = await this.#currentOrLatest(env);
    const observation = await guard.after(() =>
      observeLease(
        { runtime, runner, describeTimeoutMs: this.deps.describeTimeoutMs ?? 5_000 },
        lease,
        guard.commit(address.runId),
      ),
    );
    const verified =
      networkPolicyGeneration !== undefined &&
      networkPolicyGeneration === lease.networkPolicyGeneration &&
      (await networkPolicyVerified(networkPolicies, env.tenantId, env.projectId, networkPolicyGeneration));
    const after = (await readLeaseByOperation(db, lease.operationId)) ?? lease;
    // Traffic stops when the Pod answering is not the one the lease mapped (a reused name, or
    // status that is stale): never ready, and the observation says why.
    const mapped = after.resource?.placement['podUid'];
    const replaced =
      observation?.podUid !== undefined && mapped !== undefined && observation.podUid !== mapped;
    const seen: Observation | null =
      replaced && observation !== null
        ? {
            ...observation,
            error: {
              code: 'pod-replaced',
              message: `the Pod answering (UID ${observation.podUid}) is not the one this lease mapped (UID ${mapped}); a name was reused or status is stale`,
            },
          }
        : observation;
    // An expired lease is never ready, fenced yet or not: its time is up.
    const expired =
      after.expiredAt !== null || (after.expiresAt !== null && new Date(after.expiresAt) <= new Date());
    const ready =
      lease.state === 'Active' &&
      !expired &&
      seen?.exact === true &&
      seen.finished === null &&
      seen.phase === (this.deps.readyPhase ?? 'started') &&
      !replaced &&
      verified;
    await guard.check();
    return {
      lease: leaseView(after),
      readyForDispatch: ready,
      observation: seen,
      networkPolicy: { generation: networkPolicyGeneration ?? null, verified },
    };
  }

  async attempts(caller: Caller, address: EnvironmentAddress, operationId: string): Promise<AttemptRow[]> {
    const guard = this.#guard(caller, address, ['ReadRunSelection']);
    const env = await guard.environment(address);
    return guard.after(async () => {
      const lease = await readLeaseByOperation(this.deps.db, operationId);
      if (lease?.environmentId !== env.environmentId)
        throw new LeaseNotFoundError(`no operation ${operationId} here`);
      return readAttemptsOfOperation(this.deps.db, operationId);
    });
  }

  async abandon(
    caller: Caller,
    address: EnvironmentAddress,
    request: LeaseFences & { idempotencyKey: string },
  ): Promise<LeaseView> {
    const guard = this.#guard(caller, address);
    const env = await guard.environment(address);
    const lease = await this.#fenced(env, request);
    const outcome = await this.deps.runtime.send(
      env.environmentId,
      { type: 'sandbox.abandon', ...request },
      guard.commit(address.runId),
    );
    const after = await this.#fenced(env, request, lease);
    if (outcome.accepted) return leaseView(after);
    const context = outcome.snapshot.context as EnvironmentContext;
    if (context.sandbox.lease?.release?.idempotencyKey === request.idempotencyKey) {
      await guard.check();
      return leaseView(after);
    }
    throw new LeaseConflictError(
      'lease-not-abandonable',
      `the lease is ${after.state} and cannot be abandoned now`,
    );
  }

  /**
   * Returns the lease, whether a reconciliation was started by this call, and the late-resource
   * cleanup item it claimed and released (at most one per call), as it stands after that.
   */
  async reconcile(
    caller: Caller,
    address: EnvironmentAddress,
    request: LeaseFences & { operationId: string; networkPolicyGeneration?: number | undefined },
  ): Promise<{
    started: boolean;
    lease: LeaseView;
    lateResourceCleanup: CleanupView | null;
    networkPolicy: { generation: number; verified: boolean } | null;
  }> {
    const guard = this.#guard(caller, address);
    const env = await guard.environment(address);
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
    // A terminal lease has nothing to recover: it answers with its result (after any cleanup).
    let started = false;
    let after = named;
    const { networkPolicyGeneration, ...fences } = request;
    if (leaseView(named).current) {
      const outcome = await this.deps.runtime.send(
        env.environmentId,
        { type: 'sandbox.reconcile', ...fences },
        guard.commit(address.runId),
      );
      started = outcome.accepted;
      after = (await readLeaseByOperation(this.deps.db, request.operationId)) ?? named;
    }
    const lateResourceCleanup = await this.#cleanOne(env, guard, address.runId);
    // Asked for: is this generation the lease's and still the project's policy in force, now?
    const networkPolicy =
      networkPolicyGeneration === undefined
        ? null
        : {
            generation: networkPolicyGeneration,
            verified:
              networkPolicyGeneration === after.networkPolicyGeneration &&
              (await networkPolicyVerified(
                this.deps.networkPolicies,
                env.tenantId,
                env.projectId,
                networkPolicyGeneration,
              )),
          };
    await guard.check();
    return { started, lease: leaseView(after), lateResourceCleanup, networkPolicy };
  }

  /** Claims one pending late resource of the Environment under the current owner fence, and releases it now. */
  async #cleanOne(env: EnvironmentRow, guard: Guard, runId: string): Promise<CleanupView | null> {
    const { db, runtime, runner } = this.deps;
    const now = new Date();
    const item = await nextClaimable(db, env.environmentId, now);
    if (item === null) return null;
    const timeoutMs = this.deps.describeTimeoutMs ?? 5_000;
    const attemptId = await claimCleanup(
      { db, runtime },
      item,
      now,
      claimTtlMs(timeoutMs),
      guard.commit(runId),
    );
    if (attemptId !== null) await guard.after(() => runner.runNow(attemptId, timeoutMs));
    const row = await readCleanup(db, item.cleanupId);
    return row === null ? null : this.#cleanupView(row);
  }

  async #cleanupView(row: CleanupRow): Promise<CleanupView> {
    const attempt =
      row.releaseAttemptId === null ? null : await readAttempt(this.deps.db, row.releaseAttemptId);
    return cleanupView(row, attempt);
  }

  /** The Environment's late-resource cleanup records, oldest first; never calls a provider. */
  async cleanups(caller: Caller, address: EnvironmentAddress): Promise<CleanupView[]> {
    const guard = this.#guard(caller, address, ['ReadRunSelection']);
    const env = await guard.environment(address);
    return guard.after(async () => {
      const rows = await readCleanupsOf(this.deps.db, env.environmentId);
      return Promise.all(rows.map((row) => this.#cleanupView(row)));
    });
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
