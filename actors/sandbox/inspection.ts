// Inspecting a sandbox lease: the lease and its readiness for dispatch as conditions
// (actors/sandbox/readiness.ts), and the long-poll (`?wait=`) that answers at the next transition,
// or, for an Active lease that is not ready, looks again after 10 ms, 20 ms, 40 ms … up to
// `activeRecheckMs` (its readiness moves without a transition), each pause cut short by a
// transition. Fresh authority before the reads and after the last one (Guard).
import { setTimeout as pause } from 'node:timers/promises';
import type { AgentHostConfiguration } from '../../config/agenthost.ts';
import type { EnvironmentEvent } from '../../machines/environment-events.ts';
import type { Queryable } from '../../store/db.ts';
import { readEnvironment, type EnvironmentRow } from '../../store/environments.ts';
import {
  readCurrentLease,
  readLatestLease,
  readLeaseByOperation,
  type LeaseRow,
} from '../../store/leases.ts';
import { readLatestVerifiedFlushOfLease } from '../../store/workspace-flushes.ts';
import { readVolume } from '../../store/workspaces.ts';
import { readOpenWorkspaceConflicts } from '../../store/cleanups.ts';
import { ActorError, LeaseNotFoundError } from '../errors.ts';
import { Guard } from '../guard.ts';
import { readOwnedEnvironment, type EnvironmentAddress } from '../owned.ts';
import type {
  AgentHost,
  AttemptRunner,
  Caller,
  NetworkPolicyVerifier,
  Permission,
  ProjectsAuthority,
  RunSelectionSource,
} from '../ports.ts';
import type { ActorRuntime } from '../runtime.ts';
import { recordedApplicability } from './provider-applicability.ts';
import { profileEvidenceOf } from './readiness-profile.ts';
import { networkPolicyVerified } from './admission.ts';
import { observeLease, type Observation } from './observe.ts';
import {
  agentHostTargetOf,
  isRunning,
  readinessConditions,
  recordedRequestOf,
  sameLease,
  type ReadinessCondition,
} from './readiness.ts';
import { leaseView, type LeaseView } from './view.ts';
import { maxWaitMs, type EnvironmentChanges, type WaitOptions } from '../wait.ts';

/** The first pause of a long-poll inspection between two looks at an Active lease not yet ready. */
const FIRST_RECHECK_MS = 10;

/** How an inspection is made. */
interface InspectHow {
  /** Answering a transition the caller waited for (see `unobserved` in #inspectOnce). */
  atTransition: boolean;
  /** The owned Environment, read right after a fresh authority check with no wait since. */
  checked?: EnvironmentRow;
}

const AT_TRANSITION: InspectHow = { atTransition: true };

/** The observation of an answer given at the transition to Active, before any describe. */
const notYetObserved: Observation = {
  exact: false,
  phase: null,
  finished: null,
  error: {
    code: 'not-yet-observed',
    message:
      'answered at the transition to Active, before any describe: ask again (after=environmentRevision) for an exact observation',
  },
};

export interface InspectionDeps {
  db: Queryable;
  runtime: ActorRuntime<EnvironmentEvent>;
  authority: ProjectsAuthority;
  selections: RunSelectionSource;
  runner: AttemptRunner;
  /** Verifies a network policy generation afresh, at provision and at every inspection. */
  networkPolicies: NetworkPolicyVerifier;
  /** The AgentHost port: the configuration handshake and readiness evidence of a sandbox's Host. */
  agentHost: AgentHost;
  /** The immutable AgentHost configuration a runtime profile the Host names must still match. */
  agentHostProfiles?: AgentHostConfiguration;
  /** How long an inspection waits for its describe (default 5 s). */
  describeTimeoutMs?: number;
  /** Long-poll inspections (`?wait=`); without it an inspection runs at once. */
  changes?: EnvironmentChanges;
  /**
   * The longest pause between two looks of a long-poll inspection of an Active lease that is not
   * ready (250 ms); the first pause is 10 ms, doubled after each look.
   */
  activeRecheckMs?: number;
  /**
   * Told of every answer ready for dispatch, after its closing check (the composition root times a
   * lease's first: workers/lease-timings.ts). It must not throw or wait: the answer does not wait on it.
   */
  onReady?: (lease: LeaseRow) => void;
}

export interface Readiness {
  /**
   * The Environment's revision when the answer was read: what a long-polling caller passes as
   * `after` to wait for the next change.
   */
  environmentRevision: number;
  readyForDispatch: boolean;
  /**
   * The Environment's phase for this lease: the provider's (which is `configured` only where the
   * provider's describe carries the guest's signal), or `configured` once ready.
   */
  phase: string | null;
  conditions: ReadinessCondition[];
  observation: Observation | null;
  networkPolicy: { generation: number | null; verified: boolean };
}

/** The current lease, or the newest one when none is current. */
export async function currentOrLatestLease(db: Queryable, env: EnvironmentRow): Promise<LeaseRow> {
  const lease =
    (await readCurrentLease(db, env.environmentId)) ?? (await readLatestLease(db, env.environmentId));
  if (lease === null) throw new LeaseNotFoundError('the Environment has no sandbox lease');
  return lease;
}

export class SandboxInspection {
  constructor(
    private readonly deps: InspectionDeps,
    private readonly permissions: readonly Permission[],
  ) {}

  /**
   * The lease and its readiness for dispatch, as conditions (actors/sandbox/readiness.ts): an exact
   * describe run now through the one runner (bounded wait), the AgentHost's configuration evidence,
   * the requested network policy generation verified afresh and the Workspace attachment, all
   * against the same lease, re-read after every observation.
   */
  async inspect(
    caller: Caller,
    address: EnvironmentAddress,
    networkPolicyGeneration: number | undefined,
    wait?: WaitOptions,
  ): Promise<{ lease: LeaseView } & Readiness> {
    const { db, changes } = this.deps;
    if (changes === undefined || wait === undefined) {
      return this.#inspectOnce(caller, address, networkPolicyGeneration);
    }
    const deadline = Date.now() + Math.min(wait.waitMs, maxWaitMs);
    const guard = new Guard(this.deps, caller, address.projectId, this.permissions);
    await guard.check();
    const before = await readOwnedEnvironment(db, guard.caller, address);
    const after = wait.after ?? before.revision;
    // Every state but Active changes only by a transition: wait for one past `after`, then answer
    // with what it shows (an Active lease not yet ready included: the caller sees it at once, and
    // asks again for readiness).
    if ((await readCurrentLease(db, before.environmentId))?.state !== 'Active') {
      await changes.readAfterChange(
        address.environmentId,
        { waitMs: Math.max(0, deadline - Date.now()), after },
        () => readOwnedEnvironment(db, guard.caller, address),
        (row) => row.revision,
      );
      return this.#inspectOnce(caller, address, networkPolicyGeneration, AT_TRANSITION);
    }
    // A transition the caller has not seen (its lease became Active, say): that is the answer. The
    // authority was asked just now, before these reads: the answer goes on from them.
    if (before.revision > after) {
      return this.#inspectOnce(caller, address, networkPolicyGeneration, {
        atTransition: true,
        checked: before,
      });
    }
    // An Active lease's readiness moves without a transition (the sandbox starts, its Host
    // configures, the lease runs out), so the revision cannot tell the caller's answer is stale:
    // look again, sooner at first, until it is ready, stops being Active, or the deadline. The
    // caller saw this revision, so holds an answer at most one look old: pause before the next,
    // unless no look was ever made at this lease (the answer at its transition made none).
    let pauseMs = Math.min(FIRST_RECHECK_MS, this.#recheckMs());
    const unobserved = (await readCurrentLease(db, before.environmentId))?.observedAt === null;
    if (!unobserved) pauseMs = await this.#pause(address, before.revision, pauseMs, deadline);
    let answer = await this.#inspectOnce(caller, address, networkPolicyGeneration, {
      atTransition: false,
      ...(unobserved ? { checked: before } : {}),
    });
    while (answer.lease.state === 'Active' && !answer.readyForDispatch && Date.now() < deadline) {
      pauseMs = await this.#pause(address, answer.environmentRevision, pauseMs, deadline);
      answer = await this.#inspectOnce(caller, address, networkPolicyGeneration);
    }
    return answer;
  }

  #recheckMs(): number {
    return this.deps.activeRecheckMs ?? 250;
  }

  /**
   * Waits `pauseMs` (not past the deadline), or less if a transition past `revision` comes first;
   * returns the next pause, doubled up to `activeRecheckMs`.
   */
  async #pause(address: EnvironmentAddress, revision: number, pauseMs: number, deadline: number) {
    const { db, changes } = this.deps;
    const waitMs = Math.max(0, Math.min(pauseMs, deadline - Date.now()));
    if (changes === undefined) await pause(waitMs);
    else {
      await changes.readAfterChange(
        address.environmentId,
        { waitMs, after: revision },
        async () => (await readEnvironment(db, address.environmentId))?.revision ?? revision,
        (value) => value,
      );
    }
    return Math.min(pauseMs * 2, this.#recheckMs());
  }

  async #inspectOnce(
    caller: Caller,
    address: EnvironmentAddress,
    networkPolicyGeneration: number | undefined,
    how: InspectHow = { atTransition: false },
  ): Promise<{ lease: LeaseView } & Readiness> {
    const { db, networkPolicies, runtime, runner } = this.deps;
    const timeoutMs = this.deps.describeTimeoutMs ?? 5_000;
    const guard = new Guard(this.deps, caller, address.projectId, this.permissions);
    const env = how.checked ?? (await guard.owner(address));
    const first = await currentOrLatestLease(this.deps.db, env);
    // A long-poll woken by the lease's transition to Active, never described yet, answers with the
    // transition and no describe: not ready (no exact observation), the caller asks again at once.
    // Once a describe was opened every answer runs its own, so readiness never flips on a wake.
    const unobserved = how.atTransition && first.state === 'Active' && first.observedAt === null;
    // The describe's commit rechecks inside its transaction; the answer waits for the last check.
    const observation = unobserved
      ? notYetObserved
      : await observeLease(
          { runtime, runner, describeTimeoutMs: timeoutMs },
          first,
          guard.commit(address.runId),
        );
    const request = recordedRequestOf(first);
    // The provider the lease was admitted for: a check it has no capability for asks no port.
    const { applies } = recordedApplicability(first.providerIdentity);
    // The policy verified afresh (after the observation) and the lease re-read, together; an
    // answer that made no observation has nothing to re-read the lease after.
    const [verified, observed] = await Promise.all([
      (async () =>
        applies.networkPolicy &&
        networkPolicyGeneration !== undefined &&
        networkPolicyGeneration === request?.networkPolicyGeneration &&
        (await networkPolicyVerified(
          networkPolicies,
          env.tenantId,
          env.projectId,
          networkPolicyGeneration,
          first,
        )))(),
      unobserved ? first : readLeaseByOperation(db, first.operationId),
    ]);
    // Traffic stops when the Pod answering is not the one the lease mapped (a reused name, or
    // status that is stale): never ready, and the observation says why.
    const mapped = observed?.resource?.placement['podUid'];
    const replacedPod =
      observation?.podUid !== undefined && mapped !== undefined && observation.podUid !== mapped
        ? { seen: observation.podUid, mapped }
        : null;
    const seen: Observation | null =
      replacedPod !== null && observation !== null
        ? {
            ...observation,
            error: {
              code: 'pod-replaced',
              message: `the Pod answering (UID ${replacedPod.seen}) is not the one this lease mapped (UID ${replacedPod.mapped}); a name was reused or status is stale`,
            },
          }
        : observation;
    // The Host is asked only about a lease still the same, seen started by an exact describe.
    const askHost =
      applies.agentHost &&
      observed !== null &&
      sameLease(first, observed) &&
      first.state === 'Active' &&
      seen?.exact === true &&
      seen.error === null &&
      seen.finished === null &&
      isRunning(seen.phase);
    const host = askHost ? await this.#askHost(observed, timeoutMs) : null;
    // A profile the configured Host names must still be this lease's, at its current endpoint.
    const profile =
      host !== null && 'answer' in host && observed !== null
        ? await profileEvidenceOf(db, env, observed, host.answer, this.deps.agentHostProfiles)
        : null;
    // The revision first: everything read after it is at least as new, so a caller waiting past
    // it misses no change. The reads after it are independent of each other and go out together.
    // An answer that made no observation moved nothing itself: the Environment as read first (before
    // the lease) is the revision, and the lease as read after it the last.
    const revision = unobserved
      ? env.revision
      : ((await readEnvironment(db, env.environmentId))?.revision ?? env.revision);
    const volumeId = (request?.workspace ?? first.workspace).volumeId;
    const [last, volume, workspaceConflicts, flushed] = await Promise.all([
      unobserved ? first : readLeaseByOperation(db, first.operationId),
      readVolume(db, volumeId),
      readOpenWorkspaceConflicts(db, env.environmentId, volumeId),
      readLatestVerifiedFlushOfLease(db, first.operationId),
    ]);
    const conditions = readinessConditions({
      first: observed ?? first,
      last,
      now: new Date(),
      observation: seen,
      replacedPod,
      host,
      profile,
      network: { requested: networkPolicyGeneration, verified },
      volume,
      flushedTo: flushed === null ? null : flushed.dataGeneration + 1,
      workspaceConflicts,
    });
    const ready = conditions.every((c) => c.status === 'True');
    // `configured` is the AgentHost's handshake, or (a provider without one) its own describe's.
    const hostCondition = conditions.find((c) => c.type === 'HostConfigured');
    const configured = hostCondition?.status === 'True' && hostCondition.reason === 'Configured';
    // The closing check: authority and the pinned selection, after every read and wait above.
    await guard.closing(address.runId, env.runSelectionHash);
    const lease = last ?? observed ?? first;
    if (ready) this.deps.onReady?.(lease);
    return {
      lease: leaseView(lease),
      environmentRevision: revision,
      readyForDispatch: ready,
      phase: configured && ready ? 'configured' : (seen?.phase ?? null),
      conditions,
      observation: seen,
      networkPolicy: { generation: networkPolicyGeneration ?? null, verified },
    };
  }

  /** The Host's readiness evidence (no effect): the inspection's closing check follows it. */
  async #askHost(lease: LeaseRow, timeoutMs: number) {
    try {
      const answer = await this.deps.agentHost.readiness(
        agentHostTargetOf(lease),
        AbortSignal.timeout(timeoutMs),
      );
      return { answer };
    } catch (error) {
      if (error instanceof ActorError) throw error;
      return {
        error: `the AgentHost could not be asked: ${error instanceof Error ? error.message : String(error)}`,
      };
    }
  }
}
