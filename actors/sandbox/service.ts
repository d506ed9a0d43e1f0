// Sandbox lease use cases: provision, inspect, abandon, reconcile, attempt reads. Every route needs
// WriteProjects and ReadRunSelection before the run selection is read or a provider contacted, and
// asks again inside the transaction of every commit and after its last read or wait before it
// answers (Guard): once per moment, not once per step.
import type { EnvironmentContext, RenewalContext } from '../../machines/environment-context.ts';
import type { EnvironmentEvent } from '../../machines/environment-events.ts';
import type { SandboxProvider } from '../../providers/provider.ts';
import { readAttempt, readAttemptsOfOperation, type AttemptRow } from '../../store/attempts.ts';
import { readCleanup, readCleanupsOf, type CleanupRow } from '../../store/cleanups.ts';
import { readEnvironment, type EnvironmentRow } from '../../store/environments.ts';
import {
  readCurrentLease,
  readLatestLease,
  readLeaseByKey,
  readLeaseByOperation,
  type LeaseRow,
} from '../../store/leases.ts';
import { profileRecordOf, type BuildTestProfileRef } from '../build-test/lease-profile.ts';
import { claimCleanup, claimTtlMs, cleanupView, nextClaimable, type CleanupView } from '../cleanups.ts';
import { operationIdOf, ownerHashOf } from '../environment-id.ts';
import {
  ActorError,
  LeaseConflictError,
  LeaseNotFoundError,
  RunSelectionChangedError,
  StaleLeaseFenceError,
} from '../errors.ts';
import { Guard } from '../guard.ts';
import type { EnvironmentAddress } from '../owned.ts';
import type { Caller, Permission, WorkspaceStorage } from '../ports.ts';
import { providerApplicability } from './provider-applicability.ts';
import {
  networkPolicyVerified,
  selectProvider,
  verifyNetworkPolicy,
  verifyWorkspace,
  verifyWorkspaceRecord,
} from './admission.ts';
import { isExpired } from './readiness.ts';
import { leaseView, type LeaseView } from './view.ts';
import {
  SandboxInspection,
  currentOrLatestLease,
  type InspectionDeps,
  type Readiness,
} from './inspection.ts';

import type { WaitOptions } from '../wait.ts';

export type { Readiness };

/** The inspection's dependencies (actors/sandbox/inspection.ts), and what admission needs besides. */
export interface SandboxDeps extends InspectionDeps {
  /** What the configured provider advertises; its calls go through `runner` only. */
  provider: Pick<SandboxProvider, 'identity' | 'optionsSnapshot'>;
  /** Lease time to live from reservation (unset: leases do not expire). */
  leaseTtlMs?: number;
  /** Workspace storage read back before a lease is reserved (default: the embedded table over `db`). */
  workspaceStorage?: WorkspaceStorage;
  /** The AcceptedBuildTestProfile in effect: a new lease records it and keeps it (unset: none). */
  buildTest?: { profile: BuildTestProfileRef };
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
  readonly #inspection: SandboxInspection;

  constructor(private readonly deps: SandboxDeps) {
    this.#inspection = new SandboxInspection(deps, sandboxPermissions);
  }

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
    const env = await guard.owner(address);
    const replay = await this.#replayedProvision(env, request, guard);
    if (replay !== null) return replay;

    // What the lease will record of its provider: the checks below are made against it.
    const providerOptions = { ...provider.optionsSnapshot() };
    // Asked again, with the selection, inside the commit transaction after these waits.
    const admitted = (async () => {
      const current = await guard.selection(address.runId);
      if (current.selectionHash !== env.runSelectionHash) throw new RunSelectionChangedError(address.runId);
      selectProvider(current, provider.identity);
      // A check the provider's capabilities do not call for is skipped, and nothing claims it passed.
      const applies = providerApplicability(provider.identity);
      if (applies.workspaceStorage) {
        await verifyWorkspace(db, env, request.workspace, { providerOptions }, this.deps.workspaceStorage);
      } else {
        await verifyWorkspaceRecord(db, env, request.workspace);
      }
      if (applies.networkPolicy) {
        await verifyNetworkPolicy(
          networkPolicies,
          caller.tenantId,
          address.projectId,
          request.networkPolicyGeneration,
          { providerOptions },
        );
      }
      return current;
    })();
    // A twin of this request (the same key) may commit between the replay read above and these
    // checks: the Workspace is then attached to its lease and admission refuses. Its lease is this
    // request's answer, as a replay; any other refusal stands.
    let selection: Awaited<typeof admitted>;
    try {
      selection = await admitted;
    } catch (error) {
      const twin = error instanceof ActorError ? await this.#replayedProvision(env, request, guard) : null;
      if (twin !== null) return twin;
      throw error;
    }

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
        providerOptions,
        runSelection: { ...selection },
        requestedBy: caller.subject,
        expiresAt:
          this.deps.leaseTtlMs === undefined
            ? null
            : new Date(Date.now() + this.deps.leaseTtlMs).toISOString(),
        // Written with the lease row in this transition's transaction: the profile this lease accepted.
        buildTestProfile: profileRecordOf(this.deps.buildTest?.profile),
      },
      guard.commit(address.runId),
    );
    const lease = await readLeaseByKey(db, env.environmentId, request.idempotencyKey);
    // Nothing committed, so no recheck ran in the transaction: ask before answering.
    if (!outcome.accepted) await guard.check();
    if (lease !== null) return leaseView(lease);
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

  /** The lease this key already provisioned, answered as a replay (authority asked first). */
  async #replayedProvision(
    env: EnvironmentRow,
    request: ProvisionCommand,
    guard: Guard,
  ): Promise<LeaseView | null> {
    const replay = await readLeaseByKey(this.deps.db, env.environmentId, request.idempotencyKey);
    if (replay === null) return null;
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

  /** The current lease, or the newest one when none is current. */
  async current(caller: Caller, address: EnvironmentAddress): Promise<LeaseRow> {
    const guard = this.#guard(caller, address);
    const env = await guard.owner(address);
    return guard.after(() => currentOrLatestLease(this.deps.db, env));
  }

  /** The lease and its readiness for dispatch (actors/sandbox/inspection.ts). */
  inspect(
    caller: Caller,
    address: EnvironmentAddress,
    networkPolicyGeneration: number | undefined,
    wait?: WaitOptions,
  ): Promise<{ lease: LeaseView } & Readiness> {
    return this.#inspection.inspect(caller, address, networkPolicyGeneration, wait);
  }

  /**
   * Renews the Active, unexpired lease with these fences to now plus the configured time to live:
   * the machine opens a renew attempt (the provider moves its term first), the runner runs it now,
   * and the expiry moves once the provider confirmed. The idempotency key names the renewal: a
   * repeat answers the same renewal as it stands, without a second call.
   */
  async renew(
    caller: Caller,
    address: EnvironmentAddress,
    request: LeaseFences & { idempotencyKey: string },
  ): Promise<{ lease: LeaseView; renewal: RenewalContext }> {
    const { db, runtime, runner } = this.deps;
    const guard = this.#guard(caller, address, ['WriteProjects']);
    const env = await guard.owner(address);
    const lease = await this.#fenced(env, request);
    const renewalOf = (context: unknown) =>
      (context as EnvironmentContext | undefined)?.sandbox.lease?.renewal ?? null;
    const persisted = async () =>
      ((await readEnvironment(db, env.environmentId))?.snapshot as { context?: unknown } | undefined)
        ?.context;
    const ttl = this.deps.leaseTtlMs;
    if (ttl === undefined || lease.expiresAt === null) {
      throw new LeaseConflictError(
        'lease-does-not-expire',
        'this lease has no expiry to renew (no lease time to live is configured)',
      );
    }
    const now = new Date();
    const outcome = await runtime.send(
      env.environmentId,
      {
        type: 'sandbox.renew',
        resourceGeneration: request.resourceGeneration,
        providerFence: request.providerFence,
        idempotencyKey: request.idempotencyKey,
        expiresAt: new Date(now.getTime() + (ttl ?? 0)).toISOString(),
        at: now.toISOString(),
      },
      guard.commit(address.runId),
    );
    let renewal = renewalOf(outcome.snapshot.context);
    if (renewal?.idempotencyKey !== request.idempotencyKey) {
      const refusal = this.#renewRefusal(await this.#fenced(env, request, lease), renewal, now);
      await guard.check();
      throw refusal;
    }
    const waits = outcome.accepted && renewal.state === 'Pending';
    if (waits) {
      await runner.runNow(renewal.attemptId ?? '', this.deps.describeTimeoutMs ?? 5_000);
      renewal = renewalOf(await persisted()) ?? renewal;
    }
    const after = (await readLeaseByOperation(db, lease.operationId)) ?? lease;
    // After the provider's answer, or when nothing committed (no recheck ran in a transaction).
    if (waits || !outcome.accepted) await guard.check();
    if (renewal.state === 'Failed') {
      throw new LeaseConflictError(
        'renew-failed',
        `the renewal was not confirmed (${renewal.error?.code ?? 'failed'}: ${renewal.error?.message ?? ''}); the lease still expires at ${after.expiresAt?.toISOString() ?? 'never'}`,
      );
    }
    return { lease: leaseView(after), renewal };
  }

  #renewRefusal(lease: LeaseRow, renewal: RenewalContext | null, now: Date): LeaseConflictError {
    if (lease.state !== 'Active')
      return new LeaseConflictError('lease-not-active', `the lease is ${lease.state}`);
    if (isExpired(lease, now)) {
      return new LeaseConflictError('lease-expired', 'the lease expired; an expired lease is not renewed');
    }
    if (renewal?.state === 'Pending') {
      return new LeaseConflictError(
        'renewal-in-progress',
        'another renewal of this lease is in flight; ask again once it answered',
      );
    }
    return new LeaseConflictError('renew-refused', 'the lease cannot be renewed now');
  }

  async attempts(caller: Caller, address: EnvironmentAddress, operationId: string): Promise<AttemptRow[]> {
    const guard = this.#guard(caller, address, ['ReadRunSelection']);
    const env = await guard.owner(address);
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
    const env = await guard.owner(address);
    const lease = await this.#fenced(env, request);
    const outcome = await this.deps.runtime.send(
      env.environmentId,
      { type: 'sandbox.abandon', ...request },
      guard.commit(address.runId),
    );
    const after = await this.#fenced(env, request, lease);
    if (outcome.accepted) return leaseView(after);
    // Nothing committed, so no recheck ran in the transaction: ask before answering.
    await guard.check();
    const context = outcome.snapshot.context as EnvironmentContext;
    if (context.sandbox.lease?.release?.idempotencyKey === request.idempotencyKey) {
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
    const env = await guard.owner(address);
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
                after,
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
    // The reconcile's closing check follows this wait.
    if (attemptId !== null) await runner.runNow(attemptId, timeoutMs);
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
    const env = await guard.owner(address);
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
