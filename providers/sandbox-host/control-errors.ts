// How a call over the private host-control channel fails, seen from the host. There are exactly two
// outcomes a caller must tell apart: `unavailable` (nothing was decided: no connection, a deadline,
// a 5xx or 429; the same call may be retried within the caller's bound) and `refused` (the control
// plane or the channel said no: a 4xx problem, a certificate neither side accepts, a redirect, an
// answer that is not the contract; retrying the same call cannot help). Messages carry a status, a
// problem slug or a Node error code, never a certificate, a key or answer content.
import { fixedCodeError, SandboxHostError } from './sandbox-host-error.ts';

/** Why a call was refused; a problem slug from the control plane is reported as `problem`. */
export type ControlRefusalReason =
  'problem' | 'tls-refused' | 'redirect-refused' | 'body-too-large' | 'bad-response' | 'bad-request';

export class ControlUnavailableError extends fixedCodeError({
  code: 'host-control-unavailable',
  status: 503,
  title: 'Host control channel unavailable',
  subject: 'host control unavailable',
}) {}

export class ControlRefusedError extends SandboxHostError<'host-control-refused'> {
  constructor(
    readonly reason: ControlRefusalReason,
    message: string,
    /** The HTTP status of a problem answer, and its slug (`forbidden`, `result-malformed`...). */
    readonly problem?: { status: number; type: string },
    options?: ErrorOptions,
  ) {
    super(
      'host-control-refused',
      { status: 502, title: 'Host control channel refused the call' },
      `host control refused (${reason}): ${message}`,
      options,
    );
  }
}
