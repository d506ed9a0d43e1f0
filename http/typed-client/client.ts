// A typed client for TypeScript callers of the Sandlot API. Every call is checked against the
// OpenAPI document's types (http/typed-client/api.ts, generated): the path must be one the service
// answers with that method, its path and query parameters and its JSON body must have the declared
// shapes, and the answer is a union over the declared statuses, so `if (answer.status === 201)`
// narrows the body to the 201 schema and a problem status to `Problem`.
//
// It depends on nothing but `fetch`, so the two files can be copied into a caller's project:
//
//   const sandlot = createSandlotClient({ baseUrl: 'http://127.0.0.1:8080', token });
//   const answer = await sandlot.call('post', '/api/projects/{projectId}/runs/{runId}/environments', {
//     path: { projectId: 'p1', runId: 'r1' },
//     body: { idempotencyKey: 'k1' },
//   });
//   if (answer.status === 201) console.log(answer.body.environmentId);
import type { Paths } from './api.ts';

type Method = 'get' | 'put' | 'post' | 'delete' | 'patch';

interface OperationShape {
  path: unknown;
  query: unknown;
  body: unknown;
  responses: object;
}

/** The paths that answer `M`. */
export type PathsWith<M extends Method> = {
  [P in keyof Paths]: M extends keyof Paths[P] ? P : never;
}[keyof Paths];

type OperationOf<M extends Method, P extends PathsWith<M>> = Paths[P][M & keyof Paths[P]] extends infer O
  ? O extends OperationShape
    ? O
    : never
  : never;

/** What a call carries: each part the operation declares, and nothing it does not. */
export type CallInput<O extends OperationShape> = ([O['path']] extends [never]
  ? object
  : { path: O['path'] }) &
  ([O['query']] extends [never] ? object : { query?: O['query'] }) &
  ([O['body']] extends [never] ? object : { body: O['body'] }) & {
    /** A bearer token for this call only, in place of the client's. */
    token?: string;
    headers?: Record<string, string>;
  };

/** The answer: one member per declared status, with that status's body. */
export type Answer<O extends OperationShape> = {
  [S in keyof O['responses']]: { status: S; body: O['responses'][S]; headers: Headers };
}[keyof O['responses']];

export interface SandlotClientOptions {
  /** Where the API listens, e.g. http://127.0.0.1:8080. */
  baseUrl: string;
  /** The bearer token sent with every call (a call may give its own). */
  token?: string;
  /** The fetch to use (default the global one). */
  fetch?: (request: Request) => Promise<Response> | Response;
}

export interface SandlotClient {
  call<M extends Method, P extends PathsWith<M>>(
    method: M,
    path: P,
    input: CallInput<OperationOf<M, P>>,
  ): Promise<Answer<OperationOf<M, P>>>;
}

/** `/a/{b}` with `{ b: 'x y' }` → `/a/x%20y`; a parameter the template names but `values` lacks throws. */
export function expandPath(template: string, values: Record<string, unknown> = {}): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = values[name];
    if (typeof value === 'string' || typeof value === 'number') return encodeURIComponent(String(value));
    throw new Error(`path parameter ${name} is missing`);
  });
}

function queryString(query: Record<string, unknown> | undefined): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query ?? {})) {
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
      params.append(name, String(value));
    }
  }
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}

export function createSandlotClient(options: SandlotClientOptions): SandlotClient {
  const send = options.fetch ?? ((request: Request) => fetch(request));
  const base = options.baseUrl.replace(/\/+$/, '');
  return {
    async call(method, path, input) {
      const parts = input as {
        path?: Record<string, unknown>;
        query?: Record<string, unknown>;
        body?: unknown;
        token?: string;
        headers?: Record<string, string>;
      };
      const headers: Record<string, string> = { accept: 'application/json', ...parts.headers };
      const token = parts.token ?? options.token;
      if (token !== undefined) headers['authorization'] = `Bearer ${token}`;
      let body: Uint8Array<ArrayBuffer> | string | undefined;
      if (parts.body instanceof Uint8Array) {
        headers['content-type'] ??= 'application/octet-stream';
        body = new Uint8Array(parts.body);
      } else if (parts.body !== undefined) {
        headers['content-type'] = 'application/json';
        body = JSON.stringify(parts.body);
      }
      const url = `${base}${expandPath(path, parts.path)}${queryString(parts.query)}`;
      const res = await send(
        new Request(url, { method: method.toUpperCase(), headers, ...(body === undefined ? {} : { body }) }),
      );
      const type = res.headers.get('content-type') ?? '';
      const text = await res.text();
      const parsed: unknown = /json/.test(type) && text !== '' ? JSON.parse(text) : text === '' ? null : text;
      return { status: res.status, body: parsed, headers: res.headers } as Answer<
        OperationOf<typeof method, typeof path>
      >;
    },
  };
}
