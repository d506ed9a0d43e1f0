// The model the Environment's model-based test explores: the machine snapshot plus what the runtime
// holds outside it (every effect declared so far, by attempt id), so that a provider result echoes
// the fences of the outbox row it answers, as a worker's would.
import { initialTransition, type ExecutableActionsFrom } from 'xstate';
import { environmentMachine, type EnvironmentMachine } from '../../machines/environment.ts';
import type { EnvironmentEvent } from '../../machines/environment-events.ts';
import type { SandboxState } from '../../machines/environment-context.ts';
import type { LeaseRecord, ProviderEffect } from '../../machines/environment-effects.ts';
import {
  T0,
  T1,
  T2,
  abandon,
  expire,
  renew,
  renewed,
  claimCleanup,
  cleanupFailed,
  cleanupReleased,
  lateResource,
  lost,
  sweep,
  environmentInput,
  observed,
  describe,
  outcomes,
  ownResource,
  provision,
  reconcile,
  release,
  result,
  type AttemptRef,
  type EnvironmentSnapshot,
  type LeaseFences,
} from './environment-events.ts';
import { takeStep } from './machine-transitions.ts';

export interface ModelState {
  snapshot: EnvironmentSnapshot;
  /** Every `effect.provider` declared on the way here, by attempt id. */
  issued: Readonly<Record<string, ProviderEffect>>;
  /** Lease rows as the `record.lease` actions on the way here left them, by resource generation. */
  leaseRows: Readonly<Record<number, SandboxState>>;
  depth: number;
  /** The step that produced this state (null for the initial one). */
  last: {
    event: EnvironmentEvent;
    actions: ExecutableActionsFrom<EnvironmentMachine>[];
    taken: string[];
  } | null;
}

type Action = { type: string; params: unknown };
export const isEffect = <A extends Action>(action: A): action is A & { params: ProviderEffect } =>
  action.type === 'effect.provider';
export const isLeaseRecord = <A extends Action>(action: A): action is A & { params: LeaseRecord } =>
  action.type === 'record.lease';

export function initialModel(): ModelState {
  const [snapshot] = initialTransition(environmentMachine, environmentInput);
  return { snapshot, issued: {}, leaseRows: {}, depth: 0, last: null };
}

export function step(state: ModelState, event: EnvironmentEvent): ModelState {
  const { snapshot, actions, taken } = takeStep(environmentMachine, state.snapshot, event);
  const issued = { ...state.issued };
  const leaseRows = { ...state.leaseRows };
  for (const action of actions) {
    if (isEffect(action)) issued[action.params.attemptId] = action.params;
    if (isLeaseRecord(action)) leaseRows[action.params.resourceGeneration] = action.params.state;
  }
  return { snapshot, issued, leaseRows, depth: state.depth + 1, last: { event, actions, taken } };
}

/** Fences of the lease before this one, or (for the first lease) a provider fence never issued. */
const staleFences = (f: LeaseFences): LeaseFences =>
  f.resourceGeneration > 1
    ? { resourceGeneration: f.resourceGeneration - 1, providerFence: f.providerFence - 1 }
    : { ...f, providerFence: f.providerFence + 1 };

/** An observation committed after the provisioner's authority (here: the run's selection) lapsed. */
function observedLapsed(fences: LeaseFences): EnvironmentEvent {
  const event = observed(fences, null);
  if (event.type !== 'sandbox.observed') throw new Error('observed() makes sandbox.observed');
  return { ...event, authorityLapse: { code: 'run-selection-changed', message: 'changed' } };
}

/**
 * Results a worker can deliver for an attempt: every outcome, and for listOwned, found or not; a
 * provision refused before any call; a release whose exact lookup found the operation's resource,
 * and one the provider proves every unresolved provision of the lease is past its in-flight window.
 */
function genuineResults(effect: ProviderEffect, state: ModelState): EnvironmentEvent[] {
  const events = outcomes.map((outcome) => result(effect, outcome));
  if (effect.kind === 'listOwned') {
    events.push(result(effect, 'succeeded', []), result(effect, 'succeeded', [ownResource('op-other')]));
  }
  if (effect.kind === 'provision') {
    const failed = result(effect, 'failed');
    if (failed.type === 'provider.failed') events.push({ ...failed, madeNoCall: true });
  }
  if (effect.kind === 'release') {
    const success = result(effect, 'succeeded');
    const provisions = Object.entries(state.snapshot.context.sandbox.unresolved)
      .filter(([, a]) => a.kind === 'provision')
      .map(([id]) => id);
    if (success.type === 'provider.succeeded') {
      events.push({ ...success, resources: [ownResource(effect.operationId)] });
      if (provisions.length > 0) events.push({ ...success, settledCalls: provisions });
    }
  }
  // The same success, committed after the subject it is committed under lost its authority.
  const success = result(effect, 'succeeded');
  if (success.type === 'provider.succeeded') {
    events.push({ ...success, authorityLapse: { code: 'authority-lapsed', message: 'revoked' } });
  }
  return events;
}

/** The same results with tampered fences: another fencing generation, a provider fence never issued. */
function tamperedResults(effect: ProviderEffect): EnvironmentEvent[] {
  const { fencingGeneration: fg, providerFence } = effect.fences;
  const otherFencing: AttemptRef = {
    ...effect,
    fences: { ...effect.fences, fencingGeneration: fg > 1 ? fg - 1 : fg + 1 },
  };
  const otherFence: AttemptRef = {
    ...effect,
    fences: { ...effect.fences, providerFence: providerFence + 1 },
  };
  return [otherFencing, otherFence].flatMap((ref) => outcomes.map((outcome) => result(ref, outcome)));
}

/**
 * Attempts a result may still arrive for: the unresolved ones, the reconcile in flight, and the
 * latest one even once settled (a worker may deliver a result twice).
 */
export function openAttempts(state: ModelState): ProviderEffect[] {
  const { lease, unresolved, openedAttemptId } = state.snapshot.context.sandbox;
  const ids = new Set([...Object.keys(unresolved), lease?.reconcileAttemptId, openedAttemptId]);
  return [...ids].flatMap((id) => {
    if (id == null) return [];
    const effect = state.issued[id];
    if (effect === undefined) throw new Error(`attempt ${id} is open but no effect declared it`);
    return [effect];
  });
}

export interface ModelBounds {
  /** Leases the model may reserve (each `sandbox.provision` reserves the next). */
  leases: number;
  /** Also propose results whose fences were tampered with, for attempts under the current fences. */
  tampered: boolean;
}

export function proposeEvents(state: ModelState, bounds: ModelBounds): EnvironmentEvent[] {
  const { context } = state.snapshot;
  const { lease, counters } = context.sandbox;
  const events = [release(context.lifecycleGeneration), release(context.lifecycleGeneration + 1)];
  // One resume's advance, at the current generation and a stale one: proposed once every lease the
  // bounds allow was reserved, so the states after it are not a second copy of the whole lifecycle.
  if (counters.resourceGeneration === bounds.leases) {
    for (const expected of [context.lifecycleGeneration, context.lifecycleGeneration - 1].filter(
      (g) => g >= 1,
    )) {
      events.push({
        type: 'environment.advance',
        operationKey: 'resume-1',
        expectedLifecycleGeneration: expected,
      });
    }
  }
  if (counters.resourceGeneration < bounds.leases) {
    // Every model lease expires at T1, so expiry is explored (T0: not yet; T2: past it).
    events.push(provision(`op-${counters.resourceGeneration + 1}`, T1));
  }
  if (lease === null) return events;
  events.push(...cleanupEvents(state), ...commandEvents(state), ...flushEvents(state));
  const fences = { resourceGeneration: lease.resourceGeneration, providerFence: lease.providerFence };
  const stale = staleFences(fences);
  events.push(
    abandon(fences),
    abandon(stale),
    reconcile(lease.operationId, fences),
    reconcile(lease.operationId, stale),
    describe(fences),
    describe(stale),
    observed(fences, null),
    observedLapsed(fences),
    observed(fences, 'PodSucceeded'),
    observed(stale, 'PodSucceeded'),
    lost(fences),
    lost(stale),
    expire(fences, T0),
    expire(fences, T2),
    expire(stale, T2),
    renew(fences, T2, T0),
    renew(stale, T2, T0),
    renew(fences, T2, T2),
  );
  const renewal = lease.renewal;
  if (renewal != null) {
    events.push(
      renewed(fences, renewal.attemptId, 'Succeeded'),
      renewed(fences, renewal.attemptId, 'Failed'),
      renewed(stale, renewal.attemptId, 'Succeeded'),
    );
  }
  for (const effect of openAttempts(state)) {
    // A describe answers with sandbox.observed, a renew with sandbox.renewed (proposed above).
    if (effect.kind === 'describe' || effect.kind === 'renew') continue;
    events.push(...genuineResults(effect, state));
    // Only attempts opened under the current fences: a stale attempt's result is matched by its
    // attempt id and a fencing generation other than the current one (the staleAttempt guard).
    const current = effect.fences.fencingGeneration === lease.currentFencingGeneration;
    if (bounds.tampered && current) events.push(...tamperedResults(effect));
  }
  return events;
}

/**
 * The cleanup region's traffic: a late resource of a terminal lease; claims (fresh, and after the
 * last claim expired, as a second reconciler would); the claimed attempt's results, and a result
 * under a claim that is no longer current.
 */
function cleanupEvents(state: ModelState): EnvironmentEvent[] {
  const { context } = state.snapshot;
  const lease = context.sandbox.lease;
  const events: EnvironmentEvent[] = [];
  // Not beside a flush: see flushEvents.
  if (Object.keys(context.flushes).length > 0) return events;
  if (
    lease !== null &&
    (state.snapshot.value.sandbox === 'Released' || state.snapshot.value.sandbox === 'Failed')
  ) {
    const { operationId, lifecycleGeneration, resourceGeneration, providerFence } = lease;
    events.push(lateResource({ operationId, lifecycleGeneration, resourceGeneration, providerFence }));
  }
  // A sweep of the lease: accepted only once it is terminal.
  if (lease !== null) events.push(sweep(lease, state.depth + 1));
  const token = `claim-${state.depth}`;
  for (const [cleanupId, item] of Object.entries(context.cleanups)) {
    events.push(claimCleanup(cleanupId, token), claimCleanup(cleanupId, token, T2));
    if (item.attemptId !== null && item.claimToken !== null) {
      events.push(
        cleanupReleased(cleanupId, item.attemptId, item.claimToken),
        cleanupFailed(cleanupId, item.attemptId, item.claimToken),
        cleanupReleased(cleanupId, item.attemptId, 'claim-superseded'),
      );
    }
  }
  return events;
}

/**
 * The commands region's traffic: one BuildTest operation reserved on the lease as it stands (and
 * on a stale view of it), each step's outcomes for the open attempt and a stale one, reconcile and
 * acknowledgment.
 */
function commandEvents(state: ModelState): EnvironmentEvent[] {
  const { context } = state.snapshot;
  const lease = context.sandbox.lease;
  // Not beside a flush: see flushEvents.
  if (lease === null || Object.keys(context.flushes).length > 0) return [];
  const binding = {
    operationId: lease.operationId,
    lifecycleGeneration: lease.lifecycleGeneration,
    resourceGeneration: lease.resourceGeneration,
    providerFence: lease.providerFence,
    fencingGeneration: lease.currentFencingGeneration,
    resourceId: lease.resource?.resourceId ?? 'no-resource',
    ownerHash: lease.ownerHash,
    workspace: lease.workspace,
    networkPolicyGeneration: lease.networkPolicyGeneration,
    providerOptions: lease.providerOptions,
  };
  const intent = {
    checkpoint: {},
    acceptedCommand: {},
    acceptedCommandHash: 'a'.repeat(64),
    requestFingerprint: 'b'.repeat(64),
    expectedBinding: {},
    profileHash: 'c'.repeat(64),
  };
  const operationId = 'op-cp-1';
  const events: EnvironmentEvent[] = [
    { type: 'command.reserve', operationId, lease: binding, intent },
    {
      type: 'command.reserve',
      operationId,
      lease: { ...binding, fencingGeneration: binding.fencingGeneration + 1 },
      intent,
    },
  ];
  const item = context.commands[operationId];
  if (item === undefined) return events;
  events.push(
    { type: 'command.reconcile', operationId },
    { type: 'command.acknowledged', operationId, acknowledgment: {} },
  );
  if (item.attemptId !== null && item.step !== null) {
    const outcomes = {
      command: ['advanced', 'failed', 'interrupted', 'running', 'unknown'],
      collect: ['sealed', 'failed', 'interrupted', 'running', 'unknown'],
      cleanup: ['cleaned', 'failed', 'unknown'],
    } as const;
    for (const outcome of outcomes[item.step]) {
      events.push({
        type: 'command.stepped',
        operationId,
        attemptId: item.attemptId,
        step: item.step,
        outcome,
        evidence: {},
      });
    }
    events.push({
      type: 'command.stepped',
      operationId,
      attemptId: `${item.attemptId}-stale`,
      step: item.step,
      outcome: 'failed',
      evidence: {},
    });
  }
  return events;
}

/**
 * The workspace region's traffic: two flushes of the lease's volume (the second explores a reserve
 * while one is open, and after one verified), one on a stale view of the lease, and every outcome
 * and a redelivery for each.
 */
function flushEvents(state: ModelState): EnvironmentEvent[] {
  const { context } = state.snapshot;
  const lease = context.sandbox.lease;
  // The regions are independent: flushes are explored beside the lease's own traffic, not also
  // beside every BuildTest operation and late resource (which would only multiply the states).
  if (lease === null || Object.keys(context.commands).length > 0 || Object.keys(context.cleanups).length > 0)
    return [];
  const terms = {
    volumeId: lease.workspace.volumeId,
    coreOperationId: 'op-suspend-1',
    stepId: 'agent_1',
    lease: {
      operationId: lease.operationId,
      resourceGeneration: lease.resourceGeneration,
      providerFence: lease.providerFence,
    },
    transitionRevision: 2,
    dataGeneration: lease.workspace.dataGeneration,
  };
  const events: EnvironmentEvent[] = [
    { type: 'workspace.flushReserve', flushOperationId: 'fl-1', terms },
    {
      type: 'workspace.flushReserve',
      flushOperationId: 'fl-3',
      terms: { ...terms, lease: { ...terms.lease, providerFence: terms.lease.providerFence + 1 } },
    },
  ];
  // A second flush only after the first one verified (Flushed → Flushing), or while it is open
  // (which must be refused); it then takes the verified path only.
  const first = context.flushes['fl-1'];
  if (first !== undefined && first.state !== 'Refused') {
    events.push({
      type: 'workspace.flushReserve',
      flushOperationId: 'fl-2',
      terms: { ...terms, transitionRevision: 3 },
    });
  }
  const outcomes = { 'fl-1': ['verified', 'uncertain', 'refused'], 'fl-2': ['verified'] } as const;
  for (const flushOperationId of ['fl-1', 'fl-2'] as const) {
    if (!(flushOperationId in context.flushes)) continue;
    events.push({ type: 'workspace.flushRedeliver', flushOperationId });
    for (const outcome of outcomes[flushOperationId]) {
      events.push({
        type: 'workspace.flushed',
        flushOperationId,
        outcome,
        evidence: {},
        receiptSha256: outcome === 'verified' ? 'd'.repeat(64) : null,
      });
    }
  }
  return events;
}

const seqOf = (attemptId: string) => Number(attemptId.slice(attemptId.lastIndexOf('.') + 1));

/**
 * Keyed on the state value and the context fields guards read. Attempt ids and fencing numbers are
 * abstracted to what guards compare (open or settled, current or stale, this lease or an older one),
 * so paths that differ only in numbering meet in one state.
 */
export function serializeModel(state: ModelState): string {
  const { value, context } = state.snapshot;
  const { lease, unresolved, counters, openedAttemptId } = context.sandbox;
  const fencing = (fg: number | undefined) => (fg === lease?.currentFencingGeneration ? 'current' : 'stale');
  const attempts = Object.entries(unresolved)
    .sort(([a], [b]) => seqOf(a) - seqOf(b))
    .map(([id, a]) =>
      [
        a.kind,
        a.state,
        fencing(a.fencingGeneration),
        a.resourceGeneration === lease?.resourceGeneration ? 'this lease' : 'older lease',
        id === openedAttemptId ? 'latest' : '',
      ].join(' '),
    );
  const reconcileId = lease?.reconcileAttemptId;
  return JSON.stringify({
    value,
    leases: counters.resourceGeneration,
    released: context.release !== null,
    advanced: Object.keys(context.advances).length,
    lease: lease && {
      recovering: lease.recovering,
      releaseConfirmed: lease.releaseConfirmed,
      reconcile: reconcileId == null ? null : fencing(state.issued[reconcileId]?.fences.fencingGeneration),
      resource: lease.resource !== null,
      finished: lease.finished,
      release: lease.release?.reason ?? null,
      failed: lease.failure !== null,
      parked: lease.authorityLapse !== null,
      expired: lease.expired,
      renewal: lease.renewal?.state ?? null,
      expiresAt: lease.expiresAt,
    },
    attempts,
    cleanups: Object.values(context.cleanups).map((item) => [
      item.state,
      item.authorizingFence?.providerFence === counters.providerFence &&
        item.authorizingFence.lifecycleGeneration === context.lifecycleGeneration,
    ]),
    commands: Object.values(context.commands).map((item) => [
      item.state,
      item.step,
      item.attemptId !== null,
      item.acknowledged,
    ]),
    flushes: Object.entries(context.flushes)
      .sort(([a], [b]) => a.localeCompare(b))
      // Guards never read the delivery count, so paths that differ only in it meet.
      .map(([id, item]) => [
        id,
        item.state,
        item.terms.lease.resourceGeneration === lease?.resourceGeneration,
      ]),
    latestSettled:
      openedAttemptId !== null && !(openedAttemptId in unresolved) && openedAttemptId !== reconcileId,
  });
}
