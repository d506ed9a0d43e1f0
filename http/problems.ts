// Every error becomes an RFC 9457 problem+json answer here. A SandlotError is a problem already: its
// `code` is the problem type, a short stable slug that becomes `urn:sandlot:problem:<slug>` on the
// wire. Handlers throw a Problem for refusals that belong to the HTTP layer itself.
import { SandlotError } from '../lib/errors.ts';
import { AuthenticationError } from './auth/authentication-error.ts';

const TYPE_PREFIX = 'urn:sandlot:problem:';

export class Problem extends SandlotError {
  readonly code: string;
  readonly status: number;
  readonly title: string;
  readonly #detail: string | undefined;
  readonly #extensions: Record<string, unknown> | undefined;

  constructor(status: number, type: string, title: string, detail?: string, extra?: Record<string, unknown>) {
    super(detail ?? title);
    this.status = status;
    this.code = type;
    this.title = title;
    this.#detail = detail;
    this.#extensions = extra;
  }

  /** The problem type slug; the same as `code`. */
  get type(): string {
    return this.code;
  }

  override get detail(): string | undefined {
    return this.#detail;
  }

  override get extensions(): Readonly<Record<string, unknown>> | undefined {
    return this.#extensions;
  }
}

/** 401; `invalidToken` says a token was presented and rejected, rather than missing. */
export class UnauthenticatedProblem extends Problem {
  readonly invalidToken: boolean;

  constructor(reason: string, options: { invalidToken?: boolean } = {}) {
    super(401, 'unauthenticated', 'Unauthenticated', reason);
    this.invalidToken = options.invalidToken ?? false;
  }
}

/** The answer to an error we did not expect: it names nothing about the error (the log does). */
export function internalError(): Problem {
  return new Problem(500, 'internal-error', 'Internal error');
}

export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail?: string;
  instance?: string;
  [extension: string]: unknown;
}

export function problemBody(p: SandlotError, instance?: string): ProblemBody {
  // A 500 is our own failure: the body names its kind and nothing else, whatever the error offers.
  const shown = p.status !== 500;
  const detail = shown ? p.detail : undefined;
  const core: ProblemBody = {
    type: `${TYPE_PREFIX}${p.code}`,
    title: p.title,
    status: p.status,
    ...(detail !== undefined ? { detail } : {}),
    ...(instance !== undefined ? { instance } : {}),
  };
  // Spreading `core` twice keeps its members first in the JSON and stops extensions overriding them.
  return { ...core, ...(shown ? p.extensions : undefined), ...core };
}

export function problemResponse(p: SandlotError, instance?: string): Response {
  const headers = new Headers({ 'content-type': 'application/problem+json', 'cache-control': 'no-store' });
  if (p.status === 401) {
    const invalid =
      (p instanceof UnauthenticatedProblem && p.invalidToken) ||
      (p instanceof AuthenticationError && p.tokenPresent);
    headers.set('www-authenticate', `Bearer realm="sandlot"${invalid ? ', error="invalid_token"' : ''}`);
  }
  const retryAfter = p.retryAfterSeconds;
  if (retryAfter !== undefined) headers.set('retry-after', String(retryAfter));
  return new Response(JSON.stringify(problemBody(p, instance)), { status: p.status, headers });
}

export function unauthenticated(
  reason: string,
  options?: { invalidToken?: boolean },
): UnauthenticatedProblem {
  return new UnauthenticatedProblem(reason, options);
}

export function forbidden(detail: string): Problem {
  return new Problem(403, 'forbidden', 'Forbidden', detail);
}

export function notFound(detail: string): Problem {
  return new Problem(404, 'not-found', 'Not found', detail);
}

export function conflict(
  type: string,
  title: string,
  detail: string,
  extra?: Record<string, unknown>,
): Problem {
  return new Problem(409, type, title, detail, extra);
}

export function badRequest(
  type: string,
  title: string,
  detail: string,
  extra?: Record<string, unknown>,
): Problem {
  return new Problem(400, type, title, detail, extra);
}
