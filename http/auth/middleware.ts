import { createMiddleware } from 'hono/factory';
import { decodeJwt } from 'jose';

import { UnauthenticatedProblem } from '../problems.ts';
import { AuthenticationError } from './authentication-error.ts';
import type { Principal } from './principal.ts';
import type { TokenVerifier } from './verify.ts';

const REDACTED = '[redacted]';

/**
 * The bearer a request presented, for calls made on the caller's behalf (Core is asked with the
 * original actor's token, docs/build-test.md). Kept apart from the Principal, which is cached and
 * shared across requests. It never prints: JSON, String and util.inspect show `[redacted]`, and only
 * `reveal()` gives the token, for an outgoing Authorization header.
 */
export class PresentedBearer {
  readonly #token: string;

  constructor(
    token: string,
    /** The token's `exp`: a bearer is never sent on once it passed. */
    readonly expiresAt: Date,
  ) {
    this.#token = token;
  }

  reveal(): string {
    return this.#token;
  }

  toJSON(): string {
    return REDACTED;
  }

  toString(): string {
    return REDACTED;
  }

  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return `PresentedBearer ${REDACTED}`;
  }
}

export type AuthVariables = { principal: Principal; bearer: PresentedBearer };

/** The verified token of a header the verifier accepted, and its `exp` (which it requires). */
function presentedBearer(header: string): PresentedBearer {
  const token = header.replace(/^Bearer +/i, '').trimEnd();
  let exp: unknown;
  try {
    ({ exp } = decodeJwt(token));
  } catch {
    exp = undefined;
  }
  // The verifier refuses a token without `exp`; treat one as expired rather than as eternal.
  return new PresentedBearer(token, new Date(typeof exp === 'number' ? exp * 1000 : 0));
}

/** Rejects the request with a 401 problem unless it carries a valid bearer token. */
export function requirePrincipal(verifier: TokenVerifier) {
  return createMiddleware<{ Variables: AuthVariables }>(async (c, next) => {
    const header = c.req.header('authorization');
    let principal: Principal;
    try {
      principal = await verifier.verify(header);
    } catch (err) {
      if (err instanceof AuthenticationError) {
        throw new UnauthenticatedProblem(err.reason, { invalidToken: err.tokenPresent });
      }
      throw err;
    }
    c.set('principal', principal);
    c.set('bearer', presentedBearer(header ?? ''));
    await next();
  });
}
