// Every way a token can fail becomes an AuthenticationError with a fixed, caller-safe reason. jose
// errors are never passed on as `cause` for claim failures because they carry the decoded payload.
// A verified token's principal is kept (keyed by the token's SHA-256, never the token) until its
// `exp` and for at most a bounded age, so that a key rotation or revocation is noticed; a refused
// token is never kept, and the cache holds a bounded number of entries (least recently used out).
import { createHash } from 'node:crypto';
import { createRemoteJWKSet, errors, jwtVerify } from 'jose';
import type { JWTPayload, JWTVerifyGetKey } from 'jose';

import { AuthenticationError } from './authentication-error.ts';
import { PRINTABLE_TEXT } from '../../lib/limits.ts';
import { TENANT_ID_PATTERN } from './principal.ts';
import { identifierSchema } from '../../machines/environment-events.ts';
import type { Principal } from './principal.ts';

export { AuthenticationError } from './authentication-error.ts';

export type TokenVerifierOptions = (
  | { kind: 'hs256'; key: Uint8Array; issuer: string; audience: string }
  | { kind: 'jwks'; jwksUrl: string; issuer: string; audience: string; algorithms: string[] }
) & { now?: () => Date; cache?: VerifiedTokenCacheOptions | false };

export interface VerifiedTokenCacheOptions {
  /** Verified tokens kept (default 10,000); the least recently used goes first. */
  maxEntries?: number;
  /** The longest a verification is reused, whatever the token's `exp` (default 60 s). */
  maxAgeMs?: number;
}

export interface TokenVerifier {
  verify(authorizationHeader: string | undefined): Promise<Principal>;
  /** How many tokens were verified (signature and claims) and how many answers came from the cache. */
  readonly stats?: { verified: number; cached: number; size: number };
}

const DEFAULT_MAX_ENTRIES = 10_000;
const DEFAULT_MAX_AGE_MS = 60_000;

const CLOCK_TOLERANCE_SECONDS = 5;
// RFC 6750 b64token after a case-insensitive scheme.
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

export function createTokenVerifier(options: TokenVerifierOptions): TokenVerifier {
  const [key, algorithms] = resolveKey(options);
  const cache = options.cache === false ? null : new VerifiedTokens(options.cache ?? {});
  const clock = () => (options.now ? options.now() : new Date()).getTime();
  const stats = { verified: 0, cached: 0, size: 0 };
  return {
    get stats() {
      return { ...stats, size: cache?.size ?? 0 };
    },
    async verify(authorizationHeader) {
      const token = authorizationHeader === undefined ? undefined : BEARER.exec(authorizationHeader)?.[1];
      if (token === undefined) {
        const malformed = authorizationHeader !== undefined && /^Bearer\s+\S/i.test(authorizationHeader);
        throw new AuthenticationError(malformed ? 'malformed token' : 'missing bearer token', malformed);
      }
      const id = cache === null ? '' : tokenId(token);
      const kept = cache?.get(id, clock());
      if (kept !== undefined) {
        stats.cached += 1;
        return kept;
      }
      stats.verified += 1;
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(token, key, {
          issuer: options.issuer,
          audience: options.audience,
          algorithms,
          clockTolerance: CLOCK_TOLERANCE_SECONDS,
          requiredClaims: ['exp'],
          ...(options.now ? { currentDate: options.now() } : {}),
        }));
      } catch (err) {
        throw toAuthenticationError(err);
      }
      const principal = principalFrom(payload);
      // Kept until `exp` itself (no clock tolerance), so a cached answer never outlives the token.
      if (cache !== null && typeof payload.exp === 'number')
        cache.set(id, principal, payload.exp * 1000, clock());
      return principal;
    },
  };
}

function tokenId(token: string): string {
  return createHash('sha256').update(token).digest('base64url');
}

/** Verified principals by token hash, each until its deadline; a Map in recency order is the LRU. */
class VerifiedTokens {
  readonly #entries = new Map<string, { principal: Principal; until: number }>();
  readonly #maxEntries: number;
  readonly #maxAgeMs: number;

  constructor(options: VerifiedTokenCacheOptions) {
    this.#maxEntries = options.maxEntries ?? DEFAULT_MAX_ENTRIES;
    this.#maxAgeMs = options.maxAgeMs ?? DEFAULT_MAX_AGE_MS;
    if (!(this.#maxEntries >= 1) || !(this.#maxAgeMs >= 0)) throw new Error('invalid token cache bounds');
  }

  get size(): number {
    return this.#entries.size;
  }

  get(id: string, now: number): Principal | undefined {
    const entry = this.#entries.get(id);
    if (entry === undefined) return undefined;
    this.#entries.delete(id);
    if (now >= entry.until) return undefined;
    this.#entries.set(id, entry);
    return entry.principal;
  }

  set(id: string, principal: Principal, expiresAt: number, now: number): void {
    const until = Math.min(expiresAt, now + this.#maxAgeMs);
    if (until <= now) return;
    this.#entries.delete(id);
    this.#entries.set(id, { principal: freeze(principal), until });
    while (this.#entries.size > this.#maxEntries) {
      const oldest = this.#entries.keys().next().value as string;
      this.#entries.delete(oldest);
    }
  }
}

/** One principal object answers many requests: none of them may change it for the others. */
function freeze(principal: Principal): Principal {
  if (principal.runBinding !== undefined) Object.freeze(principal.runBinding);
  return Object.freeze(principal);
}

function resolveKey(options: TokenVerifierOptions): [Uint8Array | JWTVerifyGetKey, string[]] {
  if (options.kind === 'hs256') {
    if (options.key.byteLength < 32) throw new Error('HS256 signing key must be at least 32 bytes');
    return [options.key, ['HS256']];
  }
  // A published key set holds public keys; accepting HMAC here would let anyone who can read it sign.
  const unsafe = options.algorithms.filter((alg) => alg === 'none' || alg.startsWith('HS'));
  if (unsafe.length > 0) throw new Error(`JWKS verification cannot allow algorithms: ${unsafe.join(', ')}`);
  if (options.algorithms.length === 0) throw new Error('JWKS verification needs at least one algorithm');
  return [createRemoteJWKSet(new URL(options.jwksUrl)), [...options.algorithms]];
}

function principalFrom(payload: JWTPayload): Principal {
  const { sub, tenant, roles, project, run } = payload;
  if (typeof sub !== 'string' || sub === '') throw new AuthenticationError('missing subject claim', true);
  // The subject is journaled and logged as the actor: no control characters, bounded.
  if (sub.length > 256 || !PRINTABLE_TEXT.test(sub))
    throw new AuthenticationError('invalid subject claim', true);
  if (tenant === undefined) throw new AuthenticationError('missing tenant claim', true);
  if (typeof tenant !== 'string' || !TENANT_ID_PATTERN.test(tenant)) {
    throw new AuthenticationError('invalid tenant claim', true);
  }
  const roleList: unknown = roles ?? [];
  if (!isStringArray(roleList)) throw new AuthenticationError('invalid roles claim', true);
  const principal: Principal = { tenantId: tenant, subject: sub, operator: roleList.includes('operator') };
  if (project === undefined && run === undefined) return principal;
  // A run binding is exact: both claims, each a valid identifier, or the token is refused.
  const projectId = identifierSchema.safeParse(project);
  const runId = identifierSchema.safeParse(run);
  if (!projectId.success || !runId.success)
    throw new AuthenticationError('invalid project/run binding claims', true);
  return { ...principal, runBinding: { projectId: projectId.data, runId: runId.data } };
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === 'string');
}

function toAuthenticationError(err: unknown): AuthenticationError {
  if (!(err instanceof errors.JOSEError)) {
    // Not a token problem: in practice the key set fetch failed. The cause is safe to keep.
    return new AuthenticationError('signing keys unavailable', true, { cause: err });
  }
  switch (err.code) {
    case 'ERR_JWT_EXPIRED':
      return new AuthenticationError('token expired', true);
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED':
      return new AuthenticationError(claimReason(err as errors.JWTClaimValidationFailed), true);
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
      return new AuthenticationError('bad signature', true);
    case 'ERR_JOSE_ALG_NOT_ALLOWED':
      return new AuthenticationError('algorithm not allowed', true);
    case 'ERR_JWKS_NO_MATCHING_KEY':
    case 'ERR_JWKS_MULTIPLE_MATCHING_KEYS':
      return new AuthenticationError('no matching signing key', true);
    case 'ERR_JWKS_TIMEOUT':
    case 'ERR_JWKS_INVALID':
    case 'ERR_JWK_INVALID':
    case 'ERR_JOSE_GENERIC':
      return new AuthenticationError('signing keys unavailable', true, { cause: err });
    default: // ERR_JWS_INVALID, ERR_JWT_INVALID, ERR_JOSE_NOT_SUPPORTED
      return new AuthenticationError('malformed token', true);
  }
}

function claimReason(err: errors.JWTClaimValidationFailed): string {
  if (err.reason === 'missing') return `missing ${err.claim} claim`;
  switch (err.claim) {
    case 'aud':
      return 'wrong audience';
    case 'iss':
      return 'wrong issuer';
    case 'nbf':
      return 'token not yet valid';
    default:
      return `invalid ${err.claim} claim`;
  }
}
