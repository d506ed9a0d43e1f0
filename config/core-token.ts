// SANDLOT_CORE_TOKEN_FILE: Environment's own bearer for Core, for the calls a worker makes with no
// caller behind it (reading an accepted command again, fetching a version 2 seed). Production only:
// embedded mode's stand-in Core authorizes by tenant. The file is read at start and refused when it
// is empty, over 16 KiB, or holds anything but one bearer token (whitespace or control characters
// inside it are refused; surrounding whitespace, such as a final newline, is trimmed).
//
// Rotation: the file is stat'ed on every use and read again when its modification time, size or
// inode changed, so a projected service-account token that the kubelet rotates (an atomic symlink
// swap) is picked up without a restart. A rotated file that is not a valid token is an outage
// (CoreTokenFileError, 503), never silently replaced by the old token.
//
// The token never leaves this module except through `read()`: the source object has no enumerable
// field holding it, serializes as `{ file }`, and every message names the setting and the path only.
import { readFileSync, statSync, type Stats } from 'node:fs';
import { problemClass } from '../lib/errors.ts';

export const CORE_TOKEN_VARIABLE = 'SANDLOT_CORE_TOKEN_FILE';
export const MAX_CORE_TOKEN_BYTES = 16 * 1024;
/** How long a token that is not a JWT (so carries no `exp`) is taken to be good for, from now. */
export const OPAQUE_TOKEN_LIFETIME_MS = 5 * 60_000;

/** RFC 6750 b64token: what an Authorization: Bearer header may carry. */
const BEARER = /^[A-Za-z0-9\-._~+/]+=*$/;
// Unicode whitespace and C0/C1 controls; a token never holds one.
// eslint-disable-next-line no-control-regex
const WHITESPACE_OR_CONTROL = /[\s\x00-\x1f\x7f-\x9f]/u;

/** The file cannot be read now, or does not hold one bearer token. Names the file, never its content. */
export class CoreTokenFileError extends problemClass({
  code: 'core-token-unreadable',
  status: 503,
  title: 'Core credential unreadable',
}) {}

/** Why the file's bytes are not one bearer token (a message naming the path), or the token. */
export function checkCoreToken(path: string, bytes: Buffer): { token: string } | { problem: string } {
  if (bytes.length > MAX_CORE_TOKEN_BYTES)
    return { problem: `the file ${path} exceeds ${MAX_CORE_TOKEN_BYTES} bytes` };
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return { problem: `the file ${path} is not UTF-8 text` };
  }
  const token = text.trim();
  if (token === '') return { problem: `the file ${path} is empty` };
  if (WHITESPACE_OR_CONTROL.test(token))
    return { problem: `the file ${path} holds whitespace or control characters inside the token` };
  if (!BEARER.test(token)) {
    return {
      problem: `the file ${path} does not hold a bearer token (RFC 6750 characters: A-Z a-z 0-9 - . _ ~ + / and a trailing =)`,
    };
  }
  return { token };
}

const errnoOf = (error: unknown) => (error as NodeJS.ErrnoException).code ?? 'error';

function readChecked(path: string): { token: string } | { problem: string } {
  try {
    // A file far past the limit is refused before it is read.
    if (statSync(path).size > MAX_CORE_TOKEN_BYTES)
      return { problem: `the file ${path} exceeds ${MAX_CORE_TOKEN_BYTES} bytes` };
    return checkCoreToken(path, readFileSync(path));
  } catch (error) {
    return { problem: `cannot read the file ${path} (${errnoOf(error)})` };
  }
}

function readToken(path: string): string {
  const checked = readChecked(path);
  if ('problem' in checked) throw new CoreTokenFileError(`${CORE_TOKEN_VARIABLE}: ${checked.problem}`);
  return checked.token;
}

/** The problem with the file at start, naming the path (never its content), or undefined. */
export function coreTokenFileProblem(path: string): string | undefined {
  const checked = readChecked(path);
  return 'problem' in checked ? checked.problem : undefined;
}

/** Environment's own Core bearer, read from its file (and again when the file changed). */
export interface CoreTokenSource {
  /** The configured path; not secret. */
  readonly file: string;
  /** The token as the file holds it now; CoreTokenFileError when it cannot be read or is not a token. */
  read(): string;
}

const sameFile = (a: Stats, b: Stats) =>
  a.mtimeMs === b.mtimeMs && a.size === b.size && a.ino === b.ino && a.dev === b.dev;

/** A source over `path`, which the caller validated at start (coreTokenFileProblem). */
export function coreTokenFile(path: string): CoreTokenSource {
  // The last good read, kept in this closure only: nothing enumerable on the source holds it.
  let cached: { stats: Stats; token: string } | undefined;
  const source: CoreTokenSource = {
    file: path,
    read() {
      let stats: Stats;
      try {
        stats = statSync(path);
      } catch (error) {
        throw new CoreTokenFileError(
          `${CORE_TOKEN_VARIABLE}: cannot read the file ${path} (${errnoOf(error)})`,
        );
      }
      if (cached !== undefined && sameFile(cached.stats, stats)) return cached.token;
      const token = readToken(path);
      cached = { stats, token };
      return token;
    },
  };
  Object.defineProperty(source, 'toJSON', { value: () => ({ file: path }), enumerable: false });
  return source;
}

/**
 * When a token stops being good: a JWT's `exp` claim, read without verifying (Core verifies it;
 * this only keeps an expired token from being sent), else `now` plus OPAQUE_TOKEN_LIFETIME_MS.
 */
export function coreTokenExpiry(token: string, now: Date): Date {
  const parts = token.split('.');
  if (parts.length === 3) {
    try {
      const claims = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as unknown;
      const exp =
        typeof claims === 'object' && claims !== null ? (claims as { exp?: unknown }).exp : undefined;
      if (typeof exp === 'number' && Number.isFinite(exp)) return new Date(exp * 1000);
    } catch {
      // Not a JWT after all: an opaque token.
    }
  }
  return new Date(now.getTime() + OPAQUE_TOKEN_LIFETIME_MS);
}
