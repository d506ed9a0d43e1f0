// BuildTest's refusals, each a problem a caller can act on. Nothing is written when one is thrown
// before the reserving transition; the message names IDs and states of the caller's own
// Environment, never a command's arguments, a credential or a provider option.
import { ActorError } from '../errors.ts';

export class BuildTestUnavailableError extends ActorError {
  override readonly status = 409;
  override readonly title = 'BuildTest unavailable';
  constructor() {
    super(
      'build-test-unavailable',
      'BuildTest is not offered: no AcceptedBuildTestProfile is configured (SANDLOT_BUILDTEST_PROFILE_FILE)',
    );
  }
}

export class BuildTestNotImplementedError extends ActorError {
  override readonly status = 501;
  override readonly title = 'Not implemented';
  constructor(what: string) {
    super('build-test-not-implemented', what);
  }
}

/** The operation is not this Environment's (or does not exist). */
export class BuildTestOperationNotFoundError extends ActorError {
  override readonly status = 404;
  override readonly title = 'BuildTest operation not found';
  constructor(readonly operationId: string) {
    super('build-test-operation-not-found', `this Environment has no BuildTest operation ${operationId}`);
  }
}

/** Core has no accepted command for the checkpoint this caller may see. */
export class BuildTestCheckpointNotFoundError extends ActorError {
  override readonly status = 404;
  override readonly title = 'Checkpoint not found';
  constructor() {
    super('build-test-checkpoint-not-found', 'Core holds no accepted command for this checkpoint');
  }
}

/** A refusal that leaves everything as it was; `code` says which (docs/api.md lists them). */
export class BuildTestRefusedError extends ActorError {
  override readonly status: number;
  override readonly title: string;
  constructor(code: string, message: string, options: { status?: number; title?: string } = {}) {
    super(code, message);
    this.status = options.status ?? 409;
    this.title = options.title ?? 'BuildTest refused';
  }
}
