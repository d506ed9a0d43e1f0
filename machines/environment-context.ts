// The Environment machine's context and the state names other layers rely on. Guards, updates and
// the machine itself import their types from here, so the machine definition is not part of a
// type cycle with the functions it is built from.
import type {
  CommandLease,
  CommandStep,
  FlushTerms,
  ResourceSummary,
  WorkspaceMount,
} from './environment-events.ts';

export type LifecycleState = 'Registered' | 'Releasing' | 'Released';
export const lifecycleStates: readonly LifecycleState[] = ['Registered', 'Releasing', 'Released'];

export const sandboxStates = [
  'NoLease',
  'Provisioning',
  'Active',
  'Releasing',
  'ReconciliationRequired',
  'Released',
  'Failed',
] as const;
export type SandboxState = (typeof sandboxStates)[number];

/**
 * One current lease per Environment: these are the states of a current lease. The partial unique
 * index sandbox_leases_one_current (migration 0002) spells the same list in SQL.
 */
export const currentLeaseStates = ['Provisioning', 'Active', 'Releasing', 'ReconciliationRequired'] as const;

export const isCurrentLeaseState = (state: string): boolean =>
  (currentLeaseStates as readonly string[]).includes(state);

/**
 * Why a lease is parked (its `failure.code` while `authorityLapse` is set): the authority a result
 * was committed under or the run's pinned selection did not hold when it was committed.
 */
export const authorityLapseCodes = [
  'authority-lapsed',
  'run-selection-changed',
  'run-selection-missing',
  'authority-unavailable',
] as const;
export type AuthorityLapseCode = (typeof authorityLapseCodes)[number];

export type ReleaseReason = 'abandon' | 'lifecycle' | 'retired' | 'lost';

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
  /**
   * A result (a provision, listing or release result, or an observation of the Active lease)
   * arrived after the authority it is committed under (or the run's selection) lapsed: the lease
   * waits in ReconciliationRequired, never dispatchable nor Released, until a caller with current
   * authority releases it. Reconciliation does not revive it.
   */
  authorityLapse: { code: string; message: string } | null;
  /** When the lease expires (null: never), and whether its expiry was fenced already. */
  expiresAt: string | null;
  expired: boolean;
  /** The latest renewal asked for (absent on leases from before renewals existed). */
  renewal?: RenewalContext | null;
}

/**
 * A renewal moves the lease's expiry once the provider confirmed its term moved (a renew attempt
 * through the one runner). Like a describe it never blocks release; only the latest is kept.
 */
export interface RenewalContext {
  idempotencyKey: string;
  /** The expiry asked for. */
  expiresAt: string;
  attemptId: string;
  state: 'Pending' | 'Succeeded' | 'Failed';
  error: { code: string; message: string } | null;
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

/** The Environment's owner fence now: a cleanup claim is authorized by it and its receipt CAS'd on it. */
export interface OwnerFence {
  lifecycleGeneration: number;
  providerFence: number;
}

/** The lease a late resource was created for, exactly as its binding was stamped on the resource. */
export interface CleanupSource {
  operationId: string;
  lifecycleGeneration: number;
  resourceGeneration: number;
  providerFence: number;
  ownerHash: string;
  providerOptions: Record<string, unknown>;
  workspace: WorkspaceMount;
}

/**
 * A late resource not yet released (released ones live on in the table only). Pending: available
 * to claim. Claimed: one reconciler holds it until `claimExpiresAt`, with one release attempt.
 */
export interface CleanupItem {
  state: 'Pending' | 'Claimed';
  resourceId: string;
  source: CleanupSource;
  claimToken: string | null;
  claimExpiresAt: string | null;
  attemptId: string | null;
  authorizingFence: OwnerFence | null;
}

export type CommandState = 'Running' | 'ReconciliationRequired' | 'Succeeded' | 'Failed' | 'Interrupted';
export const terminalCommandStates: readonly CommandState[] = ['Succeeded', 'Failed', 'Interrupted'];

/** An operation not yet cleaned up (cleaned ones live on in the table only). */
export interface CommandItem {
  state: CommandState;
  /** The step the open (or next) attempt is for; null once nothing is left to do but acknowledge. */
  step: CommandStep | null;
  /** The open attempt; null when none is (a reconcile opens the next). */
  attemptId: string | null;
  /** Attempts opened so far: the next attempt's sequence number is this plus one. */
  attempts: number;
  acknowledged: boolean;
  lease: CommandLease;
}

export type FlushState = 'Reserved' | 'Uncertain' | 'Verified' | 'Refused';
/** A flush may be delivered (again) only while it is open. */
export const openFlushStates: readonly FlushState[] = ['Reserved', 'Uncertain'];

/** A trusted Workspace flush: its immutable terms, where it stands, and how often it was delivered. */
export interface FlushItem {
  state: FlushState;
  terms: FlushTerms;
  deliveries: number;
}

export interface EnvironmentContext {
  environmentId: string;
  tenantId: string;
  projectId: string;
  runId: string;
  lifecycleGeneration: number;
  release: { idempotencyKey: string } | null;
  sandbox: SandboxContext;
  /** Late resources awaiting release, by cleanup ID. Any entry blocks Environment release. */
  cleanups: Record<string, CleanupItem>;
  /** BuildTest operations not cleaned up yet, by Core's operation ID. */
  commands: Record<string, CommandItem>;
  /**
   * Trusted Workspace flushes by flush operation ID. A Verified one is the evidence a placement
   * release and a resume rely on.
   */
  flushes: Record<string, FlushItem>;
  /** Lifecycle generation advances by operation key: each key advances once (a replay finds it). */
  advances: Record<string, { fromGeneration: number; toGeneration: number }>;
}

export const ownerFenceOf = (context: EnvironmentContext): OwnerFence => ({
  lifecycleGeneration: context.lifecycleGeneration,
  providerFence: context.sandbox.counters.providerFence,
});

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
