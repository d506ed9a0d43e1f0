// The service's self-description and probes: /openapi.json, /docs, /healthz, /readyz, and the
// problem+json answer for a route that does not exist.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPgliteDatabase } from '../../store/pglite-database.ts';
import { openBackend, type BackendHandle } from '../support/databases.ts';
import { buildHarness, type Harness } from '../support/harness.ts';

interface Operation {
  summary?: string;
  tags?: string[];
  security?: Record<string, string[]>[];
  parameters?: { name: string; in: string; required?: boolean }[];
  requestBody?: { required?: boolean; content: Record<string, { schema: unknown }> };
  responses: Record<string, { description: string; content?: Record<string, { schema: unknown }> }>;
}

interface OpenApiDocument {
  openapi: string;
  security?: Record<string, string[]>[];
  tags?: { name: string; description: string }[];
  info: { title: string; version: string };
  paths: Record<string, Record<string, Operation>>;
  components: {
    securitySchemes: Record<string, unknown>;
    schemas: Record<string, { type?: string; properties?: Record<string, unknown>; required?: string[] }>;
  };
}

const environments = '/api/projects/{projectId}/runs/{runId}/environments';
const buildTest = `${environments}/{environmentId}/sandbox/build-test`;
const operations = [
  ['post', environments, ['201', '200', '409'], true],
  ['post', `${environments}/{environmentId}/release`, ['200', '202', '404', '409'], true],
  ['get', `${environments}/{environmentId}/lifecycle`, ['200', '404'], false],
  ['get', environments, ['200'], false],
  ['get', '/api/projects/{projectId}/environments', ['200'], false],
  ['put', '/admin/tenants/{tenantId}/projects/{projectId}/grants/{subject}', ['200'], true],
  ['get', '/admin/provider', ['200'], false],
  [
    'put',
    '/admin/tenants/{tenantId}/projects/{projectId}/runs/{runId}/selection',
    ['201', '200', '409'],
    true,
  ],
  [
    'put',
    '/admin/tenants/{tenantId}/projects/{projectId}/network-policies/{generation}',
    ['201', '200', '409'],
    true,
  ],
  [
    'post',
    '/admin/tenants/{tenantId}/projects/{projectId}/core/workspace-seeds',
    ['201', '200', '413'],
    false,
  ],
  [
    'put',
    '/admin/tenants/{tenantId}/projects/{projectId}/runs/{runId}/core/build-test/steps/{stepId}/checkpoints/{checkpointId}',
    ['201', '200', '409'],
    true,
  ],
  [
    'put',
    '/admin/tenants/{tenantId}/projects/{projectId}/runs/{runId}/core/build-test/steps/{stepId}/checkpoints/{checkpointId}/journal-admission',
    ['201', '200', '409'],
    true,
  ],
  [
    'put',
    '/admin/tenants/{tenantId}/projects/{projectId}/runs/{runId}/core/runtime/steps/{stepId}/environments/{environmentId}/operations/{operationId}',
    ['201', '200', '409'],
    true,
  ],
  [
    'put',
    '/admin/tenants/{tenantId}/projects/{projectId}/runs/{runId}/core/runtime/steps/{stepId}/environments/{environmentId}/operations/{operationId}/saved-evidence',
    ['201', '200', '404', '409'],
    true,
  ],
  [
    'post',
    '/admin/tenants/{tenantId}/projects/{projectId}/runs/{runId}/core/runtime/steps/{stepId}/environments/{environmentId}/operations/{operationId}/state',
    ['200', '404', '409'],
    true,
  ],
  [
    'put',
    '/admin/tenants/{tenantId}/projects/{projectId}/runs/{runId}/core/runtime/steps/{stepId}/environments/{environmentId}/registrations/{registrationId}',
    ['201', '200', '409'],
    true,
  ],
  [
    'put',
    '/admin/tenants/{tenantId}/projects/{projectId}/runs/{runId}/core/runtime/steps/{stepId}/environments/{environmentId}/sessions/{sessionId}/events/{eventId}/protected-material/{objectReference}',
    ['201', '200', '409', '413', '415'],
    false,
  ],
  ['get', `${environments}/{environmentId}/journal`, ['200', '404'], false],
  ['post', `${environments}/{environmentId}/workspace-volumes`, ['201', '200', '404', '409'], true],
  ['post', `${environments}/{environmentId}/sandbox/provision`, ['202', '404', '409', '422'], true],
  ['get', `${environments}/{environmentId}/sandbox`, ['200', '404'], false],
  [
    'get',
    `${environments}/{environmentId}/sandbox/v1/operations/{operationId}/provider-attempts`,
    ['200', '404'],
    false,
  ],
  ['get', `${environments}/{environmentId}/sandbox/v1/late-resource-cleanups`, ['200', '404'], false],
  ['post', `${environments}/{environmentId}/sandbox/abandon`, ['202', '404', '409'], true],
  ['post', `${environments}/{environmentId}/sandbox/reconcile`, ['202', '200', '404', '409'], true],
  ['post', `${environments}/{environmentId}/sandbox/renew`, ['200', '202', '404', '409'], true],
  ['get', `${environments}/{environmentId}/sandbox/v1/placement`, ['200', '204', '404', '409'], false],
  [
    'get',
    `${environments}/{environmentId}/sandbox/v1/internal/placement`,
    ['200', '204', '403', '404', '409'],
    false,
  ],
  // BuildTest (in progress): 409 build-test-unavailable without a profile, 501 with one.
  ['get', `${buildTest}/binding-preparation`, ['404', '409', '501'], false],
  ['post', `${buildTest}/commands`, ['404', '409', '501'], true],
  ['get', `${buildTest}/commands`, ['200', '404'], false],
  ['get', `${buildTest}/commands/{operationId}`, ['404', '409', '501'], false],
  ['post', `${buildTest}/commands/{operationId}/reconcile`, ['404', '409', '501'], true],
  ['get', `${buildTest}/commands/{operationId}/workspace-capture`, ['404', '409', '501'], false],
  ['post', `${buildTest}/commands/{operationId}/workspace-capture/acknowledge`, ['404', '409', '501'], true],
  ['post', '/internal/runtime/suspend/resolve', ['200', '404', '409', '503'], true],
  ['get', `${environments}/{environmentId}/workspace-flushes`, ['200', '404'], false],
  [
    'post',
    `${environments}/{environmentId}/workspace-volumes/{volumeId}/flush`,
    ['200', '404', '409', '503'],
    true,
  ],
  ['post', '/internal/runtime/resume/prepare', ['200', '202', '404', '409', '422', '503'], true],
  ['post', '/internal/runtime/resume/verify', ['200', '404', '409', '422', '503'], true],
  ['post', '/internal/runtime/resume/bootstrap', ['200', '404', '409', '422', '503'], true],
  ['post', '/internal/runtime/suspend/release-placement', ['200', '202', '404', '409', '503'], true],
  [
    'post',
    `${environments}/{environmentId}/runtime-bootstrap/profiles/{profileId}/resolve`,
    ['200', '403', '404', '409', '503'],
    false,
  ],
  [
    'get',
    `${environments}/{environmentId}/runtime-bootstrap/profiles/{profileId}`,
    ['200', '403', '404', '409'],
    false,
  ],
  [
    'get',
    `${environments}/{environmentId}/runtime-bootstrap/profiles/{profileId}/workspace`,
    ['200', '403', '404', '409'],
    false,
  ],
] as const;

/** Answered without a user token: the probes, the metrics listener, the closed provider reports. */
const tokenless = [
  ['get', '/healthz'],
  ['get', '/readyz'],
  ['get', '/metrics'],
  ['post', '/internal/provider-lifecycle/reports'],
] as const;

const problemRef = { $ref: '#/components/schemas/Problem' };

describe('OpenAPI, docs and probes', () => {
  let handle: BackendHandle;
  let h: Harness;
  let doc: OpenApiDocument;

  beforeAll(async () => {
    handle = await openBackend('pglite');
    h = await buildHarness(handle.db);
    const res = await h.request('GET', '/openapi.json');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    doc = (await res.json()) as OpenApiDocument;
  });
  afterAll(() => handle.close());

  it('is an OpenAPI 3.1 document with exactly the lifecycle, sandbox and admin routes', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info).toMatchObject({ title: 'Sandlot', version: expect.any(String) as unknown });
    const listed = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.keys(item).map((method) => `${method} ${path}`),
    );
    expect(listed.sort()).toEqual(
      [...operations, ...tokenless].map(([method, path]) => `${method} ${path}`).sort(),
    );
  });

  it('groups every operation under one declared tag, and declares the bearer as the default', () => {
    const declared = (doc.tags ?? []).map((tag) => tag.name);
    expect(declared).toEqual(
      expect.arrayContaining(['Lifecycle', 'Sandbox', 'Placement', 'BuildTest', 'Runtime', 'Admin']),
    );
    const untagged: string[] = [];
    const used = new Set<string>();
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        if (op.tags?.length !== 1 || !declared.includes(op.tags[0]!)) untagged.push(`${method} ${path}`);
        else used.add(op.tags[0]!);
      }
    }
    expect(untagged).toEqual([]);
    // Every declared group has operations: none is an empty heading on the page.
    expect([...used].sort()).toEqual([...declared].sort());
    expect(doc.paths[`${environments}/{environmentId}/sandbox/provision`]?.['post']?.tags).toEqual([
      'Sandbox',
    ]);
    expect(doc.paths[`${buildTest}/commands`]?.['post']?.tags).toEqual(['BuildTest']);
    expect(doc.paths['/internal/runtime/resume/verify']?.['post']?.tags).toEqual([
      'Workspace, suspend and resume',
    ]);
    expect(doc.security).toEqual([{ bearer: [] }]);
  });

  it.each(tokenless)('describes %s %s as needing no token', (method, path) => {
    const op = doc.paths[path]?.[method];
    expect(op?.security).toEqual([]);
    expect(op?.tags).toEqual(['Operations']);
    expect(op?.summary).toEqual(expect.any(String));
  });

  it('declares the bearer scheme and the Problem schema', () => {
    expect(doc.components.securitySchemes['bearer']).toEqual({
      type: 'http',
      scheme: 'bearer',
      bearerFormat: 'JWT',
    });
    const problem = doc.components.schemas['Problem'];
    expect(problem?.type).toBe('object');
    expect(Object.keys(problem?.properties ?? {})).toEqual(
      expect.arrayContaining(['type', 'title', 'status', 'detail', 'instance']),
    );
    expect(problem?.required).toEqual(expect.arrayContaining(['type', 'title', 'status']));
  });

  it.each(operations)('describes %s %s fully', (method, path, answers, hasBody) => {
    const operation = doc.paths[path]?.[method];
    expect(operation).toBeDefined();
    const op = operation!;
    expect(op.summary).toEqual(expect.any(String));
    expect(op.security).toEqual([{ bearer: [] }]);

    // Every {template} in the path is a required path parameter, and nothing else is.
    const templated = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
    const declared = (op.parameters ?? []).filter((p) => p.in === 'path');
    expect(declared.map((p) => p.name).sort()).toEqual(templated.sort());
    expect(declared.every((p) => p.required === true)).toBe(true);

    if (hasBody) {
      expect(op.requestBody?.required).toBe(true);
      expect(op.requestBody?.content['application/json']?.schema).toEqual({
        $ref: expect.stringMatching(/^#\/components\/schemas\/\w+$/) as unknown,
      });
    } else {
      expect(op.requestBody).toBeUndefined();
    }

    for (const status of answers) {
      const response = op.responses[status];
      expect(response, `${status} answer`).toBeDefined();
      if (status === '204') {
        expect(response?.content).toBeUndefined();
        continue;
      }
      const media = status.startsWith('2') ? 'application/json' : 'application/problem+json';
      expect(Object.keys(response?.content ?? {})).toEqual([media]);
    }
    // Every error answer is problem+json with the shared schema.
    for (const [status, response] of Object.entries(op.responses)) {
      if (status.startsWith('2')) continue;
      expect(response.content).toEqual({ 'application/problem+json': { schema: problemRef } });
    }
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['400', '401', '403']));
  });

  it('serves the API reference as HTML at /docs', async () => {
    const res = await h.request('GET', '/docs');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await res.text();
    expect(html).toMatch(/^<!doctype html>/i);
    expect(html).toContain('Sandlot API');
    expect(html).toContain('/openapi.json');
  });

  it('answers /healthz and /readyz with 200 and needs no token', async () => {
    const health = await h.request('GET', '/healthz');
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
    const ready = await h.request('GET', '/readyz');
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready' });
  });

  it('answers /readyz with a 503 not-ready problem when the database is gone', async () => {
    const db = await createPgliteDatabase();
    const closed = await buildHarness(db, { migrated: true });
    await db.close();
    const res = await closed.request('GET', '/readyz');
    expect(res.status).toBe(503);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(await res.json()).toMatchObject({ type: 'urn:sandlot:problem:not-ready', status: 503 });
    expect((await closed.request('GET', '/healthz')).status).toBe(200);
  });

  it('answers an unknown route with a 404 route-not-found problem', async () => {
    for (const [method, path] of [
      ['GET', '/nope'],
      ['DELETE', '/healthz'],
      ['POST', '/openapi.json'],
    ] as const) {
      const res = await h.request(method, path);
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.headers.get('content-type')).toBe('application/problem+json');
      expect(await res.json()).toEqual({
        type: 'urn:sandlot:problem:route-not-found',
        title: 'Not found',
        status: 404,
        detail: `no route for ${method} ${path}`,
      });
    }
    // Under /api the token is checked first: no token is 401, a valid one reaches the 404.
    expect((await h.request('GET', '/api/nope')).status).toBe(401);
    const token = await h.token('acme', 'alice');
    const res = await h.request('GET', '/api/nope', { token });
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ type: 'urn:sandlot:problem:route-not-found' });
  });
});
