// Property-based fuzzing of every API route: hostile path parameters, query values, headers and
// bodies (control characters, huge and negative numbers, deep nesting, oversized strings, type
// confusion). Whatever arrives, the answer is never a 5xx; every 4xx is a problem+json and leaves
// every table exactly as it was. A query parameter a route does not declare, and an integer that
// is not canonical decimal digits, are always 400. Set SANDLOT_FUZZ_SEED to replay a failing run.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedPostgres, type IsolatedPostgres } from '../support/databases.ts';
import { commandRequestFor, routeAcknowledgment } from '../support/build-test-commands.ts';
import { buildHarness, type Harness } from '../support/harness.ts';
import { json, provisionBody, setupScenario, type Scenario } from '../support/sandbox-flow.ts';
import { tableContents } from '../support/table-fingerprint.ts';

const RUNS = 60;
const seed =
  process.env['SANDLOT_FUZZ_SEED'] === undefined ? {} : { seed: Number(process.env['SANDLOT_FUZZ_SEED']) };

const nasty = fc.constantFrom(
  '\u0000',
  'a\u0000b',
  '\u0007\u001b[31m',
  '../../etc/passwd',
  '%00',
  ' ',
  '',
  '\ud800',
  'op_' + 'a'.repeat(32),
  '𝕊𝕒𝕟𝕕𝕝𝕠𝕥',
);
const hostileString = fc.oneof(
  nasty,
  fc.string({ unit: 'binary', maxLength: 64 }),
  fc.string({ unit: 'grapheme', maxLength: 64 }),
  fc.string({ minLength: 300, maxLength: 5_000 }),
);
/** Lone surrogates cannot be percent-encoded as UTF-8 (no client can send them as such). */
function encodable(value: string): boolean {
  try {
    encodeURIComponent(value);
    return true;
  } catch {
    return false;
  }
}

/** A path segment as a client can send it: any well-formed text percent-encoded, or bad encodings. */
const pathSegment = fc.oneof(
  hostileString.filter(encodable).map(encodeURIComponent),
  fc.constantFrom('%ED%A0%80', '%FF', '%C0%AF', '%00', '%2e%2e', '%25', 'a%20b'),
);
/** A header value as a client can send it (visible ASCII only; fetch refuses anything else). */
const headerValue = hostileString.map((v) => v.replace(/[^\x21-\x7e]/g, '') || 'x');
const hostileNumber = fc.oneof(
  fc.constantFrom(2_147_483_648, -1, 0, 1.5, 1e308, -1e308, Number.MAX_SAFE_INTEGER + 2, -2_147_483_649),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);
/** An integer written some way other than canonical decimal digits (Number() reads most of them). */
const nonCanonicalInteger = fc
  .integer({ min: 1, max: 2_000_000 })
  .chain((n) =>
    fc.constantFrom(`+${n}`, `0${n}`, `${n}.0`, `${n}e0`, `0x${n.toString(16)}`, ` ${n}`, `${n} `, `${n}n`),
  )
  .map(encodeURIComponent);
const deep = fc.integer({ min: 33, max: 3_000 }).map((depth) => {
  let value: unknown = 'leaf';
  for (let i = 0; i < depth; i++) value = i % 2 === 0 ? { a: value } : [value];
  return value;
});
const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  hostileString,
  hostileNumber,
  fc.boolean(),
  fc.constant(null),
  deep,
  fc.array(hostileString, { maxLength: 5 }),
  fc.dictionary(hostileString, hostileNumber, { maxKeys: 5 }),
);

interface Route {
  name: string;
  method: string;
  path: (p: Record<string, string>) => string;
  body?: (s: Scenario, operationId: string) => Record<string, unknown>;
}

const routes: Route[] = [
  {
    name: 'register',
    method: 'POST',
    path: (p) => `/api/projects/${p['projectId']}/runs/${p['runId']}/environments`,
    body: () => ({ idempotencyKey: 'fuzz-register' }),
  },
  {
    name: 'release',
    method: 'POST',
    path: (p) => `${base(p)}/release`,
    body: () => ({ expectedLifecycleGeneration: 1, idempotencyKey: 'fuzz-release' }),
  },
  { name: 'lifecycle', method: 'GET', path: (p) => `${base(p)}/lifecycle` },
  { name: 'list project', method: 'GET', path: (p) => `/api/projects/${p['projectId']}/environments` },
  {
    name: 'list run',
    method: 'GET',
    path: (p) => `/api/projects/${p['projectId']}/runs/${p['runId']}/environments`,
  },
  {
    name: 'create volume',
    method: 'POST',
    path: (p) => `${base(p)}/workspace-volumes`,
    body: () => ({ idempotencyKey: 'fuzz-volume' }),
  },
  {
    name: 'provision',
    method: 'POST',
    path: (p) => `${base(p)}/sandbox/provision`,
    body: (s) => provisionBody(s, 'fuzz-provision'),
  },
  { name: 'inspect', method: 'GET', path: (p) => `${base(p)}/sandbox` },
  {
    name: 'provider attempts',
    method: 'GET',
    path: (p) => `${base(p)}/sandbox/v1/operations/${p['operationId']}/provider-attempts`,
  },
  {
    name: 'late-resource cleanups',
    method: 'GET',
    path: (p) => `${base(p)}/sandbox/v1/late-resource-cleanups`,
  },
  {
    name: 'abandon',
    method: 'POST',
    path: (p) => `${base(p)}/sandbox/abandon`,
    body: () => ({ resourceGeneration: 1, providerFence: 1, idempotencyKey: 'fuzz-abandon' }),
  },
  {
    name: 'reconcile',
    method: 'POST',
    path: (p) => `${base(p)}/sandbox/reconcile`,
    body: (_s, op) => ({ operationId: op, resourceGeneration: 1, providerFence: 1 }),
  },
  {
    name: 'renew',
    method: 'POST',
    path: (p) => `${base(p)}/sandbox/renew`,
    body: () => ({ expectedResourceGeneration: 1, providerFence: 1, idempotencyKey: 'fuzz-renew' }),
  },
  { name: 'placement', method: 'GET', path: (p) => `${base(p)}/sandbox/v1/placement` },
  { name: 'internal placement', method: 'GET', path: (p) => `${base(p)}/sandbox/v1/internal/placement` },
  { name: 'journal', method: 'GET', path: (p) => `${base(p)}/journal` },
  {
    name: 'build-test binding preparation',
    method: 'GET',
    path: (p) =>
      `${base(p)}/sandbox/build-test/binding-preparation?sessionId=s-1&executionProfileReference=v2`,
  },
  {
    name: 'build-test create',
    method: 'POST',
    path: (p) => `${base(p)}/sandbox/build-test/commands`,
    body: buildTestCommand,
  },
  { name: 'build-test list', method: 'GET', path: (p) => `${base(p)}/sandbox/build-test/commands` },
  { name: 'workspace flushes', method: 'GET', path: (p) => `${base(p)}/workspace-flushes` },
  {
    name: 'build-test read',
    method: 'GET',
    path: (p) => `${base(p)}/sandbox/build-test/commands/${p['operationId']}`,
  },
  {
    name: 'build-test reconcile',
    method: 'POST',
    path: (p) => `${base(p)}/sandbox/build-test/commands/${p['operationId']}/reconcile`,
    body: buildTestCommand,
  },
  {
    name: 'build-test workspace capture',
    method: 'GET',
    path: (p) => `${base(p)}/sandbox/build-test/commands/${p['operationId']}/workspace-capture`,
  },
  {
    name: 'build-test acknowledge',
    method: 'POST',
    path: (p) => `${base(p)}/sandbox/build-test/commands/${p['operationId']}/workspace-capture/acknowledge`,
    body: (s, operationId) => ({
      request: buildTestCommand(s, operationId),
      acknowledgment: { ...routeAcknowledgment },
    }),
  },
];

function buildTestCommand(s: Scenario, operationId: string): Record<string, unknown> {
  return commandRequestFor(operationId, s.volume.volumeId);
}

function base(p: Record<string, string>): string {
  return `/api/projects/${p['projectId']}/runs/${p['runId']}/environments/${p['environmentId']}`;
}

describe('fuzzed routes', () => {
  let pg: IsolatedPostgres;
  let h: Harness;
  let s: Scenario;
  let params: Record<string, string>;

  beforeAll(async () => {
    pg = await isolatedPostgres();
    h = await buildHarness(pg.open(), { workers: false });
    s = await setupScenario(h, { run: 'run-1' });
    const provisioned = await h.request('POST', `${s.base}/sandbox/provision`, {
      token: s.token,
      body: provisionBody(s, 'seed'),
    });
    params = {
      projectId: 'checkout',
      runId: 'run-1',
      environmentId: s.environmentId,
      operationId: (await json<{ operationId: string }>(provisioned)).operationId,
    };
  });
  afterAll(async () => {
    await h.close();
    await pg.drop();
  });

  /** Sends, and checks the answer: never 5xx; a 4xx is a problem and changed nothing. */
  async function check(
    route: Route,
    options: { path?: string; body?: unknown; contentType?: string; token?: string },
  ): Promise<void> {
    const before = await tableContents(h.db);
    const res = await h.request(route.method, options.path ?? route.path(params), {
      token: options.token ?? s.token,
      ...(options.body === undefined ? {} : { body: options.body }),
      ...(options.contentType === undefined ? {} : { contentType: options.contentType }),
    });
    expect(res.status, `${route.name}: ${await res.clone().text()}`).toBeLessThan(500);
    if (res.status >= 400) {
      expect(res.headers.get('content-type')).toBe('application/problem+json');
      expect(await tableContents(h.db), `${route.name} answered ${res.status} but changed rows`).toBe(before);
    }
  }

  it.each(routes)('$name: hostile path parameters', async (route) => {
    const names = Object.keys(params);
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...names), pathSegment, async (name, segment) => {
        const path = route.path({ ...params, [name]: segment });
        const body = route.body?.(s, params['operationId']!);
        await check(route, { path, ...(body === undefined ? {} : { body }) });
      }),
      { numRuns: RUNS, ...seed },
    );
  });

  it.each(routes.filter((r) => r.body !== undefined))('$name: hostile bodies', async (route) => {
    const valid = route.body!(s, params['operationId']!);
    const fields = Object.keys(valid);
    const mutation = fc.oneof(
      // One field replaced by anything hostile.
      fc
        .tuple(fc.constantFrom(...fields), hostileValue)
        .map(([field, value]) => ({ ...valid, [field]: value })),
      // An unknown field added.
      fc.tuple(hostileString, hostileValue).map(([field, value]) => ({ ...valid, [`x${field}`]: value })),
      // The whole body of the wrong type.
      hostileValue,
    );
    await fc.assert(
      fc.asyncProperty(mutation, async (body) => {
        await check(route, { body: JSON.stringify(body) });
      }),
      { numRuns: RUNS, ...seed },
    );
  });

  /** Sends, and checks the answer is a 400 about the query parameter `name`, which changed nothing. */
  async function refusedQuery(route: Route, path: string, name: string): Promise<void> {
    const before = await tableContents(h.db);
    const body = route.body?.(s, params['operationId']!);
    const res = await h.request(route.method, path, {
      token: s.token,
      ...(body === undefined ? {} : { body }),
    });
    const text = await res.text();
    expect(res.status, `${route.name} ${path}: ${text}`).toBe(400);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    const problem = JSON.parse(text) as { type: string; errors?: { location: string; path: string }[] };
    expect(problem.type).toBe('urn:sandlot:problem:invalid-request');
    expect(problem.errors?.[0]).toMatchObject({ location: 'query', path: name });
    expect(await tableContents(h.db), `${route.name} answered 400 but changed rows`).toBe(before);
  }

  it.each(routes)('$name: a query parameter the route does not declare', async (route) => {
    const names = hostileString.filter((name) => encodable(name) && name !== '');
    await fc.assert(
      fc.asyncProperty(names, pathSegment, async (name, value) => {
        const path = route.path(params);
        const separator = path.includes('?') ? '&' : '?';
        // `x…` is no route's parameter; the name arrives decoded, as the server reads it.
        const decoded = new URLSearchParams(`x${encodeURIComponent(name)}=`).keys().next().value ?? '';
        await refusedQuery(route, `${path}${separator}x${encodeURIComponent(name)}=${value}`, decoded);
      }),
      { numRuns: RUNS, ...seed },
    );
  });

  it.each([
    ['inspect', 'networkPolicyGeneration', ''],
    ['lifecycle', 'after', 'wait=1ms&'],
    ['list run', 'limit', ''],
  ])('%s: %s written as anything but canonical decimal digits', async (name, parameter, prefix) => {
    const route = routes.find((r) => r.name === name)!;
    await fc.assert(
      fc.asyncProperty(nonCanonicalInteger, async (value) => {
        await refusedQuery(route, `${route.path(params)}?${prefix}${parameter}=${value}`, parameter);
      }),
      { numRuns: RUNS, ...seed },
    );
  });

  it.each([
    ['lifecycleState', fc.string()],
    ['sandboxState', fc.string()],
    ['hasUnresolvedAttempts', fc.string()],
    ['updatedSince', fc.string()],
    [
      'cursor',
      fc.oneof(
        fc.string(),
        fc.base64String(),
        fc.json().map((t) => Buffer.from(t).toString('base64url')),
      ),
    ],
  ] as const)('list: hostile %s values never 5xx, and a refusal is a problem', async (name, values) => {
    const route = routes.find((r) => r.name === 'list project')!;
    await fc.assert(
      fc.asyncProperty(values, async (value) => {
        await check(route, { path: `${route.path(params)}?${name}=${encodeURIComponent(value)}` });
      }),
      { numRuns: RUNS, ...seed },
    );
  });

  it.each(routes)('$name: hostile query values, tokens and content types', async (route) => {
    await fc.assert(
      fc.asyncProperty(
        pathSegment,
        headerValue,
        fc.constantFrom('query', 'token', 'content-type'),
        async (query, value, where) => {
          const body = route.body?.(s, params['operationId']!);
          if (where === 'query') {
            const path = `${route.path(params)}?networkPolicyGeneration=${query}`;
            await check(route, { path, ...(body === undefined ? {} : { body }) });
          } else if (where === 'token') {
            await check(route, {
              token: value,
              ...(body === undefined ? {} : { body }),
            });
          } else if (body !== undefined) {
            await check(route, {
              body: JSON.stringify(body),
              contentType: value,
            });
          }
        },
      ),
      { numRuns: RUNS, ...seed },
    );
  });
});
