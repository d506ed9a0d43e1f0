// The app as production builds it: no admin routes, JWKS-verified ES256 tokens, and the external
// Projects and run-selection services reached over HTTP (here a fake on 127.0.0.1), over PostgreSQL.
import { generateKeyPair } from 'jose';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createEnvironmentRuntime, createServices } from '../../actors/services.ts';
import { composeSandlot, type Sandlot } from '../../cli/compose.ts';
import { loadConfig } from '../../config/load.ts';
import { createApp } from '../../http/app.ts';
import { createTokenVerifier } from '../../http/auth/verify.ts';
import { HttpProjectsAuthority } from '../../http/clients/projects-client.ts';
import { HttpRunSelections } from '../../http/clients/run-selection-client.ts';
import { simulatedIdentity } from '../../providers/simulated/identity.ts';
import { SimulatedProvider } from '../../providers/simulated/simulated-provider.ts';
import type { Database } from '../../store/db.ts';
import { attemptRunner } from '../../workers/effect-processor.ts';
import { runnerDeps } from '../../workers/host.ts';
import { migrate } from '../../store/migrate.ts';
import { TableNetworkPolicies } from '../../store/network-policies.ts';
import { isolatedPostgres, testDatabaseUrl, type IsolatedPostgres } from '../support/databases.ts';
import {
  fakeAudience,
  fakeIssuer,
  startFakeServices,
  type FakeServices,
  type Failure,
  type Service,
} from '../support/fake-services.ts';

const TIMEOUT_MS = 750;
const tenant = 'acme';
const project = 'checkout';
// A subject as identity providers write them: it must travel percent-encoded in the upstream path.
const subject = 'auth0|alice';
const all = ['ReadProjects', 'WriteProjects', 'ReadRunSelection'];
const candidate = { ...simulatedIdentity('1'), exclusive: true };
const envs = (run: string) => `/api/projects/${project}/runs/${run}/environments`;

type App = ReturnType<typeof createApp>;
type Json = Record<string, unknown>;

async function send(app: App, method: string, path: string, token?: string, body?: unknown) {
  const headers: Record<string, string> = {};
  if (token !== undefined) headers['authorization'] = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await app.request(path, {
    method,
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Json };
}

describe('production mode (JWKS, HTTP Projects and run selection, PostgreSQL)', () => {
  let fake: FakeServices;
  let pg: IsolatedPostgres;
  let db: Database;
  let app: App;
  let alice: string;

  const register = (key: string, run = 'run-1', token = alice) =>
    send(app, 'POST', envs(run), token, { idempotencyKey: key });
  const read = (id: string, token = alice, run = 'run-1') =>
    send(app, 'GET', `${envs(run)}/${id}/lifecycle`, token);
  const release = (id: string, key: string, token = alice, run = 'run-1') =>
    send(app, 'POST', `${envs(run)}/${id}/release`, token, {
      expectedLifecycleGeneration: 1,
      idempotencyKey: key,
    });
  const rowCounts = async () =>
    (
      await db.query<{ environments: number; journal: number; outbox: number }>(
        `SELECT (SELECT count(*)::int FROM environments) AS environments,
                (SELECT count(*)::int FROM environment_journal) AS journal,
                (SELECT count(*)::int FROM outbox) AS outbox`,
      )
    ).rows[0];
  const upstreamProblem = (service: string) => ({
    type: 'urn:sandlot:problem:upstream-unavailable',
    status: 503,
    title: 'Upstream unavailable',
    detail: expect.stringContaining(`${service} is unavailable`) as unknown,
  });

  beforeAll(async () => {
    fake = await startFakeServices();
    pg = await isolatedPostgres();
    db = pg.open();
    await migrate(db);
    const authority = new HttpProjectsAuthority(fake.projectsUrl, TIMEOUT_MS);
    const selections = new HttpRunSelections(fake.runSelectionUrl, TIMEOUT_MS);
    const provider = new SimulatedProvider({ db, optionsRevision: '1' });
    const runtime = createEnvironmentRuntime(db);
    const logger = pino({ level: 'silent' });
    const services = createServices({
      db,
      runtime,
      runner: attemptRunner(runnerDeps({ db, runtime, provider, logger, authority, selections })),
      provider,
      authority,
      selections,
      networkPolicies: new TableNetworkPolicies(db),
    });
    app = createApp({
      db,
      services,
      verifier: createTokenVerifier({
        kind: 'jwks',
        jwksUrl: fake.jwksUrl,
        issuer: fakeIssuer,
        audience: fakeAudience,
        algorithms: ['ES256'],
      }),
      logger: pino({ level: 'silent' }),
      provider: provider.identity,
      embedded: false,
    });
    fake.grant(tenant, project, subject, all);
    fake.setSelection(tenant, project, 'run-1', [candidate]);
    alice = await fake.sign({ sub: subject, tenant });
  });

  afterEach(() => {
    fake.fail('projects', undefined);
    fake.fail('selection', undefined);
    fake.grant(tenant, project, subject, all);
    expect(fake.requests.filter((r) => r.service === 'unexpected')).toEqual([]);
  });

  afterAll(async () => {
    await fake?.close();
    await pg?.drop();
  });

  it('mounts no admin routes: they are 404 problems, even for an operator token', async () => {
    const operator = await fake.sign({ sub: 'ops', tenant, roles: ['operator'] });
    for (const [method, path, body] of [
      ['GET', '/admin/provider', undefined],
      ['PUT', `/admin/tenants/${tenant}/projects/${project}/grants/bob`, { permissions: all }],
      [
        'PUT',
        `/admin/tenants/${tenant}/projects/${project}/runs/run-1/selection`,
        { candidates: [candidate] },
      ],
    ] as const) {
      for (const token of [operator, undefined]) {
        const res = await send(app, method, path, token, body);
        expect(res.status).toBe(404);
        expect(res.headers.get('content-type')).toBe('application/problem+json');
        expect(res.body).toMatchObject({ type: 'urn:sandlot:problem:route-not-found', status: 404 });
      }
    }
    const doc = (await (await app.request('/openapi.json')).json()) as { paths: Json };
    expect(Object.keys(doc.paths).filter((p) => p.startsWith('/admin'))).toEqual([]);
    // Users' routes, Core's internal runtime routes (suspend, resume) and the tokenless probes,
    // metrics and provider reports; nothing else.
    expect(
      Object.keys(doc.paths)
        .filter((p) => !p.startsWith('/api/') && !p.startsWith('/internal/runtime/'))
        .sort(),
    ).toEqual(['/healthz', '/internal/provider-lifecycle/reports', '/metrics', '/readyz']);
  });

  it('registers, replays, reads and releases with a JWKS-signed token', async () => {
    const seen = fake.requests.length;
    const first = await register('first');
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({
      tenantId: tenant,
      projectId: project,
      runId: 'run-1',
      state: 'Registered',
    });
    const id = first.body['environmentId'] as string;

    const again = await register('first');
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);

    const got = await read(id);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(first.body);

    const released = await release(id, 'release-1');
    expect(released.status).toBe(200);
    expect(released.body).toMatchObject({ environmentId: id, state: 'Released', revision: 2 });
    const replay = await release(id, 'release-1');
    expect(replay.status).toBe(200);
    expect(replay.body).toEqual(released.body);

    // The contract the clients speak: GET, JSON, every path segment percent-encoded.
    const calls = fake.requests.slice(seen).filter((c) => c.service !== 'jwks');
    expect(calls.every((c) => c.method === 'GET' && c.accept === 'application/json')).toBe(true);
    expect(calls).toContainEqual(
      expect.objectContaining({
        service: 'projects',
        path: `/projects/v1/tenants/acme/projects/checkout/subjects/auth0%7Calice/permissions`,
      }),
    );
    expect(calls).toContainEqual(
      expect.objectContaining({
        service: 'selection',
        path: '/selection/tenants/acme/projects/checkout/runs/run-1/selection',
      }),
    );
  });

  it('refuses tokens the key set does not vouch for with 401', async () => {
    const otherKey = await generateKeyPair('ES256');
    const before = await rowCounts();
    for (const token of [
      await fake.sign({ sub: subject, tenant }, { key: otherKey }),
      await fake.sign({ sub: subject, tenant }, { issuer: 'https://elsewhere.test/' }),
      await fake.sign({ sub: subject, tenant }, { audience: 'someone-else' }),
      'not.a.token',
      undefined,
    ]) {
      const res = await send(app, 'POST', envs('run-1'), token, { idempotencyKey: 'k-401' });
      expect(res.status).toBe(401);
      expect(res.body).toMatchObject({ type: 'urn:sandlot:problem:unauthenticated' });
    }
    expect(await rowCounts()).toEqual(before);
  });

  it('applies a permission removed at the Projects service on the very next request', async () => {
    const id = (await register('k-revoke')).body['environmentId'] as string;
    expect((await read(id)).status).toBe(200);

    fake.grant(tenant, project, subject, ['WriteProjects', 'ReadRunSelection']);
    const denied = await read(id);
    expect(denied.status).toBe(403);
    expect(denied.body).toMatchObject({ type: 'urn:sandlot:problem:forbidden' });
    expect(denied.body['detail']).toContain('ReadProjects');

    fake.grant(tenant, project, subject, ['ReadProjects', 'ReadRunSelection']);
    const before = await rowCounts();
    expect((await register('k-revoke-2')).status).toBe(403);
    expect((await release(id, 'r')).status).toBe(403);
    expect(await rowCounts()).toEqual(before);

    // A subject the Projects service does not know (404) has no permissions at all.
    fake.revoke(tenant, project, subject);
    expect((await read(id)).status).toBe(403);
    fake.grant(tenant, project, subject, all);
    expect((await read(id)).body).toMatchObject({ state: 'Registered', revision: 1 });
  });

  it("answers another tenant's Environment with 404", async () => {
    const id = (await register('k-tenant')).body['environmentId'] as string;
    fake.grant('globex', project, 'carol', all);
    fake.setSelection('globex', project, 'run-1', [candidate]);
    const carol = await fake.sign({ sub: 'carol', tenant: 'globex' });
    const res = await read(id, carol);
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ type: 'urn:sandlot:problem:environment-not-found' });
    expect((await release(id, 'steal', carol)).status).toBe(404);
    expect((await read(id)).body).toMatchObject({ state: 'Registered' });
  });

  it.each<[Service, Failure, string]>([
    ['projects', 'status-500', 'Projects'],
    ['projects', 'status-502', 'Projects'],
    ['projects', 'hang', 'Projects'],
    ['projects', 'not-json', 'Projects'],
    ['projects', 'bad-shape', 'Projects'],
    ['selection', 'status-500', 'Run selection'],
    ['selection', 'hang', 'Run selection'],
    ['selection', 'bad-shape', 'Run selection'],
  ])(
    'answers %s failing with %s as a 503 upstream-unavailable and writes nothing',
    async (service, failure, name) => {
      const id = (await register(`k-${service}-${failure}`)).body['environmentId'] as string;
      const before = await rowCounts();
      fake.fail(service, { failure });
      const started = performance.now();
      const registered = await register(`k-${service}-${failure}-new`);
      expect(registered.status).toBe(503);
      expect(registered.headers.get('content-type')).toBe('application/problem+json');
      expect(registered.body).toMatchObject(upstreamProblem(name));
      // A hung service costs the client's timeout, not the caller's patience.
      expect(performance.now() - started).toBeLessThan(TIMEOUT_MS + 2_000);

      const released = await release(id, 'release-1');
      expect(released.status).toBe(503);
      expect(released.body).toMatchObject(upstreamProblem(name));
      if (service === 'projects') expect((await read(id)).status).toBe(503);

      fake.fail(service, undefined);
      expect(await rowCounts()).toEqual(before);
      expect((await read(id)).body).toMatchObject({ state: 'Registered', revision: 1 });
    },
  );

  // Failing the Nth upstream call for N = 1, 2, … reaches every check a request makes, including the
  // recheck inside the transaction after the rows are written: each must roll back to nothing.
  it.each<Service>(['projects', 'selection'])(
    'writes nothing when %s fails at any call of a registration or release',
    async (service) => {
      const failEachCall = async (
        attempt: () => Promise<{ status: number; body: Json }>,
        unchanged: () => Promise<void>,
      ) => {
        for (let after = 0; after < 10; after += 1) {
          fake.fail(service, { failure: 'status-500', after });
          const res = await attempt();
          fake.fail(service, undefined);
          if (res.status !== 503) return { after, res };
          expect(res.body).toMatchObject({ type: 'urn:sandlot:problem:upstream-unavailable' });
          await unchanged();
        }
        throw new Error(`${service} never stopped failing`);
      };

      const before = await rowCounts();
      const created = await failEachCall(
        () => register(`k-each-${service}`),
        async () => expect(await rowCounts()).toEqual(before),
      );
      expect(created.res.status).toBe(201);
      // Checked, then rechecked before commit: at least two calls could fail.
      expect(created.after).toBeGreaterThanOrEqual(2);

      const id = created.res.body['environmentId'] as string;
      const afterCreate = await rowCounts();
      const released = await failEachCall(
        () => release(id, 'release-1'),
        async () => {
          expect(await rowCounts()).toEqual(afterCreate);
          expect((await read(id)).body).toMatchObject({ state: 'Registered', revision: 1 });
        },
      );
      expect(released.res.status).toBe(200);
      expect(released.res.body).toMatchObject({ state: 'Released', revision: 2 });
      expect(released.after).toBeGreaterThanOrEqual(service === 'projects' ? 2 : 1);
    },
  );

  it('answers a run the selection service does not know (404) with 409 run-selection-missing', async () => {
    const before = await rowCounts();
    const res = await register('k-missing', 'run-unknown');
    expect(res.status).toBe(409);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(res.body).toMatchObject({ type: 'urn:sandlot:problem:run-selection-missing', status: 409 });
    expect(await rowCounts()).toEqual(before);
  });

  it('refuses to act on an Environment whose run selection changed upstream (409 run-selection-changed)', async () => {
    fake.setSelection(tenant, project, 'run-changing', [candidate]);
    const id = (await register('k-changing', 'run-changing')).body['environmentId'] as string;
    fake.setSelection(tenant, project, 'run-changing', [{ ...candidate, optionsRevision: '2' }]);
    const before = await rowCounts();
    const released = await release(id, 'release-1', alice, 'run-changing');
    expect(released.status).toBe(409);
    expect(released.body).toMatchObject({ type: 'urn:sandlot:problem:run-selection-changed' });
    const replay = await register('k-changing', 'run-changing');
    expect(replay.status).toBe(409);
    expect(replay.body).toMatchObject({ type: 'urn:sandlot:problem:run-selection-changed' });
    expect(await rowCounts()).toEqual(before);
  });
});

describe('production composition root (composeSandlot with production configuration)', () => {
  let fake: FakeServices;
  let pg: IsolatedPostgres;
  let sandlot: Sandlot | undefined;

  beforeAll(async () => {
    fake = await startFakeServices();
    pg = await isolatedPostgres();
  });
  afterAll(async () => {
    await sandlot?.close();
    await fake?.close();
    await pg?.drop();
  });

  it('migrates, verifies with JWKS, asks the HTTP services and mounts no admin routes', async () => {
    const databaseUrl = new URL(testDatabaseUrl);
    databaseUrl.searchParams.set('options', `-c search_path=${pg.schema}`);
    const config = loadConfig({
      DATABASE_URL: databaseUrl.toString(),
      SANDLOT_JWT_ISSUER: fakeIssuer,
      SANDLOT_JWKS_URL: fake.jwksUrl,
      SANDLOT_JWT_ALGORITHMS: 'ES256',
      SANDLOT_PROJECTS_URL: fake.projectsUrl,
      SANDLOT_RUN_SELECTION_URL: fake.runSelectionUrl,
      LOG_LEVEL: 'silent',
    });
    expect(config.mode).toBe('production');
    sandlot = await composeSandlot(config, pino({ level: 'silent' }));
    const { rows } = await sandlot.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'environments'`,
      [pg.schema],
    );
    expect(rows[0]).toEqual({ n: 1 });

    fake.grant(tenant, project, 'bob', all);
    fake.setSelection(tenant, project, 'run-1', [candidate]);
    const bob = await fake.sign({ sub: 'bob', tenant });
    const res = await send(sandlot.app, 'POST', envs('run-1'), bob, { idempotencyKey: 'k' });
    expect(res.status).toBe(201);
    expect(fake.requests.map((r) => r.service)).toEqual(
      expect.arrayContaining(['jwks', 'projects', 'selection']),
    );
    expect((await send(sandlot.app, 'GET', '/admin/provider', bob)).status).toBe(404);
  });
});
