// Context updates of the sandbox region as pure functions: (context, event) → new sandbox context.
// The machine wraps each in `assign`; keeping them here keeps the transition table readable.
import {
  withoutAttempt,
  type EnvironmentContext,
  type LeaseContext,
  type SandboxContext,
} from './environment-context.ts';
import { attemptIdFor, type EffectKind } from './environment-effects.ts';
import type { EnvironmentEvent, ResourceSummary } from './environment-events.ts';
import { evidencedBy } from './environment-guards.ts';

type Args = { context: EnvironmentContext; event: EnvironmentEvent };
/** The kinds of attempt a lease opens (cleanup and sweep attempts belong to the cleanup region). */
export type LeaseEffectKind = Exclude<EffectKind, 'cleanup' | 'sweep' | 'buildTest'>;

function withLease(sandbox: SandboxContext, change: Partial<LeaseContext>): SandboxContext {
  if (sandbox.lease === null) return sandbox;
  return { ...sandbox, lease: { ...sandbox.lease, ...change } };
}

export function reserveLease({ context, event }: Args): SandboxContext {
  if (event.type !== 'sandbox.provision') return context.sandbox;
  const counters = {
    ...context.sandbox.counters,
    resourceGeneration: context.sandbox.counters.resourceGeneration + 1,
    providerFence: context.sandbox.counters.providerFence + 1,
  };
  return {
    ...context.sandbox,
    counters,
    lease: {
      operationId: event.operationId,
      idempotencyKey: event.idempotencyKey,
      lifecycleGeneration: context.lifecycleGeneration,
      resourceGeneration: counters.resourceGeneration,
      providerFence: counters.providerFence,
      currentFencingGeneration: 1,
      ownerHash: event.ownerHash,
      workspace: event.workspace,
      networkPolicyGeneration: event.networkPolicyGeneration,
      providerOptions: event.providerOptions,
      resource: null,
      finished: null,
      release: null,
      releaseConfirmed: false,
      recovering: null,
      reconcileAttemptId: null,
      failure: null,
      authorityLapse: null,
      expiresAt: event.expiresAt,
      expired: false,
    },
  };
}

/** Opens the next attempt of the lease; the following `effect.provider` action describes it. */
export function openAttempt({ context }: Args, kind: LeaseEffectKind): SandboxContext {
  const { sandbox } = context;
  const lease = sandbox.lease;
  if (lease === null) return sandbox;
  const attemptSeq = sandbox.counters.attemptSeq + 1;
  const attemptId = attemptIdFor(lease.operationId, kind, attemptSeq);
  const next: SandboxContext = {
    ...sandbox,
    counters: { ...sandbox.counters, attemptSeq },
    openedAttemptId: attemptId,
  };
  if (kind === 'listOwned') return withLease(next, { reconcileAttemptId: attemptId });
  // A describe reads only: it never blocks release, and its answer arrives as sandbox.observed.
  // A renew only moves the provider's backstop term: it never blocks release either (its answer
  // arrives as sandbox.renewed; a release fences it out).
  if (kind === 'describe' || kind === 'renew') return next;
  return {
    ...next,
    unresolved: {
      ...sandbox.unresolved,
      [attemptId]: {
        kind,
        resourceGeneration: lease.resourceGeneration,
        fencingGeneration: lease.currentFencingGeneration,
        state: 'Pending',
      },
    },
  };
}

/** An attempt of the cleanup region was opened: it takes a number too. */
export const countAttempt = ({ context }: Args): SandboxContext => ({
  ...context.sandbox,
  counters: { ...context.sandbox.counters, attemptSeq: context.sandbox.counters.attemptSeq + 1 },
});

/** The attempt's exact result arrived: it no longer blocks anything. */
export function settleAttempt({ context, event }: Args): SandboxContext {
  if (!('attemptId' in event)) return context.sandbox;
  const sandbox = {
    ...context.sandbox,
    unresolved: withoutAttempt(context.sandbox.unresolved, event.attemptId),
  };
  return sandbox.lease?.reconcileAttemptId === event.attemptId
    ? withLease(sandbox, { reconcileAttemptId: null })
    : sandbox;
}

export function markUnknown({ context, event }: Args): SandboxContext {
  if (!('attemptId' in event)) return context.sandbox;
  const attempt = context.sandbox.unresolved[event.attemptId];
  if (attempt === undefined) return context.sandbox;
  return {
    ...context.sandbox,
    unresolved: { ...context.sandbox.unresolved, [event.attemptId]: { ...attempt, state: 'Unknown' } },
  };
}

export function adoptResource({ context, event }: Args): SandboxContext {
  if (event.type !== 'provider.succeeded') return context.sandbox;
  const lease = context.sandbox.lease;
  const own = event.resource ?? event.resources?.find((r) => r.operationId === lease?.operationId) ?? null;
  return own === null ? context.sandbox : withLease(context.sandbox, { resource: own });
}

type Placement = Readonly<Record<string, string>>;

/**
 * The lease's placement once an exact describe saw the Pod `podUid` with `observed`. The mapping
 * keeps the first Pod it saw: a Pod with another UID later is evidence (a reused name or stale
 * status), which readiness refuses, not a new truth to record over the old, so none of its fields
 * are taken either. The first Pod's report is merged in (a provision that read back a pending Pod
 * recorded nothing of it); for the mapped Pod only keys still missing are filled (its IP or its
 * Service appear after it started), never a recorded one changed.
 */
export function observedPlacement(
  recorded: Placement,
  podUid: string | undefined,
  observed: Placement = {},
): Placement {
  if (podUid === undefined) return recorded;
  const mapped = recorded['podUid'];
  if (mapped === undefined) return { ...recorded, ...observed, podUid };
  return mapped === podUid ? { ...observed, ...recorded } : recorded;
}

export function recordObservation({ context, event }: Args): SandboxContext {
  if (event.type !== 'sandbox.observed') return context.sandbox;
  const resource: ResourceSummary | null = context.sandbox.lease?.resource ?? null;
  return withLease(context.sandbox, {
    resource:
      resource === null
        ? null
        : {
            ...resource,
            phase: event.phase,
            placement: observedPlacement(resource.placement, event.podUid, event.placement),
          },
    finished: event.finished,
  });
}

export function beginRelease({ context, event }: Args): SandboxContext {
  const lease = context.sandbox.lease;
  if (lease === null) return context.sandbox;
  if (event.type === 'sandbox.abandon') {
    // Fence first: every attempt opened before this point is now stale.
    return withLease(context.sandbox, {
      currentFencingGeneration: lease.currentFencingGeneration + 1,
      release: { reason: 'abandon', idempotencyKey: event.idempotencyKey },
      authorityLapse: null,
      recovering: null,
      // A listOwned opened under the old fence answers for a lease state that no longer exists.
      reconcileAttemptId: null,
    });
  }
  const reason =
    event.type === 'sandbox.observed' ? 'retired' : event.type === 'sandbox.lost' ? 'lost' : 'lifecycle';
  // A release a caller asked for (with current authority, checked as it was sent) ends a park.
  return withLease(context.sandbox, {
    release: { reason, idempotencyKey: null },
    ...(event.type === 'environment.release' ? { authorityLapse: null } : {}),
  });
}

export const setRecovering = ({ context }: Args, what: 'provision' | 'release'): SandboxContext =>
  withLease(context.sandbox, { recovering: what });

export const clearRecovering = ({ context }: Args): SandboxContext =>
  withLease(context.sandbox, { recovering: null });

export const confirmRelease = ({ context }: Args): SandboxContext =>
  withLease(context.sandbox, { releaseConfirmed: true });

export const clearReleaseConfirmation = ({ context }: Args): SandboxContext =>
  withLease(context.sandbox, { releaseConfirmed: false });

/** The result stands (its resource is adopted), but the lease is parked: see LeaseContext. */
export function parkForAuthority({ context, event }: Args): SandboxContext {
  const lapse =
    event.type === 'provider.succeeded' || event.type === 'sandbox.observed'
      ? event.authorityLapse
      : undefined;
  if (lapse === undefined) return context.sandbox;
  return withLease(context.sandbox, { authorityLapse: lapse, failure: lapse });
}

/** Fence first: every attempt and holder of the old fencing generation is stale from now on. */
export function expireLease({ context }: Args): SandboxContext {
  const lease = context.sandbox.lease;
  if (lease === null) return context.sandbox;
  return withLease(context.sandbox, {
    expired: true,
    currentFencingGeneration: lease.currentFencingGeneration + 1,
  });
}

export const markLost = ({ context }: Args): SandboxContext =>
  withLease(context.sandbox, {
    failure: {
      code: 'sandbox-lost',
      message: 'an exact describe found the sandbox gone while the lease was Active',
    },
  });

export function recordFailure({ context, event }: Args): SandboxContext {
  if (event.type !== 'provider.failed') return context.sandbox;
  return withLease(context.sandbox, { failure: event.error });
}

/** Reconciliation settled every unresolved attempt of the lease at once. */
export function settleAllUnresolved({ context }: Args): SandboxContext {
  const lease = context.sandbox.lease;
  if (lease === null) return context.sandbox;
  const unresolved = Object.fromEntries(
    Object.entries(context.sandbox.unresolved).filter(
      ([, a]) => a.resourceGeneration !== lease.resourceGeneration,
    ),
  );
  return withLease({ ...context.sandbox, unresolved }, { reconcileAttemptId: null, recovering: null });
}

/** The lease's other unresolved attempts that a current release's result is evidence about. */
export function evidencedOfLease({ context, event }: Args): string[] {
  return unresolvedOfLease(context).filter(
    (id) => !('attemptId' in event && id === event.attemptId) && evidencedBy(context, event, id),
  );
}

/** A release answered, but not for every uncertain call: those are settled, the rest stay. */
export function settleEvidenced(args: Args): SandboxContext {
  const settled = new Set(evidencedOfLease(args));
  const unresolved = Object.fromEntries(
    Object.entries(args.context.sandbox.unresolved).filter(([id]) => !settled.has(id)),
  );
  return { ...args.context.sandbox, unresolved };
}

/** Why the lease waits in ReconciliationRequired after its release answered: what is still open. */
export function recordReleaseUnsettled(args: Args): SandboxContext {
  const open = unresolvedOfLease(args.context).filter(
    (id) =>
      !('attemptId' in args.event && id === args.event.attemptId) &&
      !evidencedBy(args.context, args.event, id),
  );
  return withLease(args.context.sandbox, {
    failure: {
      code: 'release-unsettled',
      message: `released what an exact lookup found, but attempt ${open.join(', ')} may still take effect: it stays unresolved until its resource is found or the provider proves it can no longer land`,
    },
  });
}

export function unresolvedOfLease(context: EnvironmentContext): string[] {
  const lease = context.sandbox.lease;
  if (lease === null) return [];
  return Object.entries(context.sandbox.unresolved)
    .filter(([, a]) => a.resourceGeneration === lease.resourceGeneration)
    .map(([id]) => id);
}

/** The renewal asked for, bound to the renew attempt just opened (openAttempt runs first). */
export function beginRenewal({ context, event }: Args): SandboxContext {
  if (event.type !== 'sandbox.renew' || context.sandbox.openedAttemptId === null) return context.sandbox;
  return withLease(context.sandbox, {
    renewal: {
      idempotencyKey: event.idempotencyKey,
      expiresAt: event.expiresAt,
      attemptId: context.sandbox.openedAttemptId,
      state: 'Pending',
      error: null,
    },
  });
}

/** The renew attempt answered: a confirmed renewal moves the expiry; anything else leaves it. */
export function applyRenewal({ context, event }: Args): SandboxContext {
  const renewal = context.sandbox.lease?.renewal;
  if (event.type !== 'sandbox.renewed' || renewal == null) return context.sandbox;
  // The lease expired (was fenced) while the call was in flight: its time is up, renewed or not.
  if (context.sandbox.lease?.expired === true) {
    const error = { code: 'lease-expired', message: 'the lease expired before the renewal was confirmed' };
    return withLease(context.sandbox, { renewal: { ...renewal, state: 'Failed', error } });
  }
  if (event.outcome === 'Succeeded') {
    return withLease(context.sandbox, {
      expiresAt: renewal.expiresAt,
      renewal: { ...renewal, state: 'Succeeded', error: null },
    });
  }
  const error = event.error ?? {
    code: event.outcome.toLowerCase(),
    message: `the renew attempt was ${event.outcome}`,
  };
  return withLease(context.sandbox, { renewal: { ...renewal, state: 'Failed', error } });
}

/** The lifecycle generation, one further, and the key that moved it. */
export function advanceLifecycle({ context, event }: Args): Partial<EnvironmentContext> {
  if (event.type !== 'environment.advance') return {};
  const toGeneration = context.lifecycleGeneration + 1;
  return {
    lifecycleGeneration: toGeneration,
    advances: {
      ...context.advances,
      [event.operationKey]: { fromGeneration: context.lifecycleGeneration, toGeneration },
    },
  };
}
