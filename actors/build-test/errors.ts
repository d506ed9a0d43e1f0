// BuildTest's refusals, each a problem a caller can act on. Nothing is written when one is thrown
// before the reserving transition; the message names IDs and states of the caller's own
// Environment, never a command's arguments, a credential or a provider option.
import { problemClass } from '../../lib/errors.ts';
import { ActorError } from '../errors.ts';

export class BuildTestUnavailableError extends problemClass(
  { code: 'build-test-unavailable', status: 409, title: 'BuildTest unavailable' },
  ActorError,
) {
  constructor() {
    super(
      'BuildTest is not offered: no AcceptedBuildTestProfile is configured (SANDLOT_BUILDTEST_PROFILE_FILE)',
    );
  }
}

export class BuildTestNotImplementedError extends problemClass(
  { code: 'build-test-not-implemented', status: 501, title: 'Not implemented' },
  ActorError,
) {
  constructor(what: string) {
    super(what);
  }
}

/** The operation is not this Environment's (or does not exist). */
export class BuildTestOperationNotFoundError extends problemClass(
  { code: 'build-test-operation-not-found', status: 404, title: 'BuildTest operation not found' },
  ActorError,
) {
  constructor(readonly operationId: string) {
    super(`this Environment has no BuildTest operation ${operationId}`);
  }
}

/** Core has no accepted command for the checkpoint this caller may see. */
export class BuildTestCheckpointNotFoundError extends problemClass(
  { code: 'build-test-checkpoint-not-found', status: 404, title: 'Checkpoint not found' },
  ActorError,
) {
  constructor() {
    super('Core holds no accepted command for this checkpoint');
  }
}

/** A refusal that leaves everything as it was; `code` says which (docs/api.md lists them). */
export class BuildTestRefusedError extends problemClass(
  { status: 409, title: 'BuildTest refused' },
  ActorError,
) {
  constructor(code: string, message: string, options: { status?: number; title?: string } = {}) {
    super(message, { ...options, code });
  }
}
