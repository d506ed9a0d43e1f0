// The refusals of the runtime profile resolve and read. Each names what failed and never a value
// from the configuration or the Host's answer (a probe code is a fixed transport or verdict code).
import { ActorError } from './errors.ts';

/** No immutable AgentHost configuration was given at start (SANDLOT_AGENTHOST_CONFIG_FILE). */
export class RuntimeProfilesUnavailableError extends ActorError {
  override readonly status = 409;
  override readonly title = 'Runtime profiles unavailable';
  constructor() {
    super(
      'runtime-profiles-unavailable',
      'no AgentHost configuration was given at start; no profile can resolve',
    );
  }
}

export class RuntimeProfileNotFoundError extends ActorError {
  override readonly status = 404;
  override readonly title = 'Runtime profile not found';
  constructor(what: 'source' | 'mapping', profileId: string) {
    super(
      'runtime-profile-not-found',
      what === 'source'
        ? `the AgentHost configuration has no source profile ${profileId}`
        : `no runtime profile ${profileId} was resolved for this Environment`,
    );
  }
}

/** The owner exists but is not Registered (or its generation moved while it was read). */
export class EnvironmentNotActiveError extends ActorError {
  override readonly status = 409;
  override readonly title = 'Environment not active';
  constructor(message: string) {
    super('environment-not-active', message);
  }
}

/** The current placement records no usable AgentHost HTTPS endpoint, or one that disagrees with itself. */
export class RuntimeEndpointUnavailableError extends ActorError {
  override readonly status = 409;
  override readonly title = 'Runtime endpoint unavailable';
  constructor(
    readonly reason:
      'no-placement' | 'no-endpoint' | 'endpoint-mismatch' | 'configure-url-invalid' | 'placement-changed',
    message: string,
  ) {
    super('runtime-endpoint-unavailable', message);
  }

  override get extensions() {
    return { reason: this.reason };
  }
}

/** The `/health/live` probe did not say live; nothing was stored. */
export class RuntimeEndpointNotLiveError extends ActorError {
  override readonly status = 503;
  override readonly title = 'Runtime endpoint not live';
  constructor(readonly probe: string) {
    super('runtime-endpoint-not-live', `the AgentHost live probe failed (${probe}); nothing was stored`);
  }

  override get extensions() {
    return { probe: this.probe };
  }

  override get retryAfterSeconds(): number {
    return 5;
  }
}

/** A stored mapping no longer matches what is current: it must be resolved again (a new ID). */
export class RuntimeProfileStaleError extends ActorError {
  override readonly status = 409;
  override readonly title = 'Runtime profile stale';
  constructor(
    readonly reason: 'selection' | 'endpoint' | 'source-configuration' | 'profile-copy' | 'no-placement',
  ) {
    super('runtime-profile-stale', `the runtime profile is stale (${reason} changed); resolve a new one`);
  }

  override get extensions() {
    return { reason: this.reason };
  }
}

/** A mapping with this ID was stored from other pins; it is never overwritten. */
export class RuntimeProfileConflictError extends ActorError {
  override readonly status = 409;
  override readonly title = 'Runtime profile conflict';
  constructor(readonly reason: string) {
    super(
      'runtime-profile-conflict',
      `a runtime profile with this ID was stored with another ${reason}; it is never overwritten`,
    );
  }

  override get extensions() {
    return { reason: this.reason };
  }
}

/** Only the actor that resolved a mapping may read it. */
export class RuntimeProfileActorError extends ActorError {
  override readonly status = 403;
  override readonly title = 'Forbidden';
  constructor() {
    super('runtime-profile-actor-mismatch', 'the runtime profile was resolved by another actor');
  }
}
