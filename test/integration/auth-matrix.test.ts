// The auth matrix, kept as a test: every API route × every kind of bad token answers 401 (another
// tenant's valid token: 404), every route × every permission it needs, withheld, answers 403, and
// every route × a token bound to another project or run answers 403; each case leaves every table
// as it was. Both modes: embedded (HS256 dev key, grants table) and production (ES256 tokens from a
// JWKS, Projects and run selection over HTTP, no admin routes).
import { SignJWT, exportSPKI, generateKeyPair } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpProjectsAuthority } from '../../http/clients/projects-client.ts';
import { HttpRunSelections } from '../../http/clients/run-selection-client.ts';
import type { Database } from '../../store/db.ts';
import { migrate } from '../../store/migrate.ts';
import { putNetworkPolicy } from '../../store/network-policies.ts';
import { migrateSimulated } from '../../providers/simulated/migrate.ts';
import { commandRequestFor, routeAcknowledgment } from '../support/build-test-commands.ts';
import { isolatedPostgres, type IsolatedPostgres } from '../support/databases.ts';
import { fakeAudience, fakeIssuer, startFakeServices, type FakeServices } from '../support/fake-services.ts';
import {
  allPermissions,
  audience,
  buildHarness,
  issuer,
  seedProject,
  type Harness,
} from '../support/harness.ts';
import { json, provisionBody, setupScenario, waitForLease, type Scenario } from '../support/sandbox-flow.ts';
import { tableCounts } from '../support/table-fingerprint.ts';

/** Claims to sign; `sub: undefined` leaves the subject out. */
type Claims = Record<string, unknown>;
type BadTokens = [kind: string, mint: () => Promise<string | undefined>][];

type RunBinding = { projectId: string; runId: string };

/** One mode under test: an app with an Active lease, and how to mint its tokens. */
interface Mode {
  h: Harness;
  s: Scenario;
  operationId: string;
  /** A valid token for a subject (granted in setup), bound to a project and run if given. */
  token(tenant: string, subject: string, binding?: RunBinding): Promise<string>;
  badTokens: BadTokens;
  close(): Promise<void>;
}

type Permission = (typeof allPermissions)[number];

interface Route {
  name: string;
  method: string;
  path: (s: Scenario, operationId: string) => string;
  body?: (s: Scenario, operationId: string) => unknown;
  needs: readonly Permission[];
  /** A run-bound route: every case but the binding one sends a token bound to this run. */
  bound?: true;
}

const write: readonly Permission[] = ['WriteProjects', 'ReadRunSelection'];
const envs = '/api/projects/checkout/runs/run-1/environments';
const thisRun: RunBinding = { projectId: 'checkout', runId: 'run-1' };
const buildTest = (s: Scenario) => `${s.base}/sandbox/build-test`;
const digest = (c: string) => c.repeat(64);

const routes: Route[] = [
  {
    name: 'register',
    method: 'POST',
    path: () => envs,
    body: () => ({ idempotencyKey: 'matrix' }),
    needs: write,
  },
  {
    name: 'release',
    method: 'POST',
    path: (s) => `${s.base}/release`,
    body: () => ({ expectedLifecycleGeneration: 1, idempotencyKey: 'matrix' }),
    needs: write,
  },
  { name: 'lifecycle', method: 'GET', path: (s) => `${s.base}/lifecycle`, needs: ['ReadProjects'] },
  {
    name: 'list project',
    method: 'GET',
    path: () => '/api/projects/checkout/environments',
    needs: ['ReadProjects'],
  },
  { name: 'list run', method: 'GET', path: () => envs, needs: ['ReadProjects'] },
  {
    name: 'create volume',
    method: 'POST',
    path: (s) => `${s.base}/workspace-volumes`,
    body: () => ({ idempotencyKey: 'matrix' }),
    needs: ['WriteProjects'],
  },
  {
    name: 'provision',
    method: 'POST',
    path: (s) => `${s.base}/sandbox/provision`,
    body: (s) => provisionBody(s, 'matrix'),
    needs: write,
  },
  {
    name: 'inspect',
    method: 'GET',
    path: (s) => `${s.base}/sandbox?networkPolicyGeneration=1`,
    needs: write,
  },
  {
    name: 'provider attempts',
    method: 'GET',
    path: (s, op) => `${s.base}/sandbox/v1/operations/${op}/provider-attempts`,
    needs: ['ReadRunSelection'],
  },
  {
    name: 'late-resource cleanups',
    method: 'GET',
    path: (s) => `${s.base}/sandbox/v1/late-resource-cleanups`,
    needs: ['ReadRunSelection'],
  },
  {
    name: 'abandon',
    method: 'POST',
    path: (s) => `${s.base}/sandbox/abandon`,
    body: () => ({ resourceGeneration: 1, providerFence: 1, idempotencyKey: 'matrix' }),
    needs: write,
  },
  {
    name: 'reconcile',
    method: 'POST',
    path: (s) => `${s.base}/sandbox/reconcile`,
    body: (_s, op) => ({ operationId: op, resourceGeneration: 1, providerFence: 1 }),
    needs: write,
  },
  {
    name: 'renew',
    method: 'POST',
    path: (s) => `${s.base}/sandbox/renew`,
    body: () => ({ expectedResourceGeneration: 1, providerFence: 1, idempotencyKey: 'matrix' }),
    needs: ['WriteProjects'],
  },
  {
    name: 'placement',
    method: 'GET',
    path: (s) => `${s.base}/sandbox/v1/placement`,
    needs: ['WriteProjects'],
  },
  { name: 'journal', method: 'GET', path: (s) => `${s.base}/journal`, needs: ['ReadProjects'] },
  {
    name: 'internal placement',
    method: 'GET',
    path: (s) => `${s.base}/sandbox/v1/internal/placement`,
    needs: ['ReadRunSelection'],
    bound: true,
  },
  {
    name: 'runtime profile resolve',
    method: 'POST',
    path: (s) => `${s.base}/runtime-bootstrap/profiles/codex-default/resolve`,
    needs: ['ReadRunSelection'],
    bound: true,
  },
  {
    name: 'runtime profile read',
    method: 'GET',
    path: (s) => `${s.base}/runtime-bootstrap/profiles/rp_${'a'.repeat(52)}`,
    needs: ['ReadRunSelection'],
    bound: true,
  },
  {
    name: 'runtime profile workspace',
    method: 'GET',
    path: (s) => `${s.base}/runtime-bootstrap/profiles/rp_${'a'.repeat(52)}/workspace`,
    needs: ['ReadRunSelection'],
    bound: true,
  },
  {
    name: 'build-test binding preparation',
    method: 'GET',
    path: (s) => `${buildTest(s)}/binding-preparation?sessionId=s-1&executionProfileReference=v2`,
    needs: write,
  },
  {
    name: 'build-test command',
    method: 'POST',
    path: (s) => `${buildTest(s)}/commands`,
    body: buildTestCommand,
    needs: write,
  },
  {
    name: 'build-test list',
    method: 'GET',
    path: (s) => `${buildTest(s)}/commands`,
    needs: ['ReadRunSelection'],
  },
  {
    name: 'build-test read',
    method: 'GET',
    path: (s) => `${buildTest(s)}/commands/op-cp-1`,
    needs: write,
  },
  {
    name: 'build-test reconcile',
    method: 'POST',
    path: (s) => `${buildTest(s)}/commands/op-cp-1/reconcile`,
    body: buildTestCommand,
    needs: write,
  },
  {
    name: 'build-test capture',
    method: 'GET',
    path: (s) => `${buildTest(s)}/commands/op-cp-1/workspace-capture`,
    needs: write,
  },
  {
    name: 'build-test acknowledge',
    method: 'POST',
    path: (s) => `${buildTest(s)}/commands/op-cp-1/workspace-capture/acknowledge`,
    body: (s, operationId) => ({
      request: buildTestCommand(s, operationId),
      acknowledgment: routeAcknowledgment,
    }),
    needs: write,
  },
  {
    name: 'workspace flushes',
    method: 'GET',
    path: (s) => `${s.base}/workspace-flushes`,
    needs: ['ReadRunSelection'],
  },
  {
    name: 'workspace flush',
    method: 'POST',
    path: (s) => `${s.base}/workspace-volumes/${s.volume.volumeId}/flush`,
    body: () => ({
      stepId: 'agent_1',
      operationId: 'op-suspend-1',
      transitionRevision: 1,
      nextDataGeneration: 2,
    }),
    needs: write,
  },
  // Core's internal runtime routes name the Environment in the body (the step reference).
  {
    name: 'suspend resolve',
    method: 'POST',
    path: () => '/internal/runtime/suspend/resolve',
    body: (s, op) => ({
      operation: runtimeOperation(s, op, 'suspend', 'reserved'),
      session: { registrationId: 'reg-1', sessionId: 'session-1', generation: 1 },
    }),
    needs: write,
  },
  {
    name: 'suspend release placement',
    method: 'POST',
    path: () => '/internal/runtime/suspend/release-placement',
    body: (s, op) => ({
      operation: runtimeOperation(s, op, 'suspend', 'committed'),
      evidence: {
        transitionRevision: 1,
        dataGeneration: 2,
        hostReceiptSha256: digest('a'),
        manifestSha256: digest('b'),
      },
    }),
    needs: write,
  },
  {
    name: 'resume prepare',
    method: 'POST',
    path: () => '/internal/runtime/resume/prepare',
    body: resumeRequest,
    needs: write,
  },
  {
    name: 'resume verify',
    method: 'POST',
    path: () => '/internal/runtime/resume/verify',
    body: (s, op) => ({ ...resumeRequest(s, op), restoredWorkspace: restoredWorkspace(s, op) }),
    needs: write,
  },
  {
    name: 'resume bootstrap',
    method: 'POST',
    path: () => '/internal/runtime/resume/bootstrap',
    body: (s, op) => ({
      ...resumeRequest(s, op),
      restoredWorkspace: restoredWorkspace(s, op),
      phase: 4,
      registration: {
        registrationId: 'reg-1',
        profileId: 'codex-default',
        sessionId: 'session-1',
        generation: 1,
      },
    }),
    needs: write,
  },
];

function buildTestCommand(s: Scenario, operationId: string) {
  return commandRequestFor(operationId, s.volume.volumeId);
}

/** Core's operation on the matrix Environment's step (well-formed; Core is not configured). */
function runtimeOperation(s: Scenario, operationId: string, kind: 'suspend' | 'resume', state: string) {
  return {
    kind,
    placement: { leaseOperationId: operationId, resourceGeneration: 1, providerFence: 1 },
    workspace: { volumeId: s.volume.volumeId, transitionRevision: 1 },
    requireReleaseCurrent: true,
    ref: { ...thisRun, tenantId: 'acme', stepId: 'agent_1', environmentId: s.environmentId },
    operationId: `op-${kind}-1`,
    state,
    stateRevision: 1,
  };
}

function resumeRequest(s: Scenario, operationId: string) {
  return {
    operation: runtimeOperation(s, operationId, 'resume', 'committed'),
    manifest: {
      source: {
        leaseOperationId: operationId,
        lifecycleGeneration: 1,
        resourceGeneration: 1,
        providerFence: 1,
        networkPolicyGeneration: 1,
      },
      workspace: {
        volumeId: s.volume.volumeId,
        transitionRevision: 1,
        dataGeneration: 2,
        treeHash: digest('c'),
        fileCount: 1,
        byteCount: 1,
      },
      hostReceiptSha256: digest('a'),
      configuration: {
        sessionId: 'session-1',
        eventId: 'event-1',
        objectReference: 'events:configuration-1',
        sha256: digest('d'),
        length: 10,
      },
    },
    hostReceiptSha256: digest('a'),
    transitionRevision: 1,
  };
}

function restoredWorkspace(s: Scenario, operationId: string) {
  return {
    operationId: 'op-resume-1',
    lifecycleGeneration: 2,
    lease: {
      operationId,
      lifecycleGeneration: 2,
      resourceGeneration: 1,
      providerFence: 1,
      resourceId: 'sim-1',
    },
    workspace: {
      volumeId: s.volume.volumeId,
      state: 'Attached',
      transitionRevision: 2,
      resourceGeneration: 1,
      dataGeneration: 2,
      mountPath: '/workspace',
      readOnly: false,
    },
    networkPolicyGeneration: 2,
  };
}

/** Every table's row count, as one comparable string. */
const tables = async (db: Database) => JSON.stringify(await tableCounts(db));

const now = () => Math.floor(Date.now() / 1000);

/** The problem type of an answer, or what it was instead (a 200's body is not a problem). */
const problemType = (text: string) => {
  try {
    return (JSON.parse(text) as { type?: string }).type ?? 'no type';
  } catch {
    return text === '' ? 'empty body' : 'not JSON';
  }
};

const unsigned = (payload: object) =>
  `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${Buffer.from(
    JSON.stringify(payload),
  ).toString('base64url')}.`;

/**
 * The kinds of bad token both modes refuse. `sign` signs with the mode's real key and algorithm,
 * letting `build` (which runs last) override a claim; `forged` signs the same claims some wrong way.
 */
function badTokensFor(
  iss: string,
  aud: string,
  sign: (claims: Claims, build?: (jwt: SignJWT) => SignJWT) => Promise<string>,
  forged: { wrongKey: () => Promise<string>; confused: () => Promise<string> },
): BadTokens {
  return [
    ['no token', () => Promise.resolve(undefined)],
    ['a malformed token', () => Promise.resolve('not.a.jwt')],
    ['a wrong signature', forged.wrongKey],
    [
      'alg none',
      () => Promise.resolve(unsigned({ tenant: 'acme', sub: 'alice', iss, aud, exp: now() + 600 })),
    ],
    ['an algorithm confusion (symmetric/asymmetric)', forged.confused],
    [
      'an expired token',
      () => sign({ tenant: 'acme' }, (j) => j.setIssuedAt(now() - 7200).setExpirationTime(now() - 3600)),
    ],
    ['a token not yet valid', () => sign({ tenant: 'acme' }, (j) => j.setNotBefore(now() + 3600))],
    ['a wrong issuer', () => sign({ tenant: 'acme' }, (j) => j.setIssuer('someone-else'))],
    ['a wrong audience', () => sign({ tenant: 'acme' }, (j) => j.setAudience('someone-else'))],
    ['no tenant claim', () => sign({})],
    ['no subject claim', () => sign({ tenant: 'acme', sub: undefined })],
    ['an empty subject', () => sign({ tenant: 'acme' }, (j) => j.setSubject(''))],
    [
      'a subject with a control character',
      () => sign({ tenant: 'acme' }, (j) => j.setSubject('al\u0000ice')),
    ],
  ];
}

async function provisioned(h: Harness, s: Scenario): Promise<string> {
  const res = await h.request('POST', `${s.base}/sandbox/provision`, {
    token: s.token,
    body: provisionBody(s, 'seed'),
  });
  const { operationId } = await json<{ operationId: string }>(res);
  await waitForLease(h, s, (l) => l['state'] === 'Active');
  return operationId;
}

async function embeddedMode(db: Database): Promise<Mode> {
  const key = new Uint8Array(32).fill(5);
  const h = await buildHarness(db, { key, workers: {} });
  const s = await setupScenario(h, { run: 'run-1' });
  const operationId = await provisioned(h, s);
  // Subjects missing one permission each, and another tenant with every permission of its own.
  for (const missing of allPermissions) {
    await seedProject(h, {
      tenant: 'acme',
      project: 'checkout',
      run: 'run-1',
      subject: `without-${missing}`,
      permissions: allPermissions.filter((p) => p !== missing),
    });
  }
  await seedProject(h, { tenant: 'globex', project: 'checkout', run: 'run-1', subject: 'carol' });
  const sign = (claims: Claims, build: (jwt: SignJWT) => SignJWT = (j) => j, signWith = key) =>
    build(
      // A `sub: undefined` in `claims` leaves the subject out.
      new SignJWT({ sub: 'alice', ...claims })
        .setProtectedHeader({ alg: 'HS256' })
        .setIssuer(issuer)
        .setAudience(audience)
        .setExpirationTime('10m'),
    ).sign(signWith);
  const rsa = await generateKeyPair('RS256');
  return {
    h,
    s,
    operationId,
    token: (tenant, subject, runBinding) =>
      h.token(tenant, subject, runBinding === undefined ? {} : { runBinding }),
    badTokens: badTokensFor(issuer, audience, sign, {
      wrongKey: () => sign({ tenant: 'acme' }, (j) => j, new Uint8Array(32).fill(6)),
      // An asymmetric token where the symmetric key is configured.
      confused: () =>
        new SignJWT({ tenant: 'acme' })
          .setProtectedHeader({ alg: 'RS256' })
          .setSubject('alice')
          .setIssuer(issuer)
          .setAudience(audience)
          .setExpirationTime('10m')
          .sign(rsa.privateKey),
    }),
    close: () => h.close(),
  };
}

async function productionMode(db: Database, fake: FakeServices): Promise<Mode> {
  await migrate(db);
  await migrateSimulated(db);
  const h = await buildHarness(db, {
    migrated: true,
    workers: {},
    authority: new HttpProjectsAuthority(fake.projectsUrl, 2_000),
    selections: new HttpRunSelections(fake.runSelectionUrl, 2_000),
    production: {
      verifier: {
        kind: 'jwks',
        jwksUrl: fake.jwksUrl,
        issuer: fakeIssuer,
        audience: fakeAudience,
        algorithms: ['ES256'],
      },
    },
  });
  const { key: signing, kid } = fake.signing;
  const sign = (
    claims: Claims,
    build: (jwt: SignJWT) => SignJWT = (j) => j,
    privateKey = signing.privateKey,
  ) =>
    build(
      new SignJWT({ sub: 'alice', ...claims })
        .setProtectedHeader({ alg: 'ES256', kid, typ: 'JWT' })
        .setIssuer(fakeIssuer)
        .setAudience(fakeAudience)
        .setIssuedAt()
        .setExpirationTime('10m'),
    ).sign(privateKey);
  const candidate = { ...h.provider.identity, exclusive: true };
  for (const tenant of ['acme', 'globex']) fake.setSelection(tenant, 'checkout', 'run-1', [candidate]);
  fake.grant('acme', 'checkout', 'alice', allPermissions);
  fake.grant('globex', 'checkout', 'carol', allPermissions);
  for (const missing of allPermissions) {
    fake.grant(
      'acme',
      'checkout',
      `without-${missing}`,
      allPermissions.filter((p) => p !== missing),
    );
  }
  // Production reads network policies back from the cluster; this test keeps the table verifier.
  await putNetworkPolicy(db, {
    tenantId: 'acme',
    projectId: 'checkout',
    generation: 1,
    policy: { egress: [{ toFQDNs: ['registry.npmjs.org'] }] },
  });
  const token = (tenant: string, subject: string, binding?: RunBinding) =>
    sign({
      tenant,
      sub: subject,
      ...(binding === undefined ? {} : { project: binding.projectId, run: binding.runId }),
    });
  const alice = await token('acme', 'alice');
  const envs = '/api/projects/checkout/runs/run-1/environments';
  const { environmentId } = await json<{ environmentId: string }>(
    await h.request('POST', envs, { token: alice, body: { idempotencyKey: 'env-1' } }),
  );
  const base = `${envs}/${environmentId}`;
  const volume = await json<Scenario['volume']>(
    await h.request('POST', `${base}/workspace-volumes`, { token: alice, body: { idempotencyKey: 'ws-1' } }),
  );
  const s: Scenario = { token: alice, base, environmentId, volume };
  const operationId = await provisioned(h, s);
  const other = await generateKeyPair('ES256');
  // The published public key, used as an HMAC secret: the classic RS/HS confusion.
  const publicPem = new TextEncoder().encode(await exportSPKI(signing.publicKey));
  return {
    h,
    s,
    operationId,
    token,
    badTokens: badTokensFor(fakeIssuer, fakeAudience, sign, {
      wrongKey: () => sign({ tenant: 'acme' }, (j) => j, other.privateKey),
      confused: () =>
        new SignJWT({ tenant: 'acme' })
          .setProtectedHeader({ alg: 'HS256', kid, typ: 'JWT' })
          .setIssuer(fakeIssuer)
          .setAudience(fakeAudience)
          .setSubject('alice')
          .setExpirationTime('10m')
          .sign(publicPem),
    }),
    close: () => h.close(),
  };
}

describe.each(['embedded', 'production'] as const)('auth matrix (%s mode)', (name) => {
  let pg: IsolatedPostgres;
  let fake: FakeServices | undefined;
  let m: Mode;

  beforeAll(async () => {
    pg = await isolatedPostgres();
    if (name === 'embedded') m = await embeddedMode(pg.open());
    else m = await productionMode(pg.open(), (fake = await startFakeServices()));
  });
  afterAll(async () => {
    await m?.close();
    await fake?.close();
    await pg?.drop();
  });

  const send = (route: Route, token: string | undefined) =>
    m.h.request(route.method, route.path(m.s, m.operationId), {
      ...(token === undefined ? {} : { token }),
      ...(route.body === undefined ? {} : { body: route.body(m.s, m.operationId) }),
    });

  it('answers every route with 401 for every kind of bad token, and changes nothing', async () => {
    const deviations: string[] = [];
    for (const route of routes) {
      for (const [kind, mint] of m.badTokens) {
        const before = await tables(m.h.db);
        const res = await send(route, await mint());
        const type = ((await res.json()) as { type?: string }).type;
        if (res.status !== 401 || type !== 'urn:sandlot:problem:unauthenticated') {
          deviations.push(`${route.name} with ${kind}: ${res.status} ${type}`);
        }
        if ((await tables(m.h.db)) !== before) deviations.push(`${route.name} with ${kind}: rows changed`);
      }
    }
    expect(deviations).toEqual([]);
  });

  /** The route's token for a subject: bound to this run where the route needs a run-bound one. */
  const tokenFor = (route: Route, tenant: string, subject: string) =>
    m.token(tenant, subject, route.bound ? thisRun : undefined);

  it("answers another tenant's Environment with 404 on every route, and changes nothing", async () => {
    const deviations: string[] = [];
    // A list names no Environment: another tenant's caller lists its own (none), as
    // test/integration/environment-list.test.ts shows.
    const lists = ['register', 'list project', 'list run'];
    for (const route of routes.filter((r) => !lists.includes(r.name))) {
      const before = await tables(m.h.db);
      const res = await send(route, await tokenFor(route, 'globex', 'carol'));
      if (res.status !== 404) deviations.push(`${route.name}: ${res.status}`);
      if ((await tables(m.h.db)) !== before) deviations.push(`${route.name}: rows changed`);
    }
    expect(deviations).toEqual([]);
  });

  it('answers every route with 403 for each permission it needs, withheld, and changes nothing', async () => {
    const deviations: string[] = [];
    for (const route of routes) {
      for (const missing of route.needs) {
        const token = await tokenFor(route, 'acme', `without-${missing}`);
        const before = await tables(m.h.db);
        const res = await send(route, token);
        const type = ((await res.json()) as { type?: string }).type;
        if (res.status !== 403 || type !== 'urn:sandlot:problem:forbidden') {
          deviations.push(`${route.name} without ${missing}: ${res.status} ${type}`);
        }
        if ((await tables(m.h.db)) !== before)
          deviations.push(`${route.name} without ${missing}: rows changed`);
      }
    }
    expect(deviations).toEqual([]);
  });

  it('answers every route with 403 for a token bound to another project or run, and changes nothing', async () => {
    const elsewhere: [string, RunBinding][] = [
      ['another run', { projectId: 'checkout', runId: 'run-2' }],
      ['another project', { projectId: 'billing', runId: 'run-1' }],
    ];
    const deviations: string[] = [];
    for (const [kind, binding] of elsewhere) {
      // alice holds every permission on checkout: only the binding refuses her.
      const token = await m.token('acme', 'alice', binding);
      for (const route of routes) {
        const before = await tables(m.h.db);
        const res = await send(route, token);
        const type = problemType(await res.text());
        if (
          res.status !== 403 ||
          type !== 'urn:sandlot:problem:run-binding-required' ||
          res.headers.get('content-type') !== 'application/problem+json'
        ) {
          deviations.push(`${route.name} bound to ${kind}: ${res.status} ${type}`);
        }
        if ((await tables(m.h.db)) !== before)
          deviations.push(`${route.name} bound to ${kind}: rows changed`);
      }
    }
    expect(deviations).toEqual([]);
  });

  it("refuses a step naming the token's run with another run's Environment, and changes nothing", async () => {
    const token = await m.token('acme', 'alice', { projectId: 'checkout', runId: 'run-2' });
    const deviations: string[] = [];
    for (const route of routes.filter((r) => r.path(m.s, m.operationId).startsWith('/internal/'))) {
      // The body names run-2, as the token does, but the Environment is run-1's.
      const body = route.body?.(m.s, m.operationId) as { operation: { ref: { runId: string } } };
      body.operation.ref.runId = 'run-2';
      const before = await tables(m.h.db);
      const res = await m.h.request(route.method, route.path(m.s, m.operationId), { token, body });
      const type = problemType(await res.text());
      if (res.status !== 404 || type !== 'urn:sandlot:problem:environment-not-found') {
        deviations.push(`${route.name}: ${res.status} ${type}`);
      }
      if ((await tables(m.h.db)) !== before) deviations.push(`${route.name}: rows changed`);
    }
    expect(deviations).toEqual([]);
  });

  it.runIf(name === 'embedded')(
    "refuses a run-bound operator token on another project's or run's admin routes",
    async () => {
      const operator = await m.h.token('acme', 'ops', { operator: true, runBinding: thisRun });
      const policy = { policy: { egress: [] } };
      const before = await tables(m.h.db);
      const answers = [];
      for (const [path, body] of [
        ['/admin/tenants/acme/projects/billing/network-policies/5', policy],
        ['/admin/tenants/globex/projects/checkout/network-policies/5', policy],
        ['/admin/tenants/acme/projects/checkout/runs/run-2/selection', { candidates: [] }],
      ] as const) {
        const res = await m.h.request('PUT', path, { token: operator, body });
        answers.push(`${res.status} ${problemType(await res.text())}`);
      }
      expect(answers).toEqual(Array(3).fill('403 urn:sandlot:problem:run-binding-required'));
      expect(await tables(m.h.db)).toBe(before);
    },
  );

  it('answers a token bound to this run as an unbound one', async () => {
    const unbound = await m.token('acme', 'alice');
    const bound = await m.token('acme', 'alice', thisRun);
    // The project's list would show other runs: a bound token lists its own run only.
    const reads = routes.filter(
      (r) => r.method === 'GET' && r.bound === undefined && r.name !== 'list project',
    );
    const projectList = routes.find((r) => r.name === 'list project')!;
    const refused = await send(projectList, bound);
    expect(refused.status).toBe(403);
    expect(problemType(await refused.text())).toBe('urn:sandlot:problem:run-binding-required');
    const statuses = async (token: string) => {
      const seen: string[] = [];
      for (const r of reads) seen.push(`${r.name}: ${(await send(r, token)).status}`);
      return seen;
    };
    expect(await statuses(bound)).toEqual(await statuses(unbound));
    expect(await statuses(bound)).toContain('lifecycle: 200');
  });
});
