// The actor runtime's errors. Each class declares its code (also its problem type), its HTTP status
// and title, and which of its fields a caller may see, so the HTTP layer maps it without a table.
// Actor messages are written for callers (they name fences, states and IDs of the caller's own
// tenant, never a credential), so they are shown as the problem's `detail`.
import { SandlotError } from '../lib/errors.ts';

export class ActorError extends SandlotError {
  /** A subclass that declares nothing is a bug: it answers as a 500 that shows nothing. */
  readonly status: number = 500;
  readonly title: string = 'Internal error';

  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }

  override get detail(): string {
    return this.message;
  }
}

export class EnvironmentNotFoundError extends ActorError {
  override readonly status = 404;
  override readonly title = 'Environment not found';
  constructor(readonly environmentId: string) {
    super('environment-not-found', `Environment ${environmentId} does not exist`);
  }
}

/**
 * A fence the event carries is not the one stored: the sender acted on an old view. The runtime
 * checks one fence, the lifecycle generation, hence the code.
 */
export class StaleFenceError extends ActorError {
  override readonly status = 409;
  override readonly title = 'Lifecycle generation mismatch';
  constructor(
    readonly fence: string,
    readonly expected: number,
    readonly actual: number,
  ) {
    super('lifecycle-generation-mismatch', `${fence} is ${actual}, the event expected ${expected}`);
  }

  override get extensions() {
    return { expectedLifecycleGeneration: this.expected, currentLifecycleGeneration: this.actual };
  }
}

/** The stored snapshot could not be restored; the row is quarantined, never reset. */
export class SnapshotQuarantinedError extends ActorError {
  override readonly status = 503;
  override readonly title = 'Environment unavailable';
  constructor(
    readonly environmentId: string,
    readonly reason: string,
  ) {
    super('environment-quarantined', `Environment ${environmentId} is quarantined: ${reason}`);
  }
}

/** A newer binary wrote this snapshot; this process must not touch it. */
export class MachineVersionUnsupportedError extends ActorError {
  override readonly status = 503;
  override readonly title = 'Environment unavailable';
  constructor(
    readonly stored: number,
    readonly supported: number,
  ) {
    super('machine-version-unsupported', `snapshot machine version ${stored} is newer than ${supported}`);
  }
}

/** The revision compare-and-swap failed although the lock was held: a bug or a foreign writer. */
export class RevisionConflictError extends ActorError {
  override readonly status = 409;
  override readonly title = 'Conflict';
  constructor(
    readonly environmentId: string,
    readonly expectedRevision: number,
  ) {
    super('revision-conflict', `Environment ${environmentId} changed under revision ${expectedRevision}`);
  }
}

/** The caller lacks a permission on a project of its own tenant. */
export class ForbiddenError extends ActorError {
  override readonly status = 403;
  override readonly title = 'Forbidden';
  constructor(readonly missing: readonly string[]) {
    super('forbidden', `missing permission ${missing.join(', ')}`);
  }
}

export class RunSelectionMissingError extends ActorError {
  override readonly status = 409;
  override readonly title = 'Run selection missing';
  constructor(readonly runId: string) {
    super('run-selection-missing', `run ${runId} has no provider selection`);
  }
}

/** The run selection differs from the one the Environment pinned at registration. */
export class RunSelectionChangedError extends ActorError {
  override readonly status = 409;
  override readonly title = 'Run selection changed';
  constructor(readonly runId: string) {
    super(
      'run-selection-changed',
      `the provider selection of run ${runId} no longer matches the Environment`,
    );
  }
}

/** A release under another idempotency key already moved the Environment on. */
export class ReleaseConflictError extends ActorError {
  override readonly status = 409;
  override readonly title = 'Release already requested';
  constructor(readonly state: string) {
    super('release-conflict', `the Environment is already ${state} under a different idempotency key`);
  }

  override get extensions() {
    return { state: this.state };
  }
}

/** The Workspace is not the exact Available generation the request named. */
export class WorkspaceConflictError extends ActorError {
  override readonly status = 409;
  override readonly title = 'Workspace unavailable';
  constructor(readonly volumeId: string) {
    super(
      'workspace-unavailable',
      `workspace volume ${volumeId} is not available at the requested generation`,
    );
  }
}

/**
 * A trusted Workspace flush cannot go on as asked: its terms differ from what was reserved, the
 * placement or volume moved, or the flush is no longer open. Nothing was changed by the request.
 */
export class WorkspaceFlushConflictError extends ActorError {
  override readonly status = 409;
  override readonly title = 'Workspace flush conflict';
  constructor(code: string, message: string) {
    super(code, message);
  }
}

/**
 * The run selection does not name exactly one exclusive candidate matching the configured provider.
 * A mismatch conflicts with the configured provider (409); no usable candidate is unprocessable (422).
 */
export class ProviderSelectionError extends ActorError {
  override readonly status: 409 | 422;
  override readonly title = 'Provider selection unusable';
  constructor(
    readonly reason: 'no-exclusive-candidate' | 'several-exclusive-candidates' | 'mismatch',
    readonly mismatches: readonly { field: string; selected: unknown; configured: unknown }[],
    message: string,
  ) {
    super(reason === 'mismatch' ? 'provider-selection-mismatch' : 'provider-selection-invalid', message);
    this.status = reason === 'mismatch' ? 409 : 422;
  }

  override get extensions() {
    return { mismatches: this.mismatches };
  }
}

export class NetworkPolicyUnverifiedError extends ActorError {
  override readonly status = 409;
  override readonly title = 'Network policy not verified';
  constructor(message: string) {
    super('network-policy-unverified', message);
  }
}

/**
 * A lease (or the Environment) is not in a state that accepts this request. The code says which
 * state (`lease-conflict`, `lease-not-abandonable`, `environment-not-registered`, ...).
 */
export class LeaseConflictError extends ActorError {
  override readonly status = 409;
  override readonly title = 'Conflict';
  constructor(code: string, message: string) {
    super(code, message);
  }
}

export class LeaseNotFoundError extends ActorError {
  override readonly status = 404;
  override readonly title = 'Lease not found';
  constructor(message: string) {
    super('lease-not-found', message);
  }
}

/** The request named a resource generation or provider fence that is not the current one. */
export class StaleLeaseFenceError extends ActorError {
  override readonly status = 409;
  override readonly title = 'Stale lease fence';
  constructor(
    readonly current: { resourceGeneration: number; providerFence: number } | null,
    message: string,
  ) {
    super('stale-fence', message);
  }

  override get extensions() {
    return { current: this.current };
  }
}

/** Unresolved provider attempts (or a reconciliation in flight) block Environment release. */
export class ReleaseBlockedError extends ActorError {
  override readonly status = 409;
  override readonly title = 'Release blocked';
  constructor(
    readonly unresolvedAttempts: readonly string[],
    readonly pendingCleanups: readonly string[] = [],
  ) {
    super(
      'release-blocked',
      pendingCleanups.length === 0
        ? `release waits for ${unresolvedAttempts.length} unresolved provider attempt(s); reconcile them first`
        : `release waits for ${unresolvedAttempts.length} unresolved provider attempt(s) and ${pendingCleanups.length} late-resource cleanup(s); reconcile them first`,
    );
  }

  override get extensions() {
    return { unresolvedAttempts: this.unresolvedAttempts, pendingCleanups: this.pendingCleanups };
  }

  /** Reconciliation looks at unresolved attempts every few seconds (SANDLOT_RECONCILE_EVERY_MS). */
  override get retryAfterSeconds(): number {
    return 5;
  }
}

/** A run-bound route called without the exact project/run bindings in the token. */
export class RunBindingError extends ActorError {
  override readonly status = 403;
  override readonly title = 'Run binding required';
  constructor(message: string) {
    super('run-binding-required', message);
  }
}

/** The placement cannot be projected: the lease is not current and Active, expired, or moved. */
export class PlacementRefusedError extends ActorError {
  override readonly status = 409;
  override readonly title = 'Placement unavailable';
  constructor(code: 'placement-not-active' | 'lease-expired' | 'placement-changed', message: string) {
    super(code, message);
  }
}

/** A list cursor that is not one this server gave for the same scope and filters. */
export class InvalidCursorError extends ActorError {
  override readonly status = 400;
  override readonly title = 'Invalid cursor';
  constructor(reason: string) {
    super('invalid-cursor', `the cursor ${reason}: ask for the first page again without it`);
  }
}
