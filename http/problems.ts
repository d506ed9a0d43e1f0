// Handlers throw Problems; the app's single onError turns them into RFC 9457 problem+json. `type` is
// a short stable slug in code and becomes `urn:sandlot:problem:<slug>` on the wire.

const TYPE_PREFIX = 'urn:sandlot:problem:';

export class Problem extends Error {
  override readonly name = 'Problem';
  readonly status: number;
  readonly type: string;
  readonly title: string;
  readonly detail: string | undefined;
  readonly extra: Record<string, unknown> | undefined;

  constructor(status: number, type: string, title: string, detail?: string, extra?: Record<string, unknown>) {
    super(detail ?? title);
    this.status = status;
    this.type = type;
    this.title = title;
    this.detail = detail;
    this.extra = extra;
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

export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail?: string;
  instance?: string;
  [extension: string]: unknown;
}

export function problemBody(p: Problem, instance?: string): ProblemBody {
  const core: ProblemBody = {
    type: `${TYPE_PREFIX}${p.type}`,
    title: p.title,
    status: p.status,
    ...(p.detail !== undefined ? { detail: p.detail } : {}),
    ...(instance !== undefined ? { instance } : {}),
  };
  // Spreading `core` twice keeps its members first in the JSON and stops extras overriding them.
  return { ...core, ...p.extra, ...core };
}

export function problemResponse(p: Problem, instance?: string): Response {
  const headers = new Headers({ 'content-type': 'application/problem+json', 'cache-control': 'no-store' });
  if (p.status === 401) {
    const invalid = p instanceof UnauthenticatedProblem && p.invalidToken;
    headers.set('www-authenticate', `Bearer realm="sandlot"${invalid ? ', error="invalid_token"' : ''}`);
  }
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
