// How a Core call fails, as the BuildTest use cases tell failures apart: Core could not be asked
// (transport, deadline, a 5xx: retry later, never a verdict), Core refused the actor (its bearer
// expired or was denied), Core's answer broke the contract (a redirect, a wrong type, a cacheable
// answer, a body too long, a seed of the wrong length or digest, a malformed document: never used),
// and the accepted command changed under us (metadata rechecked after a seed transfer differs).
// Every `reason` is a fixed word; no message carries a bearer or response content.
import { SandlotError } from '../../lib/errors.ts';

export type CoreUnavailableReason = 'unreachable' | 'deadline-exceeded' | 'aborted' | 'server-error';

export class CoreUnavailableError extends SandlotError {
  readonly code = 'core-unavailable';
  readonly status = 503;
  readonly title = 'Core unavailable';

  constructor(
    readonly reason: CoreUnavailableReason,
    /** What happened, without the service's name: a fixed phrase or a Node error code. */
    readonly what: string,
    options?: { cause?: unknown },
  ) {
    super(`Core cannot be asked: ${what}`, options);
  }

  override get detail(): string {
    return `Core cannot be asked (${this.reason})`;
  }
}

export type CoreDeniedReason = 'bearer-expired' | 'denied';

export class CoreDeniedError extends SandlotError {
  readonly code = 'core-denied';
  readonly status = 403;
  readonly title = 'Core denied the request';

  constructor(readonly reason: CoreDeniedReason) {
    super(reason === 'bearer-expired' ? "the actor's bearer has expired" : 'Core denied the actor');
  }

  override get detail(): string {
    return this.message;
  }
}

export type CoreAnswerProblem =
  | 'redirect-refused'
  | 'unexpected-status'
  | 'not-no-store'
  | 'wrong-content-type'
  | 'body-too-large'
  | 'malformed'
  | 'reference-mismatch'
  | 'no-seed'
  | 'seed-short'
  | 'seed-long'
  | 'seed-digest-mismatch';

export class CoreAnswerRefusedError extends SandlotError {
  readonly code = 'core-answer-refused';
  readonly status = 502;
  readonly title = 'Core answer refused';

  constructor(
    readonly reason: CoreAnswerProblem,
    message: string,
  ) {
    super(`Core's answer was refused: ${message}`);
  }

  override get detail(): string {
    return `Core's answer was refused (${this.reason})`;
  }
}

/** The accepted command Core answers now differs from the one the caller holds (or is gone). */
export class CoreCommandChangedError extends SandlotError {
  readonly code = 'build-test-command-changed';
  readonly status = 409;
  readonly title = 'Accepted command changed';

  constructor() {
    super('the accepted command changed while its seed was read');
  }

  override get detail(): string {
    return this.message;
  }
}
