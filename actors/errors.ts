// The actor runtime's errors. Each class declares its code (also its problem type), its HTTP status
// and title, and which of its fields a caller may see, so the HTTP layer maps it without a table.
// Actor messages are written for callers (they name fences, states and IDs of the caller's own
// tenant, never a credential), so they are shown as the problem's `detail`. Every class is declared
// with problemClass (lib/errors.ts) over ActorError, the family `instanceof` tells apart.
import { problemClass } from '../lib/errors.ts';

/**
 * The family of actor errors: its messages are caller-safe. An instance of the family itself
 * (a code but no declaration of its own) is a bug: it answers as a 500 that shows nothing.
 */
export class ActorError extends problemClass({ status: 500, title: 'Internal error', callerSafe: true }) {}

export class EnvironmentNotFoundError extends problemClass(
  { code: 'environment-not-found', status: 404, title: 'Environment not found' },
  ActorError,
) {
  constructor(readonly environmentId: string) {
    super(`Environment ${environmentId} does not exist`);
  }
}

/**
 * A fence the event carries is not the one stored: the sender acted on an old view. The runtime
 * checks one fence, the lifecycle generation, hence the code.
 */
export class StaleFenceError extends problemClass(
  { code: 'lifecycle-generation-mismatch', status: 409, title: 'Lifecycle generation mismatch' },
  ActorError,
) {
  constructor(
    readonly fence: string,
    readonly expected: number,
    readonly actual: number,
  ) {
    super(`${fence} is ${actual}, the event expected ${expected}`);
  }

  override get extensions() {
    return { expectedLifecycleGeneration: this.expected, currentLifecycleGeneration: this.actual };
  }
}

/** The stored snapshot could not be restored; the row is quarantined, never reset. */
export class SnapshotQuarantinedError extends problemClass(
  { code: 'environment-quarantined', status: 503, title: 'Environment unavailable' },
  ActorError,
) {
  constructor(
    readonly environmentId: string,
    readonly reason: string,
  ) {
    super(`Environment ${environmentId} is quarantined: ${reason}`);
  }
}

/** A newer binary wrote this snapshot; this process must not touch it. */
export class MachineVersionUnsupportedError extends problemClass(
  { code: 'machine-version-unsupported', status: 503, title: 'Environment unavailable' },
  ActorError,
) {
  constructor(
    readonly stored: number,
    readonly supported: number,
  ) {
    super(`snapshot machine version ${stored} is newer than ${supported}`);
  }
}

/** The revision compare-and-swap failed although the lock was held: a bug or a foreign writer. */
export class RevisionConflictError extends problemClass(
  { code: 'revision-conflict', status: 409, title: 'Conflict' },
  ActorError,
) {
  constructor(
    readonly environmentId: string,
    readonly expectedRevision: number,
  ) {
    super(`Environment ${environmentId} changed under revision ${expectedRevision}`);
  }
}

/** The caller lacks a permission on a project of its own tenant. */
export class ForbiddenError extends problemClass(
  { code: 'forbidden', status: 403, title: 'Forbidden' },
  ActorError,
) {
  constructor(readonly missing: readonly string[]) {
    super(`missing permission ${missing.join(', ')}`);
  }
}

export class RunSelectionMissingError extends problemClass(
  { code: 'run-selection-missing', status: 409, title: 'Run selection missing' },
  ActorError,
) {
  constructor(readonly runId: string) {
    super(`run ${runId} has no provider selection`);
  }
}

/** The run selection differs from the one the Environment pinned at registration. */
export class RunSelectionChangedError extends problemClass(
  { code: 'run-selection-changed', status: 409, title: 'Run selection changed' },
  ActorError,
) {
  constructor(readonly runId: string) {
    super(`the provider selection of run ${runId} no longer matches the Environment`);
  }
}

/** A release under another idempotency key already moved the Environment on. */
export class ReleaseConflictError extends problemClass(
  { code: 'release-conflict', status: 409, title: 'Release already requested' },
  ActorError,
) {
  constructor(readonly state: string) {
    super(`the Environment is already ${state} under a different idempotency key`);
  }

  override get extensions() {
    return { state: this.state };
  }
}

/** The Workspace is not the exact Available generation the request named. */
export class WorkspaceConflictError extends problemClass(
  { code: 'workspace-unavailable', status: 409, title: 'Workspace unavailable' },
  ActorError,
) {
  constructor(readonly volumeId: string) {
    super(`workspace volume ${volumeId} is not available at the requested generation`);
  }
}

/**
 * A trusted Workspace flush cannot go on as asked: its terms differ from what was reserved, the
 * placement or volume moved, or the flush is no longer open. Nothing was changed by the request.
 */
export class WorkspaceFlushConflictError extends problemClass(
  { status: 409, title: 'Workspace flush conflict' },
  ActorError,
) {
  constructor(code: string, message: string) {
    super(message, { code });
  }
}

/**
 * The run selection does not name exactly one exclusive candidate matching the configured provider.
 * A mismatch conflicts with the configured provider (409); no usable candidate is unprocessable (422).
 */
export class ProviderSelectionError extends problemClass(
  { status: 409, title: 'Provider selection unusable' },
  ActorError,
) {
  constructor(
    readonly reason: 'no-exclusive-candidate' | 'several-exclusive-candidates' | 'mismatch',
    readonly mismatches: readonly { field: string; selected: unknown; configured: unknown }[],
    message: string,
  ) {
    super(
      message,
      reason === 'mismatch'
        ? { code: 'provider-selection-mismatch', status: 409 }
        : { code: 'provider-selection-invalid', status: 422 },
    );
  }

  override get extensions() {
    return { mismatches: this.mismatches };
  }
}

export class NetworkPolicyUnverifiedError extends problemClass(
  { code: 'network-policy-unverified', status: 409, title: 'Network policy not verified' },
  ActorError,
) {
  constructor(message: string) {
    super(message);
  }
}

/**
 * A lease (or the Environment) is not in a state that accepts this request. The code says which
 * state (`lease-conflict`, `lease-not-abandonable`, `environment-not-registered`, ...).
 */
export class LeaseConflictError extends problemClass({ status: 409, title: 'Conflict' }, ActorError) {
  constructor(code: string, message: string) {
    super(message, { code });
  }
}

export class LeaseNotFoundError extends problemClass(
  { code: 'lease-not-found', status: 404, title: 'Lease not found' },
  ActorError,
) {
  constructor(message: string) {
    super(message);
  }
}

/** The request named a resource generation or provider fence that is not the current one. */
export class StaleLeaseFenceError extends problemClass(
  { code: 'stale-fence', status: 409, title: 'Stale lease fence' },
  ActorError,
) {
  constructor(
    readonly current: { resourceGeneration: number; providerFence: number } | null,
    message: string,
  ) {
    super(message);
  }

  override get extensions() {
    return { current: this.current };
  }
}

/**
 * Unresolved provider attempts (or a reconciliation in flight) block Environment release.
 * Reconciliation looks at unresolved attempts every few seconds (SANDLOT_RECONCILE_EVERY_MS).
 */
export class ReleaseBlockedError extends problemClass(
  { code: 'release-blocked', status: 409, title: 'Release blocked', retryAfterSeconds: 5 },
  ActorError,
) {
  constructor(
    readonly unresolvedAttempts: readonly string[],
    readonly pendingCleanups: readonly string[] = [],
  ) {
    super(
      pendingCleanups.length === 0
        ? `release waits for ${unresolvedAttempts.length} unresolved provider attempt(s); reconcile them first`
        : `release waits for ${unresolvedAttempts.length} unresolved provider attempt(s) and ${pendingCleanups.length} late-resource cleanup(s); reconcile them first`,
    );
  }

  override get extensions() {
    return { unresolvedAttempts: this.unresolvedAttempts, pendingCleanups: this.pendingCleanups };
  }
}

/** A run-bound route called without the exact project/run bindings in the token. */
export class RunBindingError extends problemClass(
  { code: 'run-binding-required', status: 403, title: 'Run binding required' },
  ActorError,
) {
  constructor(message: string) {
    super(message);
  }
}

/** The placement cannot be projected: the lease is not current and Active, expired, or moved. */
export class PlacementRefusedError extends problemClass(
  { status: 409, title: 'Placement unavailable' },
  ActorError,
) {
  constructor(code: 'placement-not-active' | 'lease-expired' | 'placement-changed', message: string) {
    super(message, { code });
  }
}

/** A list cursor that is not one this server gave for the same scope and filters. */
export class InvalidCursorError extends problemClass(
  { code: 'invalid-cursor', status: 400, title: 'Invalid cursor' },
  ActorError,
) {
  constructor(reason: string) {
    super(`the cursor ${reason}: ask for the first page again without it`);
  }
}
