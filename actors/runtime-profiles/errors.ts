// The refusals of the runtime profile resolve and read. Each names what failed and never a value
// from the configuration or the Host's answer (a probe code is a fixed transport or verdict code).
import { problemClass } from '../../lib/errors.ts';
import { ActorError } from '../errors.ts';

/** No immutable AgentHost configuration was given at start (SANDLOT_AGENTHOST_CONFIG_FILE). */
export class RuntimeProfilesUnavailableError extends problemClass(
  { code: 'runtime-profiles-unavailable', status: 409, title: 'Runtime profiles unavailable' },
  ActorError,
) {
  constructor() {
    super('no AgentHost configuration was given at start; no profile can resolve');
  }
}

export class RuntimeProfileNotFoundError extends problemClass(
  { code: 'runtime-profile-not-found', status: 404, title: 'Runtime profile not found' },
  ActorError,
) {
  constructor(what: 'source' | 'mapping', profileId: string) {
    super(
      what === 'source'
        ? `the AgentHost configuration has no source profile ${profileId}`
        : `no runtime profile ${profileId} was resolved for this Environment`,
    );
  }
}

/** The owner exists but is not Registered (or its generation moved while it was read). */
export class EnvironmentNotActiveError extends problemClass(
  { code: 'environment-not-active', status: 409, title: 'Environment not active' },
  ActorError,
) {
  constructor(message: string) {
    super(message);
  }
}

/** The current placement records no usable AgentHost HTTPS endpoint, or one that disagrees with itself. */
export class RuntimeEndpointUnavailableError extends problemClass(
  { code: 'runtime-endpoint-unavailable', status: 409, title: 'Runtime endpoint unavailable' },
  ActorError,
) {
  constructor(
    readonly reason:
      'no-placement' | 'no-endpoint' | 'endpoint-mismatch' | 'configure-url-invalid' | 'placement-changed',
    message: string,
  ) {
    super(message);
  }

  override get extensions() {
    return { reason: this.reason };
  }
}

/** The `/health/live` probe did not say live; nothing was stored. */
export class RuntimeEndpointNotLiveError extends problemClass(
  {
    code: 'runtime-endpoint-not-live',
    status: 503,
    title: 'Runtime endpoint not live',
    retryAfterSeconds: 5,
  },
  ActorError,
) {
  constructor(readonly probe: string) {
    super(`the AgentHost live probe failed (${probe}); nothing was stored`);
  }

  override get extensions() {
    return { probe: this.probe };
  }
}

/** A stored mapping no longer matches what is current: it must be resolved again (a new ID). */
export class RuntimeProfileStaleError extends problemClass(
  { code: 'runtime-profile-stale', status: 409, title: 'Runtime profile stale' },
  ActorError,
) {
  constructor(
    readonly reason: 'selection' | 'endpoint' | 'source-configuration' | 'profile-copy' | 'no-placement',
  ) {
    super(`the runtime profile is stale (${reason} changed); resolve a new one`);
  }

  override get extensions() {
    return { reason: this.reason };
  }
}

/** A mapping with this ID was stored from other pins; it is never overwritten. */
export class RuntimeProfileConflictError extends problemClass(
  { code: 'runtime-profile-conflict', status: 409, title: 'Runtime profile conflict' },
  ActorError,
) {
  constructor(readonly reason: string) {
    super(`a runtime profile with this ID was stored with another ${reason}; it is never overwritten`);
  }

  override get extensions() {
    return { reason: this.reason };
  }
}

/** Only the actor that resolved a mapping may read it. */
export class RuntimeProfileActorError extends problemClass(
  { code: 'runtime-profile-actor-mismatch', status: 403, title: 'Forbidden' },
  ActorError,
) {
  constructor() {
    super('the runtime profile was resolved by another actor');
  }
}
