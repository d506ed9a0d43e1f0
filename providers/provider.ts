// The provider port: every implementation (simulated, Kubernetes Agent Sandbox) passes the same
// contract suite in test/contract/. Calls take an AbortSignal and a deadline; a provider never
// reports absence it did not observe exactly, and never reports failure for an outcome it is unsure of.
import type { SandboxPhase, WorkspaceMount } from '../machines/environment-events.ts';

export interface ProviderIdentity {
  providerId: string;
  adapterVersion: string;
  optionsSchemaVersion: number;
  /** Bounded immutable revision of the provider options this process was configured with. */
  optionsRevision: string;
  hostingPattern: string;
  capabilities: string[];
}

/** Who owns a resource, with every fence; stamped on the resource (labels) and checked on read. */
export interface OwnerBinding {
  tenantId: string;
  projectId: string;
  runId: string;
  environmentId: string;
  /** First 40 lower-case hex digits of the SHA-256 of the canonical owner tuple (a label value holds 63). */
  ownerHash: string;
  lifecycleGeneration: number;
  resourceGeneration: number;
  providerFence: number;
  operationId: string;
}

/** The Workspace volume a sandbox mounts; defined once, by the machine's event schema. */
export type { WorkspaceMount };

export interface ProvisionRequest {
  owner: OwnerBinding;
  workspace: WorkspaceMount;
  networkPolicyGeneration: number;
  /** Provider options as persisted with the lease: recovery uses these, never current settings. */
  options: ProviderOptionsSnapshot;
  /** When the lease expires (ISO instant), or absent/null for a lease that never expires. */
  expiresAt?: string | null;
}

/** Provider-specific options (namespace, image, runtime class…), frozen into the lease at reservation. */
export type ProviderOptionsSnapshot = Readonly<Record<string, unknown>>;

/**
 * `pending`: the resource exists and is ours, but nothing runs yet (no Pod, or not scheduled). It is
 * a phase, not an absence, so a sandbox that never schedules can still be listed and released.
 * `configured`: the sandbox's guest said its configuration completed, and the provider's own answer
 * carries that signal explicitly (sandbox-host: in the host-signed describe). It is never inferred
 * from `started`; the Kubernetes providers never report it (their AgentHost handshake does).
 */
export type ProviderPhase = SandboxPhase;

export interface ProviderResource {
  /** The provider's stable identity of the resource (a claim name + UID for Kubernetes). */
  resourceId: string;
  owner: OwnerBinding;
  phase: ProviderPhase;
  /** Set once the sandbox ran to completion: placement may be retired (not the Environment). */
  finished?: { reason: 'PodSucceeded' | 'PodFailed' };
  /** Opaque placement references (endpoint, pod, node) recorded with the lease. */
  placement: Readonly<Record<string, string>>;
}

export interface ResourceRef {
  owner: OwnerBinding;
  resourceId: string;
  options: ProviderOptionsSnapshot;
}

export interface ReleaseRequest extends ResourceRef {
  /** The release's own idempotency key; echoed in the receipt. */
  idempotencyKey: string;
}

/** Proof of absence: only after an exact, successful lookup found nothing of ours left. */
export interface ReleaseReceipt {
  outcome: 'KnownOwnedAbsent';
  resourceId: string;
  idempotencyKey: string;
}

export interface OwnedQuery {
  /** Owner hash and provider fence must match exactly; operationId narrows further when given. */
  owner: Pick<OwnerBinding, 'ownerHash' | 'providerFence'> & { operationId?: string };
  options: ProviderOptionsSnapshot;
}

export interface CallOptions {
  signal: AbortSignal;
  deadline: Date;
}

export interface RenewRequest extends ResourceRef {
  /** The lease's new expiry (ISO instant); a repeat with the same value changes nothing. */
  expiresAt: string;
}

export interface RenewReceipt {
  resourceId: string;
  expiresAt: string;
}

/** A provision call whose outcome is unknown: its lease operation and the deadline it was given. */
export interface UncertainCall {
  operationId: string;
  deadline: Date;
}

export type DescribeResult = { present: true; resource: ProviderResource } | { present: false };

export interface SandboxProvider {
  readonly identity: ProviderIdentity;
  /** Options snapshot for a new lease, taken from this process's configuration. */
  optionsSnapshot(): ProviderOptionsSnapshot;
  /** Idempotent per operation: a repeat returns the same resource, never a second one. */
  provision(request: ProvisionRequest, options: CallOptions): Promise<ProviderResource>;
  /** Exact lookup; `present: false` only when the provider answered that it is absent. */
  describe(ref: ResourceRef, options: CallOptions): Promise<DescribeResult>;
  /** Every resource with this exact owner and fence. An error or partial read throws, never []. */
  listOwned(query: OwnedQuery, options: CallOptions): Promise<ProviderResource[]>;
  /**
   * Moves the resource's term to `expiresAt` (Agent Sandbox: the claim's shutdown time, a backstop
   * far past the lease's expiry). Idempotent; throws a definitive error when the resource is absent.
   */
  renew(request: RenewRequest, options: CallOptions): Promise<RenewReceipt>;
  /** Deletes and waits until an exact lookup shows the resource gone. */
  release(request: ReleaseRequest, options: CallOptions): Promise<ReleaseReceipt>;
  /**
   * The provider's own proof that an uncertain provision can no longer take effect as of an exact
   * listing begun at `listedAt`, so that listing not finding its resource is evidence it has none
   * (see docs/architecture.md "Uncertain stays uncertain"). False whenever the provider cannot
   * prove it: a timeout, an empty list or a refusal alone never is.
   */
  callSettled(call: UncertainCall, listedAt: Date): Promise<boolean>;
}

/** One resource as the provider's own inventory lists it: its identity and the owner stamped on it. */
export interface InventoryEntry {
  resourceId: string;
  owner: OwnerBinding;
}

/**
 * An optional capability, apart from the SandboxProvider port: every live resource this provider
 * holds that carries Sandlot's owner stamp, whoever's it is. Only `sandlot audit` uses it (to find
 * orphans without knowing their owners); nothing on the lifecycle path may depend on it. An error or
 * a partial read throws, never a short list.
 */
export interface ProviderInventory {
  inventory(options: CallOptions): Promise<InventoryEntry[]>;
}

/**
 * An optional capability, apart from the SandboxProvider port: which of the provider's resources
 * changed in a way an Active lease must learn of (its run finished, or it is gone), as they change
 * (Kubernetes: a list + watch; the simulated provider: its change numbers), so the observer
 * describes just those leases instead of waiting for its turn round all of them. A change is a
 * hint, never evidence: it only makes the observer run an exact describe through the attempt
 * runner, and a missed change is found by the observer's slow full pass.
 */
export interface ProviderChangeFeed {
  /**
   * Calls `onChange` with the IDs of resources that finished or went away from now on, until `signal` aborts; resolves then. A failure to follow is retried inside (and logged by
   * the caller's `onError`), never thrown.
   */
  followChanges(
    onChange: (resourceIds: string[]) => void,
    options: { signal: AbortSignal; onError?: (error: unknown) => void },
  ): Promise<void>;
}

export const hasChangeFeed = <P extends object>(provider: P): provider is P & ProviderChangeFeed =>
  typeof (provider as Partial<ProviderChangeFeed>).followChanges === 'function';
