// The actor runtime's error taxonomy. Each has a stable `code` so callers (HTTP, workers) map it
// without string matching; `name` is set because errors cross process boundaries.

export class ActorError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

export class EnvironmentNotFoundError extends ActorError {
  constructor(readonly environmentId: string) {
    super('environment-not-found', `Environment ${environmentId} does not exist`);
  }
}

/** A fence the event carries is not the one stored: the sender acted on an old view. */
export class StaleFenceError extends ActorError {
  constructor(
    readonly fence: string,
    readonly expected: number,
    readonly actual: number,
  ) {
    super('stale-fence', `${fence} is ${actual}, the event expected ${expected}`);
  }
}

/** The stored snapshot could not be restored; the row is quarantined, never reset. */
export class SnapshotQuarantinedError extends ActorError {
  constructor(
    readonly environmentId: string,
    readonly reason: string,
  ) {
    super('environment-quarantined', `Environment ${environmentId} is quarantined: ${reason}`);
  }
}

/** A newer binary wrote this snapshot; this process must not touch it. */
export class MachineVersionUnsupportedError extends ActorError {
  constructor(
    readonly stored: number,
    readonly supported: number,
  ) {
    super('machine-version-unsupported', `snapshot machine version ${stored} is newer than ${supported}`);
  }
}

/** The revision compare-and-swap failed although the lock was held: a bug or a foreign writer. */
export class RevisionConflictError extends ActorError {
  constructor(
    readonly environmentId: string,
    readonly expectedRevision: number,
  ) {
    super('revision-conflict', `Environment ${environmentId} changed under revision ${expectedRevision}`);
  }
}

/** The caller lacks a permission on a project of its own tenant. */
export class ForbiddenError extends ActorError {
  constructor(readonly missing: readonly string[]) {
    super('forbidden', `missing permission ${missing.join(', ')}`);
  }
}

export class RunSelectionMissingError extends ActorError {
  constructor(readonly runId: string) {
    super('run-selection-missing', `run ${runId} has no provider selection`);
  }
}

/** The run selection differs from the one the Environment pinned at registration. */
export class RunSelectionChangedError extends ActorError {
  constructor(readonly runId: string) {
    super(
      'run-selection-changed',
      `the provider selection of run ${runId} no longer matches the Environment`,
    );
  }
}

/** A release under another idempotency key already moved the Environment on. */
export class ReleaseConflictError extends ActorError {
  constructor(readonly state: string) {
    super('release-conflict', `the Environment is already ${state} under a different idempotency key`);
  }
}

/** The Workspace is not the exact Available generation the request named. */
export class WorkspaceConflictError extends ActorError {
  constructor(readonly volumeId: string) {
    super(
      'workspace-unavailable',
      `workspace volume ${volumeId} is not available at the requested generation`,
    );
  }
}

/** The run selection does not name exactly one exclusive candidate matching the configured provider. */
export class ProviderSelectionError extends ActorError {
  constructor(
    readonly reason: 'no-exclusive-candidate' | 'several-exclusive-candidates' | 'mismatch',
    readonly mismatches: readonly { field: string; selected: unknown; configured: unknown }[],
    message: string,
  ) {
    super(reason === 'mismatch' ? 'provider-selection-mismatch' : 'provider-selection-invalid', message);
  }
}

export class NetworkPolicyUnverifiedError extends ActorError {
  constructor(message: string) {
    super('network-policy-unverified', message);
  }
}

/** A lease (or the Environment) is not in a state that accepts this request. */
export class LeaseConflictError extends ActorError {
  constructor(code: string, message: string) {
    super(code, message);
  }
}

export class LeaseNotFoundError extends ActorError {
  constructor(message: string) {
    super('lease-not-found', message);
  }
}

/** The request named a resource generation or provider fence that is not the current one. */
export class StaleLeaseFenceError extends ActorError {
  constructor(
    readonly current: { resourceGeneration: number; providerFence: number } | null,
    message: string,
  ) {
    super('stale-fence', message);
  }
}

/** Unresolved provider attempts (or a reconciliation in flight) block Environment release. */
export class ReleaseBlockedError extends ActorError {
  constructor(readonly unresolvedAttempts: readonly string[]) {
    super(
      'release-blocked',
      `release waits for ${unresolvedAttempts.length} unresolved provider attempt(s); reconcile them first`,
    );
  }
}
