// How a Core call fails, as the BuildTest use cases tell failures apart: Core could not be asked
// (transport, deadline, a 5xx: retry later, never a verdict), Core refused the actor (its bearer
// expired or was denied), Core's answer broke the contract (a redirect, a wrong type, a cacheable
// answer, a body too long, a seed of the wrong length or digest, a malformed document: never used),
// and the accepted command changed under us (metadata rechecked after a seed transfer differs).
// Every `reason` is a fixed word; no message carries a bearer or response content.
import { problemClass } from '../../lib/errors.ts';

export type CoreUnavailableReason = 'unreachable' | 'deadline-exceeded' | 'aborted' | 'server-error';

export class CoreUnavailableError extends problemClass({
  code: 'core-unavailable',
  status: 503,
  title: 'Core unavailable',
}) {
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

export class CoreDeniedError extends problemClass({
  code: 'core-denied',
  status: 403,
  title: 'Core denied the request',
  callerSafe: true,
}) {
  constructor(readonly reason: CoreDeniedReason) {
    super(reason === 'bearer-expired' ? "the actor's bearer has expired" : 'Core denied the actor');
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

export class CoreAnswerRefusedError extends problemClass({
  code: 'core-answer-refused',
  status: 502,
  title: 'Core answer refused',
}) {
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
export class CoreCommandChangedError extends problemClass({
  code: 'build-test-command-changed',
  status: 409,
  title: 'Accepted command changed',
  callerSafe: true,
}) {
  constructor() {
    super('the accepted command changed while its seed was read');
  }
}
