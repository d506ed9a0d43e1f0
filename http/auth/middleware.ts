import { createMiddleware } from 'hono/factory';

import { UnauthenticatedProblem } from '../problems.ts';
import { AuthenticationError } from './authentication-error.ts';
import type { Principal } from './principal.ts';
import type { TokenVerifier } from './verify.ts';

export type AuthVariables = { principal: Principal };

/** Rejects the request with a 401 problem unless it carries a valid bearer token. */
export function requirePrincipal(verifier: TokenVerifier) {
  return createMiddleware<{ Variables: AuthVariables }>(async (c, next) => {
    let principal: Principal;
    try {
      principal = await verifier.verify(c.req.header('authorization'));
    } catch (err) {
      if (err instanceof AuthenticationError) {
        throw new UnauthenticatedProblem(err.reason, { invalidToken: err.tokenPresent });
      }
      throw err;
    }
    c.set('principal', principal);
    await next();
  });
}
