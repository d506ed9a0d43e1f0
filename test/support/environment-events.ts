// Concrete, schema-valid Environment events for machine tests. Provider results echo the attempt
// id, kind and fences of the effect they answer, exactly as a worker copies them from the outbox row.
import type { SnapshotFrom } from 'xstate';
import type { environmentMachine } from '../../machines/environment.ts';
import type {
  EnvironmentEvent,
  FlushTerms,
  ProviderResultEvent,
  ResourceSummary,
} from '../../machines/environment-events.ts';
import type { ProviderEffect } from '../../machines/environment-effects.ts';

export type EnvironmentSnapshot = SnapshotFrom<typeof environmentMachine>;
export type Outcome = 'succeeded' | 'failed' | 'unknown' | 'superseded';
export const outcomes: readonly Outcome[] = ['succeeded', 'failed', 'unknown', 'superseded'];

export const environmentInput = {
  environmentId: 'env_1',
  tenantId: 'tenant-a',
  projectId: 'project-a',
  runId: 'run-1',
};

export interface LeaseFences {
  resourceGeneration: number;
  providerFence: number;
}

/** The attempt a result answers: an effect's identity and fences, possibly tampered with. */
export type AttemptRef = Pick<ProviderEffect, 'attemptId' | 'kind' | 'operationId'> & {
  fences: LeaseFences & { fencingGeneration: number };
};

const workspace = {
  volumeId: 'vol-1',
  resourceGeneration: 1,
  dataGeneration: 1,
  mountPath: '/workspace',
  readOnly: false,
};

export const provision = (operationId: string, expiresAt: string | null = null): EnvironmentEvent => ({
  type: 'sandbox.provision',
  operationId,
  idempotencyKey: `provision-${operationId}`,
  ownerHash: 'owner-hash-1',
  workspace,
  networkPolicyGeneration: 1,
  providerIdentity: { provider: 'simulated' },
  providerOptions: {},
  runSelection: {},
  requestedBy: 'alice',
  expiresAt,
});

/** The lease's expiry passed by `at`'s clock. */
export const expire = (fences: LeaseFences, at: string): EnvironmentEvent => ({
  type: 'sandbox.expire',
  ...fences,
  at,
});

export const release = (expectedLifecycleGeneration = 1): EnvironmentEvent => ({
  type: 'environment.release',
  expectedLifecycleGeneration,
  idempotencyKey: `release-${expectedLifecycleGeneration}`,
});

export const abandon = (fences: LeaseFences): EnvironmentEvent => ({
  type: 'sandbox.abandon',
  ...fences,
  idempotencyKey: `abandon-${fences.resourceGeneration}-${fences.providerFence}`,
});

export const reconcile = (operationId: string, fences: LeaseFences): EnvironmentEvent => ({
  type: 'sandbox.reconcile',
  operationId,
  ...fences,
});

export const describe = (fences: LeaseFences): EnvironmentEvent => ({ type: 'sandbox.describe', ...fences });

/** Asks at `at` to move the lease's expiry to `expiresAt`. */
export const renew = (fences: LeaseFences, expiresAt: string, at: string): EnvironmentEvent => ({
  type: 'sandbox.renew',
  ...fences,
  idempotencyKey: 'renew-1',
  expiresAt,
  at,
});

export const renewed = (
  fences: LeaseFences,
  attemptId: string,
  outcome: 'Succeeded' | 'Failed',
): EnvironmentEvent => ({
  type: 'sandbox.renewed',
  ...fences,
  attemptId,
  outcome,
  error: outcome === 'Succeeded' ? null : { code: 'Rejected', message: 'renew failed' },
});

export const observed = (fences: LeaseFences, finished: 'PodSucceeded' | null): EnvironmentEvent => ({
  type: 'sandbox.observed',
  ...fences,
  phase: 'started',
  finished,
});

export const lost = (fences: LeaseFences): EnvironmentEvent => ({ type: 'sandbox.lost', ...fences });

export const ownResource = (operationId: string): ResourceSummary => ({
  resourceId: `pod-${operationId}`,
  operationId,
  phase: 'scheduled',
  placement: { node: 'node-a' },
});

/**
 * A provider result for `attempt`. A listOwned success lists `resources`: by default the lease's own
 * operation is among them; pass `[]` (or another operation's resource) for "not found".
 */
export function result(
  attempt: AttemptRef,
  outcome: Outcome,
  resources: ResourceSummary[] | null = null,
): ProviderResultEvent {
  const { kind } = attempt;
  // A describe answers with sandbox.observed (actors/attempts.ts), never a provider.* result.
  if (
    kind === 'describe' ||
    kind === 'renew' ||
    kind === 'cleanup' ||
    kind === 'sweep' ||
    kind === 'buildTest'
  )
    throw new Error(`${kind} attempts have no provider.* result`);
  const base = {
    attemptId: attempt.attemptId,
    kind,
    resourceGeneration: attempt.fences.resourceGeneration,
    providerFence: attempt.fences.providerFence,
    fencingGeneration: attempt.fences.fencingGeneration,
  };
  const error = {
    code: outcome === 'failed' ? 'Rejected' : 'Timeout',
    message: `${attempt.kind} ${outcome}`,
  };
  switch (outcome) {
    case 'succeeded':
      return {
        type: 'provider.succeeded',
        ...base,
        resource: attempt.kind === 'provision' ? ownResource(attempt.operationId) : null,
        receipt: attempt.kind === 'release' ? { deleted: true } : null,
        resources: attempt.kind === 'listOwned' ? (resources ?? [ownResource(attempt.operationId)]) : null,
      };
    case 'failed':
      return { type: 'provider.failed', ...base, error };
    case 'unknown':
      return { type: 'provider.unknown', ...base, error };
    case 'superseded':
      return { type: 'provider.superseded', ...base };
  }
}

/** A resource of `operationId`'s lease that arrived after the lease was terminal. */
export const lateResource = (
  source: { operationId: string; lifecycleGeneration: number } & LeaseFences,
): EnvironmentEvent => ({
  type: 'cleanup.recorded',
  foundBy: 'late-result',
  sourceAttemptId: null,
  items: [
    {
      cleanupId: `cleanup-${source.operationId}`,
      source: { ...source, ownerHash: 'owner-hash-1', providerOptions: {}, workspace },
      resource: ownResource(source.operationId),
    },
  ],
});

/** Sweep `n` of a terminal lease: an owner listing under its owner hash and fence. */
export const sweep = (
  lease: { operationId: string; lifecycleGeneration: number; currentFencingGeneration: number } & LeaseFences,
  n = 1,
): EnvironmentEvent => ({
  type: 'cleanup.sweep',
  operationId: lease.operationId,
  lifecycleGeneration: lease.lifecycleGeneration,
  resourceGeneration: lease.resourceGeneration,
  providerFence: lease.providerFence,
  ownerHash: 'owner-hash-1',
  providerOptions: {},
  workspace,
  fencingGeneration: lease.currentFencingGeneration,
  networkPolicyGeneration: 1,
  sweep: n,
});

/** Instants the model's reconcilers use: a claim made at T0 expires at T1; T2 is after that. */
export const T0 = '2026-01-01T00:00:00.000Z';
export const T1 = '2026-01-01T00:00:30.000Z';
export const T2 = '2026-01-01T00:01:00.000Z';

export const claimCleanup = (cleanupId: string, claimToken: string, at = T0): EnvironmentEvent => ({
  type: 'cleanup.claim',
  cleanupId,
  claimToken,
  at,
  expiresAt: at === T0 ? T1 : '2026-01-01T00:01:30.000Z',
});

export const cleanupReleased = (
  cleanupId: string,
  attemptId: string,
  claimToken: string,
): EnvironmentEvent => ({
  type: 'cleanup.released',
  cleanupId,
  attemptId,
  claimToken,
  receipt: { outcome: 'KnownOwnedAbsent' },
});

export const cleanupFailed = (
  cleanupId: string,
  attemptId: string,
  claimToken: string,
): EnvironmentEvent => ({
  type: 'cleanup.failed',
  cleanupId,
  attemptId,
  claimToken,
  error: { code: 'Timeout', message: 'cleanup unknown' },
});

/** The terms of a flush of vol-1 at revision 2 for the lease op-1 (resource generation 1). */
export const flushTerms: FlushTerms = {
  volumeId: 'vol-1',
  coreOperationId: 'op-suspend-1',
  stepId: 'agent_1',
  lease: { operationId: 'op-1', resourceGeneration: 1, providerFence: 1 },
  transitionRevision: 2,
  dataGeneration: 1,
};
