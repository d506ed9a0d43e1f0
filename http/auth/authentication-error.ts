import { problemClass } from '../../lib/errors.ts';

/**
 * A request could not be authenticated. `reason` is shown to the caller, so it is a fixed phrase and
 * never carries the token or a claim value.
 */
export class AuthenticationError extends problemClass({
  code: 'unauthenticated',
  status: 401,
  title: 'Unauthenticated',
}) {
  readonly reason: string;
  /** True when a bearer token was presented but rejected (RFC 6750 `error="invalid_token"`). */
  readonly tokenPresent: boolean;

  constructor(reason: string, tokenPresent: boolean, options?: ErrorOptions) {
    super(`authentication failed: ${reason}`, options);
    this.reason = reason;
    this.tokenPresent = tokenPresent;
  }

  override get detail(): string {
    return this.reason;
  }
}
