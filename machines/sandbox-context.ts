// The sandbox region's context and the pure helpers that build its effects and records. Nothing
// here does I/O: effects are data that the actor runtime writes to the outbox (and the attempt
// table) in the same transaction as the transition.
import type { AttemptKind, ResourceSummary } from './environment-events.ts';

export interface WorkspaceBinding {
  volumeId: string;
  resourceGeneration: number;
  dataGeneration: number;
  mountPath: string;
  readOnly: boolean;
}

export type ReleaseReason = 'abandon' | 'lifecycle' | 'retired';
export type SandboxState =
  'NoLease' | 'Provisioning' | 'Active' | 'Releasing' | 'ReconciliationRequired' | 'Released' | 'Failed';

export interface LeaseContext {
  operationId: string;
  idempotencyKey: string;
  lifecycleGeneration: number;
  resourceGeneration: number;
  providerFence: number;
  /** Abandon increments it first; an attempt opened under an older value is stale. */
  currentFencingGeneration: number;
  ownerHash: string;
  workspace: WorkspaceBinding;
  networkPolicyGeneration: number;
  providerOptions: Record<string, unknown>;
  resource: ResourceSummary | null;
  finished: 'PodSucceeded' | 'PodFailed' | null;
  release: { reason: ReleaseReason; idempotencyKey: string | null } | null;
  /** A release receipt arrived while an older provision attempt was still unresolved. */
  releaseConfirmed: boolean;
  /** What ReconciliationRequired must settle. */
  recovering: 'provision' | 'release' | null;
  reconcileAttemptId: string | null;
  failure: { code: string; message: string } | null;
}

/** Unresolved mutating attempts (provision, release): they block Environment release. */
export interface UnresolvedAttempt {
  kind: 'provision' | 'release';
  resourceGeneration: number;
  fencingGeneration: number;
  state: 'Pending' | 'Unknown';
}

export interface SandboxContext {
  counters: { resourceGeneration: number; providerFence: number; attemptSeq: number };
  lease: LeaseContext | null;
  unresolved: Record<string, UnresolvedAttempt>;
  /** The attempt most recently opened; the next `effect.provider` action is for it. */
  openedAttemptId: string | null;
}

export interface EffectFences {
  lifecycleGeneration: number;
  resourceGeneration: number;
  providerFence: number;
  fencingGeneration: number;
}

/** One provider call to make, exactly as the attempt row will record it. */
export interface ProviderEffect {
  attemptId: string;
  kind: AttemptKind;
  operationId: string;
  fences: EffectFences;
  request: {
    ownerHash: string;
    workspace: WorkspaceBinding;
    networkPolicyGeneration: number;
    providerOptions: Record<string, unknown>;
    resourceId: string | null;
    releaseIdempotencyKey: string | null;
  };
}

/** A lease row write the runtime performs in the transition's transaction. */
export interface LeaseRecord {
  resourceGeneration: number;
  state: SandboxState;
  currentFencingGeneration: number;
  resource: ResourceSummary | null;
  releaseReceipt: Record<string, unknown> | null;
  failure: { code: string; message: string } | null;
}

/** An unresolved attempt settled by reconciliation rather than by its own result. */
export interface AttemptResolution {
  attemptId: string;
  state: 'Succeeded' | 'Superseded';
  resolution: string;
}

export const attemptIdFor = (operationId: string, kind: AttemptKind, seq: number) =>
  `${operationId}.${kind}.${seq}`;

export function effectFor(lease: LeaseContext, attemptId: string, kind: AttemptKind): ProviderEffect {
  return {
    attemptId,
    kind,
    operationId: lease.operationId,
    fences: {
      lifecycleGeneration: lease.lifecycleGeneration,
      resourceGeneration: lease.resourceGeneration,
      providerFence: lease.providerFence,
      fencingGeneration: lease.currentFencingGeneration,
    },
    request: {
      ownerHash: lease.ownerHash,
      workspace: lease.workspace,
      networkPolicyGeneration: lease.networkPolicyGeneration,
      providerOptions: lease.providerOptions,
      resourceId: lease.resource?.resourceId ?? null,
      releaseIdempotencyKey:
        kind === 'release' ? `${lease.operationId}.release.${lease.currentFencingGeneration}` : null,
    },
  };
}

export function leaseRecord(
  lease: LeaseContext,
  state: SandboxState,
  releaseReceipt: Record<string, unknown> | null = null,
): LeaseRecord {
  return {
    resourceGeneration: lease.resourceGeneration,
    state,
    currentFencingGeneration: lease.currentFencingGeneration,
    resource: lease.resource,
    releaseReceipt,
    failure: lease.failure,
  };
}

/** Attempts of this lease still unresolved, other than `except`. */
export function otherUnresolved(context: SandboxContext, except: string): string[] {
  const lease = context.lease;
  if (lease === null) return [];
  return Object.entries(context.unresolved)
    .filter(([id, a]) => id !== except && a.resourceGeneration === lease.resourceGeneration)
    .map(([id]) => id);
}

export function withoutAttempt(unresolved: Record<string, UnresolvedAttempt>, attemptId: string) {
  return Object.fromEntries(Object.entries(unresolved).filter(([id]) => id !== attemptId));
}
