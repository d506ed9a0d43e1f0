// The console's calls: every API route through /console/api (the server adds the signed-in token),
// with the header that marks them as the console's own. A refusal keeps its problem+json whole, so
// the page can show exactly what the server said.

export interface Problem {
  type?: string;
  title?: string;
  status?: number;
  detail?: string;
  [field: string]: unknown;
}

export type Answer<T> =
  { ok: true; status: number; body: T } | { ok: false; status: number; problem: Problem };

export class SignedOut extends Error {}

export async function call<T>(
  method: string,
  path: string,
  body?: unknown,
  signal?: AbortSignal,
): Promise<Answer<T>> {
  const response = await fetch(`/console/api${path}`, {
    method,
    headers: {
      'x-sandlot-console': '1',
      accept: 'application/json',
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    ...(signal === undefined ? {} : { signal }),
  });
  if (response.status === 401) throw new SignedOut();
  const text = await response.text();
  const parsed: unknown = text === '' ? null : JSON.parse(text);
  if (response.ok) return { ok: true, status: response.status, body: parsed as T };
  return { ok: false, status: response.status, problem: (parsed ?? { status: response.status }) as Problem };
}

/** The answer's body, or an error carrying its problem. */
export async function get<T>(path: string, signal?: AbortSignal): Promise<T> {
  const answer = await call<T>('GET', path, undefined, signal);
  if (!answer.ok) throw new ProblemError(answer.problem, answer.status);
  return answer.body;
}

export class ProblemError extends Error {
  constructor(
    readonly problem: Problem,
    readonly status: number,
  ) {
    super(problem.detail ?? problem.title ?? `HTTP ${status}`);
  }
}

export const envPath = (a: { projectId: string; runId: string; environmentId: string }) =>
  `/projects/${encodeURIComponent(a.projectId)}/runs/${encodeURIComponent(a.runId)}/environments/${encodeURIComponent(a.environmentId)}`;

export const freshKey = (action: string) =>
  `console-${action}-${Array.from(crypto.getRandomValues(new Uint8Array(6)), (b) => b.toString(16).padStart(2, '0')).join('')}`;
