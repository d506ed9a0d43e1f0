// The admission both RuntimeCore implementations make before asking anything, so they cannot drift
// apart: an aborted call or an expired bearer is never sent (as for every Core call), and a bearer
// that an Authorization header could not carry as it is (RFC 6750 b64token) is a denied actor,
// not something to escape or trim.
import type { CoreActor } from '../ports.ts';
import { admitCall } from '../build-test/core-checks.ts';
import { CoreDeniedError } from '../build-test/core-errors.ts';

const BEARER = /^[A-Za-z0-9\-._~+/]+=*$/;

export function admitRuntimeCall(actor: CoreActor, signal: AbortSignal, now: Date): void {
  admitCall(actor, signal, now);
  if (!BEARER.test(actor.bearer)) throw new CoreDeniedError('denied');
}
