// The runner's side of the actor protocol for provider attempts: begin, complete and expire are
// steps through the runtime's one entry point (lock, reads and writes, transition, CAS, journal,
// outbox, hand-off, quarantine), never transactions of their own.
//   begin:    Pending → Dispatched only while the lease is current with the attempt's fences and in
//             the state that declared it (a cleanup attempt: while its claim and the owner fence
//             that authorized it are current); otherwise Superseded without calling the provider.
//   complete: the exact result is recorded and delivered to the machine in one commit. A result
//             for an attempt already settled by other evidence, or whose lease is terminal, is
//             still recorded; a resource it created that no current lease owns gets a cleanup record.
//   expire:   a Dispatched attempt past its deadline becomes Unknown (the reconciler's move).
import type { EnvironmentEvent, LateResource, ResourceSummary } from '../machines/environment-events.ts';
import { isCurrentLeaseState } from '../machines/environment-context.ts';
import { attemptRequestSchema, type EffectKind } from '../machines/environment-effects.ts';
import { observedPlacement } from '../machines/environment-updates.ts';
import type { CommandOutcome, SandboxPhase } from '../machines/environment-events.ts';
import { canonicalJson, sha256Hex } from '../lib/canonical-json.ts';
import {
  markDispatched,
  readAttemptAcknowledging,
  recordLateResult,
  resolveAttempt,
  type AttemptRow,
} from '../store/attempts.ts';
import { readCleanup, readOwnerFence } from '../store/cleanups.ts';
import type { Queryable } from '../store/db.ts';
import { countSweepListed, readCurrentLease, readLeaseByOperation, type LeaseRow } from '../store/leases.ts';
import { onAttempt, type AttemptDeps } from './attempt-step.ts';
import { workspaceProblem } from './build-test/workspace-binding.ts';
import { authorityLapseOf, releaseSubjectOf } from './result-authority.ts';

export type { AttemptDeps } from './attempt-step.ts';

/** The lease state an attempt kind may run in: the state is the gate. */
const gateState: Record<Exclude<EffectKind, 'cleanup' | 'sweep' | 'buildTest'>, string> = {
  provision: 'Provisioning',
  release: 'Releasing',
  listOwned: 'ReconciliationRequired',
  describe: 'Active',
  renew: 'Active',
};

export type BeginResult =
  | { dispatch: true; attempt: AttemptRow; deadline: Date }
  | { dispatch: false; reason: 'missing' | 'not-pending' | 'superseded' };

/** What an exact describe saw: the resource's phase, or that the provider answered it is absent. */
export type Observation =
  | {
      present: true;
      phase: SandboxPhase;
      finished: Finished | null;
      /** The UID of the Pod that answers, where the provider has Pods (Kubernetes). */
      podUid?: string;
      /** The provider's placement of that Pod (IP, Service, DNS name); only with `podUid`. */
      placement?: Record<string, string>;
    }
  | { present: false };
type Finished = 'PodSucceeded' | 'PodFailed';

/** A resource an owner listing found, with the fences stamped on it. */
export interface OwnedResource {
  resource: ResourceSummary;
  owner: { lifecycleGeneration: number; resourceGeneration: number; providerFence: number };
}

export type AttemptOutcome =
  | {
      state: 'Succeeded';
      resource?: ResourceSummary;
      receipt?: Record<string, unknown>;
      resources?: ResourceSummary[];
      observation?: Observation;
      found?: OwnedResource[];
      /** A release: uncertain provisions of the lease the provider proves over (see callSettled). */
      settledCalls?: string[];
      /** A BuildTest step: what it made of the operation, and the evidence for its row. */
      buildTest?: { outcome: CommandOutcome; evidence: Record<string, unknown> };
    }
  | {
      state: 'Failed' | 'Unknown';
      error: { code: string; message: string };
      /** Refused by the worker before any provider call (see the provider.failed event). */
      madeNoCall?: true;
    };

type LeaseResultKind = 'provision' | 'release' | 'listOwned';

const fencesOf = (a: AttemptRow, kind: LeaseResultKind) => ({
  attemptId: a.attemptId,
  kind,
  resourceGeneration: a.resourceGeneration,
  providerFence: a.providerFence,
  fencingGeneration: a.fencingGeneration,
});

function stillCurrent(attempt: AttemptRow, lease: LeaseRow | null): lease is LeaseRow {
  return (
    lease !== null &&
    attempt.kind !== 'cleanup' &&
    attempt.kind !== 'sweep' &&
    attempt.kind !== 'buildTest' &&
    lease.resourceGeneration === attempt.resourceGeneration &&
    lease.providerFence === attempt.providerFence &&
    lease.currentFencingGeneration === attempt.fencingGeneration &&
    lease.state === gateState[attempt.kind]
  );
}

export function beginAttempt(
  deps: AttemptDeps,
  attemptId: string,
  callTimeoutMs: number,
  environmentId?: string,
): Promise<BeginResult> {
  return onAttempt<BeginResult>(
    deps,
    attemptId,
    { dispatch: false, reason: 'missing' },
    // Read with its outbox rows acknowledged (one statement): the queue delivered it.
    async (tx, attempt) => {
      // Re-delivery of a dispatched or resolved attempt is a no-op; the reconciler owns overdue ones.
      if (attempt.state !== 'Pending')
        return { event: null, value: { dispatch: false, reason: 'not-pending' } };
      if (attempt.kind === 'cleanup') return beginCleanup(tx, attempt, callTimeoutMs);
      if (attempt.kind === 'sweep') return beginSweep(tx, attempt, callTimeoutMs);
      if (attempt.kind === 'buildTest') return beginBuildTest(tx, attempt, callTimeoutMs);
      const lease = await readCurrentLease(tx, attempt.environmentId);
      if (!stillCurrent(attempt, lease)) {
        await resolveAttempt(tx, attemptId, {
          state: 'Superseded',
          resolution: 'lease moved on before dispatch',
        });
        const value = { dispatch: false, reason: 'superseded' } as const;
        // A describe blocks nothing, so the machine has nothing to settle.
        if (attempt.kind === 'describe') return { event: null, value };
        if (attempt.kind === 'renew') return { event: renewedEvent(attempt, 'Superseded', null), value };
        return { event: { type: 'provider.superseded', ...fencesOf(attempt, attempt.kind) }, value };
      }
      const deadline = new Date(Date.now() + callTimeoutMs);
      await markDispatched(tx, attemptId, deadline);
      return { event: null, value: { dispatch: true, attempt, deadline } };
    },
    environmentId,
    readAttemptAcknowledging,
  );
}

/** The claim this cleanup attempt was opened under (its request names it). */
function claimOf(attempt: AttemptRow) {
  const claim = attemptRequestSchema.parse(attempt.request).cleanup;
  if (claim === undefined) throw new Error(`cleanup attempt ${attempt.attemptId} names no claim`);
  return claim;
}

const cleanupEvent = (attempt: AttemptRow) => {
  const { cleanupId, claimToken } = claimOf(attempt);
  return { cleanupId, attemptId: attempt.attemptId, claimToken };
};

/** A cleanup release goes out only under its current claim and the owner fence that authorized it. */
async function beginCleanup(tx: Queryable, attempt: AttemptRow, callTimeoutMs: number) {
  const claim = claimOf(attempt);
  const item = await readCleanup(tx, claim.cleanupId);
  const fence = await readOwnerFence(tx, attempt.environmentId);
  const current =
    item?.state === 'Claimed' &&
    item.claimToken === claim.claimToken &&
    item.releaseAttemptId === attempt.attemptId &&
    fence?.lifecycleGeneration === claim.authorizingFence.lifecycleGeneration &&
    fence.providerFence === claim.authorizingFence.providerFence;
  if (!current) {
    const resolution = 'the cleanup claim or the owner fence moved on before dispatch';
    await resolveAttempt(tx, attempt.attemptId, { state: 'Superseded', resolution });
    const event: EnvironmentEvent = {
      type: 'cleanup.failed',
      ...cleanupEvent(attempt),
      error: { code: 'superseded', message: resolution },
    };
    return { event, value: { dispatch: false, reason: 'superseded' } as const };
  }
  const deadline = new Date(Date.now() + callTimeoutMs);
  await markDispatched(tx, attempt.attemptId, deadline);
  return { event: null, value: { dispatch: true, attempt, deadline } as const };
}

/** A sweep lists what a terminal lease's owner still owns: only while that lease is terminal. */
async function beginSweep(tx: Queryable, attempt: AttemptRow, callTimeoutMs: number) {
  const lease = await readLeaseByOperation(tx, attempt.operationId);
  if (lease === null || isCurrentLeaseState(lease.state)) {
    await resolveAttempt(tx, attempt.attemptId, {
      state: 'Superseded',
      resolution: 'the lease is current again; its own reconciliation lists what it owns',
    });
    return { event: null, value: { dispatch: false, reason: 'superseded' } as const };
  }
  const deadline = new Date(Date.now() + callTimeoutMs);
  await markDispatched(tx, attempt.attemptId, deadline);
  return { event: null, value: { dispatch: true, attempt, deadline } as const };
}

/** A BuildTest step's request: which operation and step (the machine always writes it). */
function buildTestOf(attempt: AttemptRow) {
  const step = attemptRequestSchema.parse(attempt.request).buildTest;
  if (step === undefined) throw new Error(`BuildTest attempt ${attempt.attemptId} names no operation`);
  return step;
}

const steppedEvent = (
  attempt: AttemptRow,
  outcome: CommandOutcome,
  evidence: Record<string, unknown>,
): EnvironmentEvent => {
  const { operationId, step } = buildTestOf(attempt);
  return { type: 'command.stepped', operationId, attemptId: attempt.attemptId, step, outcome, evidence };
};

/**
 * A command or collector Pod is started only while the lease it was reserved on is the current,
 * Active lease with the attempt's fences; cleanup (deleting the operation's exact Pods) always may.
 */
async function beginBuildTest(tx: Queryable, attempt: AttemptRow, callTimeoutMs: number) {
  const { step, leaseOperationId } = buildTestOf(attempt);
  const lease = await readCurrentLease(tx, attempt.environmentId);
  const current =
    step === 'cleanup' ||
    (lease !== null &&
      lease.operationId === leaseOperationId &&
      lease.state === 'Active' &&
      lease.resourceGeneration === attempt.resourceGeneration &&
      lease.providerFence === attempt.providerFence &&
      lease.currentFencingGeneration === attempt.fencingGeneration);
  if (!current) {
    const resolution = 'the lease moved on before the BuildTest step was dispatched';
    await resolveAttempt(tx, attempt.attemptId, { state: 'Superseded', resolution });
    const event = steppedEvent(attempt, 'interrupted', { reason: 'lease-moved', message: resolution });
    return { event, value: { dispatch: false, reason: 'superseded' } as const };
  }
  // The Workspace generation, checked before each command or collector Pod: a flush that opened or
  // verified since the step was decided keeps the Pod from ever starting.
  const problem = step === 'cleanup' || lease === null ? null : await workspaceProblem(tx, lease);
  if (problem !== null) {
    const resolution = `the Workspace moved on before the BuildTest step was dispatched: ${problem}`;
    await resolveAttempt(tx, attempt.attemptId, { state: 'Superseded', resolution });
    const event = steppedEvent(attempt, 'interrupted', { reason: 'workspace-moved', message: problem });
    return { event, value: { dispatch: false, reason: 'superseded' } as const };
  }
  const deadline = new Date(Date.now() + callTimeoutMs);
  await markDispatched(tx, attempt.attemptId, deadline);
  return { event: null, value: { dispatch: true, attempt, deadline } as const };
}

/** The step's exact outcome, for the machine: a failure of the call itself is no verdict on the command. */
async function completeBuildTest(tx: Queryable, attempt: AttemptRow, outcome: AttemptOutcome) {
  if (!(await recordOutcome(tx, attempt, outcome))) return null;
  if (outcome.state !== 'Succeeded') {
    // A definitive refusal of the step (a Pod that is not ours, a start the provider refused) fails
    // it; an uncertain one only asks for another look.
    const evidence = { error: outcome.error };
    return steppedEvent(attempt, outcome.state === 'Failed' ? 'failed' : 'unknown', evidence);
  }
  const result = outcome.buildTest ?? { outcome: 'unknown' as const, evidence: {} };
  return steppedEvent(attempt, result.outcome, result.evidence);
}

/** Stable per (Environment, source operation, resource): a duplicate finds the record it made. */
export const cleanupIdOf = (environmentId: string, operationId: string, resourceId: string) =>
  `cleanup_${sha256Hex(canonicalJson({ environmentId, operationId, resourceId })).slice(0, 32)}`;

/** A resource of ours found by `attempt`, with the binding stamped on it, as a cleanup item. */
async function lateItem(
  tx: Queryable,
  attempt: AttemptRow,
  resource: ResourceSummary,
  owner: { lifecycleGeneration: number; resourceGeneration: number; providerFence: number },
): Promise<LateResource | null> {
  // The binding stamped on the resource is its identity for the release: its own operation.
  const cleanupId = cleanupIdOf(attempt.environmentId, resource.operationId, resource.resourceId);
  // A matching duplicate stays idempotent: the record (even a released one) is found by its ID.
  if ((await readCleanup(tx, cleanupId)) !== null) return null;
  const request = attemptRequestSchema.parse(attempt.request);
  return {
    cleanupId,
    source: {
      operationId: resource.operationId,
      lifecycleGeneration: owner.lifecycleGeneration,
      resourceGeneration: owner.resourceGeneration,
      providerFence: owner.providerFence,
      ownerHash: request.ownerHash,
      providerOptions: request.providerOptions,
      workspace: request.workspace,
    },
    resource,
  };
}

function recorded(
  foundBy: 'late-result' | 'owner-listing',
  attempt: AttemptRow,
  items: (LateResource | null)[],
): EnvironmentEvent | null {
  const found = items.filter((i): i is LateResource => i !== null);
  if (found.length === 0) return null;
  return { type: 'cleanup.recorded', foundBy, sourceAttemptId: attempt.attemptId, items: found };
}

type Succeeded = Extract<AttemptOutcome, { state: 'Succeeded' }>;

/** What a success records as the attempt's receipt, whatever its kind. */
const receiptOf = (o: Succeeded): unknown =>
  o.receipt ??
  o.resource ??
  o.resources ??
  o.observation ??
  (o.found === undefined ? null : { found: o.found });

/**
 * Records the outcome on its attempt: as its result while the attempt is unresolved (true), or,
 * once other evidence settled it, as its late result (false). A result is never dropped.
 */
async function recordOutcome(
  tx: Queryable,
  attempt: AttemptRow,
  outcome: AttemptOutcome,
  resolution?: string,
): Promise<boolean> {
  if (attempt.state !== 'Dispatched' && attempt.state !== 'Unknown') {
    const late =
      outcome.state === 'Succeeded' ? { state: outcome.state, result: receiptOf(outcome) } : outcome;
    await recordLateResult(tx, attempt.attemptId, late);
    return false;
  }
  await resolveAttempt(
    tx,
    attempt.attemptId,
    outcome.state === 'Succeeded'
      ? {
          state: 'Succeeded',
          receipt: receiptOf(outcome),
          ...(resolution === undefined ? {} : { resolution }),
        }
      : { state: outcome.state, error: outcome.error },
  );
  return true;
}

/**
 * A result that is not news to the lease: the attempt was settled by other evidence, or its lease is
 * terminal. It is recorded all the same; a resource it created that the lease does not hold (a
 * terminal lease holds none) becomes a late-resource cleanup record.
 */
async function lateResult(
  tx: Queryable,
  attempt: AttemptRow,
  outcome: AttemptOutcome,
  lease: LeaseRow | null,
): Promise<EnvironmentEvent | null> {
  await recordOutcome(tx, attempt, outcome, 'the result arrived after its lease was terminal');
  if (attempt.kind !== 'provision' || outcome.state !== 'Succeeded' || outcome.resource === undefined)
    return null;
  const held =
    lease !== null &&
    isCurrentLeaseState(lease.state) &&
    lease.resource?.resourceId === outcome.resource.resourceId;
  if (held) return null;
  return recorded('late-result', attempt, [await lateItem(tx, attempt, outcome.resource, attempt)]);
}

/**
 * A sweep's result: every listed resource that no current lease holds (or will adopt: its own
 * operation's lease is current) and that has no cleanup record becomes one.
 */
async function completeSweep(
  tx: Queryable,
  attempt: AttemptRow,
  outcome: AttemptOutcome,
): Promise<EnvironmentEvent | null> {
  if (!(await recordOutcome(tx, attempt, outcome)) || outcome.state !== 'Succeeded') return null;
  await countSweepListed(tx, attempt.operationId);
  const items = [];
  for (const { resource, owner } of outcome.found ?? []) {
    const lease = await readLeaseByOperation(tx, resource.operationId);
    if (lease?.environmentId === attempt.environmentId && isCurrentLeaseState(lease.state)) continue;
    items.push(await lateItem(tx, attempt, resource, owner));
  }
  return recorded('owner-listing', attempt, items);
}

/** Records the exact outcome and delivers it to the machine in the same transaction. */
export function completeAttempt(
  deps: AttemptDeps,
  attemptId: string,
  outcome: AttemptOutcome,
  environmentId?: string,
): Promise<boolean> {
  return onAttempt(
    deps,
    attemptId,
    false,
    async (tx, attempt, row) => {
      if (attempt.kind === 'cleanup')
        return { event: await completeCleanup(tx, attempt, outcome), value: true };
      if (attempt.kind === 'sweep') return { event: await completeSweep(tx, attempt, outcome), value: true };
      if (attempt.kind === 'buildTest')
        return { event: await completeBuildTest(tx, attempt, outcome), value: true };
      const settled = attempt.state !== 'Dispatched' && attempt.state !== 'Unknown';
      // A describe or renew settled elsewhere has nothing left to tell.
      if (settled && (attempt.kind === 'describe' || attempt.kind === 'renew'))
        return { event: null, value: false };
      if (attempt.kind === 'renew') {
        await recordOutcome(tx, attempt, outcome);
        const error = outcome.state === 'Succeeded' ? null : outcome.error;
        return { event: renewedEvent(attempt, outcome.state, error), value: true };
      }
      let authorityLapse: { code: string; message: string } | undefined;
      if (attempt.kind !== 'describe') {
        const lease = await readLeaseByOperation(tx, attempt.operationId);
        const terminal = lease === null || !isCurrentLeaseState(lease.state);
        if (settled || terminal)
          return { event: await lateResult(tx, attempt, outcome, lease), value: !settled };
        // A success that moves the lease (to Active, Released, or back to work) is committed under
        // fresh authority: a provision or listing's under the provisioner's, a release's under the
        // caller that asked for it (a lifecycle release: the provisioner's).
        const moves =
          outcome.state === 'Succeeded' &&
          (((attempt.kind === 'provision' || attempt.kind === 'listOwned') &&
            (lease.state === 'Provisioning' || lease.state === 'ReconciliationRequired')) ||
            (attempt.kind === 'release' &&
              (lease.state === 'Releasing' || lease.state === 'ReconciliationRequired')));
        if (moves) {
          const subject = attempt.kind === 'release' ? await releaseSubjectOf(tx, lease) : lease.requestedBy;
          authorityLapse = await authorityLapseOf(deps, tx, row, subject);
        }
      }
      await recordOutcome(tx, attempt, outcome);
      if (attempt.kind === 'describe') {
        const lease = await readCurrentLease(tx, attempt.environmentId);
        const observed = observedEvent(attempt, lease, outcome);
        // An observation that changes an Active lease (its phase, its placement) is committed under
        // the provisioner's fresh authority; one that retires the lease (finished, lost) needs none.
        if (observed?.type !== 'sandbox.observed' || observed.finished !== null || lease?.state !== 'Active')
          return { event: observed, value: true };
        const lapse = await authorityLapseOf(deps, tx, row, lease.requestedBy);
        return {
          event: lapse === undefined ? observed : { ...observed, authorityLapse: lapse },
          value: true,
        };
      }
      const kind = attempt.kind;
      const event: EnvironmentEvent =
        outcome.state === 'Succeeded'
          ? {
              type: 'provider.succeeded',
              ...fencesOf(attempt, kind),
              resource: outcome.resource ?? null,
              receipt: outcome.receipt ?? null,
              resources: outcome.resources ?? null,
              ...(outcome.settledCalls === undefined ? {} : { settledCalls: outcome.settledCalls }),
              ...(authorityLapse === undefined ? {} : { authorityLapse }),
            }
          : outcome.state === 'Failed'
            ? {
                type: 'provider.failed',
                ...fencesOf(attempt, kind),
                error: outcome.error,
                ...(outcome.madeNoCall === true ? { madeNoCall: true as const } : {}),
              }
            : { type: 'provider.unknown', ...fencesOf(attempt, kind), error: outcome.error };
      return { event, value: true };
    },
    environmentId,
  );
}

/**
 * A cleanup release's result is always recorded on its attempt; the machine saves the receipt only
 * while the attempt's claim is current (a newer claim supersedes it), else the item stays as it is.
 */
async function completeCleanup(
  tx: Queryable,
  attempt: AttemptRow,
  outcome: AttemptOutcome,
): Promise<EnvironmentEvent | null> {
  if (!(await recordOutcome(tx, attempt, outcome))) return null;
  return outcome.state === 'Succeeded'
    ? { type: 'cleanup.released', ...cleanupEvent(attempt), receipt: outcome.receipt ?? {} }
    : { type: 'cleanup.failed', ...cleanupEvent(attempt), error: outcome.error };
}

/**
 * A describe tells the machine only what changed: a new phase, a finished run (which retires
 * placement), placement the lease lacked, or a resource the provider answered is gone (the
 * execution is lost). A failed describe proves nothing and sends nothing.
 */
function observedEvent(attempt: AttemptRow, lease: LeaseRow | null, outcome: AttemptOutcome) {
  if (outcome.state !== 'Succeeded' || outcome.observation === undefined) return null;
  if (!outcome.observation.present) {
    const lost: EnvironmentEvent = {
      type: 'sandbox.lost',
      resourceGeneration: attempt.resourceGeneration,
      providerFence: attempt.providerFence,
    };
    return lost;
  }
  const { phase, finished, podUid, placement } = outcome.observation;
  // The placement learns the first Pod seen, or what it still lacks of the mapped one (its IP and
  // Service, when the provision read it back pending); a different Pod later is never recorded.
  const recorded = lease?.resource?.placement ?? {};
  const next = observedPlacement(recorded, podUid, placement);
  const learns = Object.entries(next).some(([key, value]) => recorded[key] !== value);
  if (phase === lease?.resource?.phase && finished === null && !learns) return null;
  const event: EnvironmentEvent = {
    type: 'sandbox.observed',
    resourceGeneration: attempt.resourceGeneration,
    providerFence: attempt.providerFence,
    phase,
    finished,
    ...(podUid === undefined ? {} : { podUid, ...(placement === undefined ? {} : { placement }) }),
  };
  return event;
}

/** The reconciler's move for an attempt stuck in Dispatched past its deadline. */
export function expireAttempt(deps: AttemptDeps, attemptId: string, now: Date): Promise<boolean> {
  return onAttempt(deps, attemptId, false, async (tx, attempt) => {
    if (attempt.state !== 'Dispatched' || attempt.deadlineAt === null || new Date(attempt.deadlineAt) >= now)
      return { event: null, value: false };
    const error = {
      code: 'deadline-passed',
      message: 'no result before the attempt deadline; outcome unknown',
    };
    await resolveAttempt(tx, attemptId, { state: 'Unknown', error });
    // Read-only calls block nothing: the next describe or sweep asks again.
    if (attempt.kind === 'describe' || attempt.kind === 'sweep') return { event: null, value: true };
    // A renewal whose outcome is unknown leaves the expiry where it was; the caller may renew again.
    if (attempt.kind === 'renew') return { event: renewedEvent(attempt, 'Unknown', error), value: true };
    // An unknown cleanup release frees its item for the next claim (the release is idempotent).
    if (attempt.kind === 'cleanup') {
      return { event: { type: 'cleanup.failed', ...cleanupEvent(attempt), error }, value: true };
    }
    // An uncertain BuildTest step stays uncertain: it authorizes another look, never another Pod.
    if (attempt.kind === 'buildTest')
      return { event: steppedEvent(attempt, 'unknown', { error }), value: true };
    return { event: { type: 'provider.unknown', ...fencesOf(attempt, attempt.kind), error }, value: true };
  });
}

/** A renew attempt's answer for the machine: only a confirmed one moves the lease's expiry. */
function renewedEvent(
  attempt: AttemptRow,
  outcome: 'Succeeded' | 'Failed' | 'Unknown' | 'Superseded',
  error: { code: string; message: string } | null,
): EnvironmentEvent {
  return {
    type: 'sandbox.renewed',
    resourceGeneration: attempt.resourceGeneration,
    providerFence: attempt.providerFence,
    attemptId: attempt.attemptId,
    outcome,
    error,
  };
}
