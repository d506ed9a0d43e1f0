// The Environment machine's context and the state names other layers rely on. Guards, updates and
// the machine itself import their types from here, so the machine definition is not part of a
// type cycle with the functions it is built from.
import type { ResourceSummary, WorkspaceMount } from './environment-events.ts';

export type LifecycleState = 'Registered' | 'Releasing' | 'Released';
export const lifecycleStates: readonly LifecycleState[] = ['Registered', 'Releasing', 'Released'];

export type SandboxState =
  'NoLease' | 'Provisioning' | 'Active' | 'Releasing' | 'ReconciliationRequired' | 'Released' | 'Failed';

/**
 * One current lease per Environment: these are the states of a current lease. The partial unique
 * index sandbox_leases_one_current (migration 0002) spells the same list in SQL.
 */
export const currentLeaseStates = ['Provisioning', 'Active', 'Releasing', 'ReconciliationRequired'] as const;

export const isCurrentLeaseState = (state: string): boolean =>
  (currentLeaseStates as readonly string[]).includes(state);

export type ReleaseReason = 'abandon' | 'lifecycle' | 'retired';

export interface LeaseContext {
  operationId: string;
  idempotencyKey: string;
  lifecycleGeneration: number;
  resourceGeneration: number;
  providerFence: number;
  /** Abandon increments it first; an attempt opened under an older value is stale. */
  currentFencingGeneration: number;
  ownerHash: string;
  workspace: WorkspaceMount;
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

export interface EnvironmentContext {
  environmentId: string;
  tenantId: string;
  projectId: string;
  runId: string;
  lifecycleGeneration: number;
  release: { idempotencyKey: string } | null;
  sandbox: SandboxContext;
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
