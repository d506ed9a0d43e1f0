// How a protected material read from Events fails, told apart as the Core ports tell their
// failures apart (actors/build-test/core-errors.ts): Events could not be asked (transport,
// deadline, abort, a 5xx: retry later, never a verdict), Events refused the actor (an expired or
// denied bearer), or Events' answer broke the contract (a redirect, a cacheable answer, a wrong
// media type, bytes of another length or digest than acknowledged: never used). Every `reason` is
// a fixed word; no message carries a bearer, an object reference or any byte of the material.
import { problemClass } from '../../lib/errors.ts';

export type EventsUnavailableReason = 'unreachable' | 'deadline-exceeded' | 'aborted' | 'server-error';

export class EventsUnavailableError extends problemClass({
  code: 'events-unavailable',
  status: 503,
  title: 'Events unavailable',
}) {
  constructor(
    readonly reason: EventsUnavailableReason,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`Events cannot be asked: ${message}`, options);
  }

  override get detail(): string {
    return `Events cannot be asked (${this.reason})`;
  }
}

export type EventsDeniedReason = 'bearer-expired' | 'denied';

export class EventsDeniedError extends problemClass({
  code: 'events-denied',
  status: 403,
  title: 'Events denied the request',
  callerSafe: true,
}) {
  constructor(readonly reason: EventsDeniedReason) {
    super(reason === 'bearer-expired' ? "the actor's bearer has expired" : 'Events denied the actor');
  }
}

export type EventsAnswerProblem =
  'redirect-refused' | 'unexpected-status' | 'not-no-store' | 'wrong-content-type' | 'material-mismatch';

export class EventsAnswerRefusedError extends problemClass({
  code: 'events-answer-refused',
  status: 502,
  title: 'Events answer refused',
}) {
  constructor(
    readonly reason: EventsAnswerProblem,
    message: string,
  ) {
    super(`Events' answer was refused: ${message}`);
  }

  override get detail(): string {
    return `Events' answer was refused (${this.reason})`;
  }
}
