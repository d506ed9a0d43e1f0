// The six BuildTest routes' refusals before anything runs: bad input is 400 before anything else;
// then fresh authority for the caller's own Environment (403, 404); then 409
// build-test-unavailable without an AcceptedBuildTestProfile, 501 build-test-not-implemented on a
// provider that cannot run the Pods. Nothing changes, every answer is no-store, and no log line
// ever holds the caller's bearer. The operation itself: test/integration/build-test-operation.test.ts.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddedCore } from '../../actors/build-test/core-embedded.ts';
import { BuildTestService, coreActorOf } from '../../actors/build-test/service.ts';
import { composeSandlot } from '../../cli/compose.ts';
import { checkProfile } from '../../config/build-test-profile.ts';
import { loadConfig } from '../../config/load.ts';
import { PresentedBearer } from '../../http/auth/middleware.ts';
import { createTokenVerifier } from '../../http/auth/verify.ts';
import { createApp } from '../../http/app.ts';
import { createLogger } from '../../lib/logger.ts';
import { openBackend, type BackendHandle } from '../support/databases.ts';
import { audience, buildHarness, issuer, seedProject, type Harness } from '../support/harness.ts';
import { json, setupScenario, type Scenario } from '../support/sandbox-flow.ts';
import { profileDocument as profileDocumentOf } from '../support/build-test-profile.ts';

const digest = (c: string) => c.repeat(64);
const profileDocument = profileDocumentOf(['/usr/bin/make'], ['v2']);

function capture() {
  const chunks: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk.toString('utf8'));
      done();
    },
  });
  return { logger: createLogger({ level: 'debug', destination }), text: () => chunks.join('') };
}

/** A token and each of its three parts, none of which may appear anywhere on its own. */
const tokenParts = (token: string) => [token, ...token.split('.').filter((part) => part.length > 8)];

interface Route {
  name: string;
  method: 'GET' | 'POST';
  path: (s: Scenario, operationId?: string) => string;
  body?: (s: Scenario) => unknown;
}

const checkpoint = {
  tenantId: 'acme',
  projectId: 'checkout',
  runId: 'run-1',
  stepId: 'build',
  checkpointId: 'cp-1',
};
const commandBody = (s: Scenario) => ({
  checkpoint,
  expectedBinding: {
    leaseOperationId: `op_${'a'.repeat(32)}`,
    resourceGeneration: 1,
    providerFence: 1,
    workspace: {
      volumeId: s.volume.volumeId,
      resourceGeneration: s.volume.resourceGeneration,
      dataGeneration: s.volume.dataGeneration,
    },
    networkPolicyGeneration: 1,
  },
});
const acknowledgment = {
  checkpoint,
  operationId: 'op-cp-1',
  journalPosition: 42,
  recordSha256: digest('c'),
  objectReference: 'source-control://captures/op-cp-1',
  capture: {
    sha256: digest('d'),
    length: 2092,
    requestFingerprint: digest('e'),
    collectorPodUid: 'collector-pod-uid',
    commandPodUid: 'command-pod-uid',
  },
};

const bt = (s: Scenario) => `${s.base}/sandbox/build-test`;
const routes: Route[] = [
  {
    name: 'binding-preparation',
    method: 'GET',
    path: (s) => `${bt(s)}/binding-preparation?sessionId=session-1&executionProfileReference=build-v2`,
  },
  { name: 'create', method: 'POST', path: (s) => `${bt(s)}/commands`, body: commandBody },
  { name: 'read', method: 'GET', path: (s, op = 'op-cp-1') => `${bt(s)}/commands/${op}` },
  {
    name: 'reconcile',
    method: 'POST',
    path: (s, op = 'op-cp-1') => `${bt(s)}/commands/${op}/reconcile`,
    body: commandBody,
  },
  {
    name: 'workspace-capture',
    method: 'GET',
    path: (s, op = 'op-cp-1') => `${bt(s)}/commands/${op}/workspace-capture`,
  },
  {
    name: 'acknowledge',
    method: 'POST',
    path: (s, op = 'op-cp-1') => `${bt(s)}/commands/${op}/workspace-capture/acknowledge`,
    body: (s) => ({ request: commandBody(s), acknowledgment }),
  },
];

type Send = (method: string, path: string, options?: { token?: string; body?: unknown }) => Promise<Response>;

describe('BuildTest routes: refusals before anything runs', () => {
  let handle: BackendHandle;
  let h: Harness;
  let s: Scenario;
  const key = new Uint8Array(randomBytes(32));
  const logs = capture();
  /** The same database and services, with a profile configured (embedded Core) and a captured log. */
  let offered: Send;
  /** Without a profile, with a captured log. */
  let unoffered: Send;

  beforeAll(async () => {
    handle = await openBackend('pglite');
    h = await buildHarness(handle.db, { key });
    s = await setupScenario(h);
    // Another tenant with every permission on a project and run of the same names.
    await seedProject(h, { tenant: 'globex', project: 'checkout', run: 'run-1', subject: 'bob' });
    // Reads but may not write.
    await seedProject(h, {
      tenant: 'acme',
      project: 'checkout',
      run: 'run-1',
      subject: 'reader',
      permissions: ['ReadProjects', 'ReadRunSelection'],
    });
    const checked = checkProfile(profileDocument);
    if (!('profile' in checked)) throw new Error(checked.problems.join('; '));
    const appWith = (withProfile: boolean): Send => {
      const app = createApp({
        db: handle.db,
        services: {
          ...h.services,
          // With a profile but no runner: this provider cannot run the Pods (501).
          buildTest: new BuildTestService({
            db: handle.db,
            runtime: h.runtime,
            authority: h.authority,
            selections: h.selections,
            ...(withProfile
              ? {
                  offer: {
                    profile: { ...checked.profile, hash: 'profile-hash' },
                    core: new EmbeddedCore(handle.db),
                  },
                }
              : {}),
          }),
        },
        verifier: createTokenVerifier({ kind: 'hs256', key, issuer, audience }),
        logger: logs.logger,
        provider: h.provider.identity,
        embedded: true,
      });
      return async (method, path, { token, body } = {}) =>
        app.request(path, {
          method,
          headers: {
            ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          },
          ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
        });
    };
    offered = appWith(true);
    unoffered = appWith(false);
  });
  afterAll(async () => {
    await h?.close();
    await handle?.close();
  });

  const send = (via: Send, route: Route, token: string) =>
    via(route.method, route.path(s), {
      token,
      ...(route.body === undefined ? {} : { body: route.body(s) }),
    });

  async function expectProblem(res: Response, status: number, type: string): Promise<void> {
    expect(res.status, await res.clone().text()).toBe(status);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(await res.json()).toMatchObject({ type: `urn:sandlot:problem:${type}`, status });
  }

  async function revision(): Promise<number> {
    const res = await h.request('GET', `${s.base}/lifecycle`, { token: s.token });
    return (await json<{ revision: number }>(res)).revision;
  }

  it.each(routes)(
    '$name answers 409 build-test-unavailable without a profile and changes nothing',
    async (route) => {
      const before = await revision();
      const res = await send(h.request.bind(h), route, s.token);
      await expectProblem(res, 409, 'build-test-unavailable');
      expect(await revision()).toBe(before);
    },
  );

  it.each(routes)(
    '$name answers 501 build-test-not-implemented on a provider without BuildTest Pods',
    async (route) => {
      const before = await revision();
      const res = await send(offered, route, s.token);
      expect(res.status).toBe(501);
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(await res.json()).toEqual({
        type: 'urn:sandlot:problem:build-test-not-implemented',
        title: 'Not implemented',
        status: 501,
        detail:
          'this provider cannot run BuildTest command and collector Pods yet (the simulated provider can)',
        instance: new URL(route.path(s), 'http://x').pathname,
      });
      expect(await revision()).toBe(before);
    },
  );

  it.each(routes)('$name answers 403 to a caller without WriteProjects, profile or not', async (route) => {
    const token = await h.token('acme', 'reader');
    await expectProblem(await send(h.request.bind(h), route, token), 403, 'forbidden');
    await expectProblem(await send(offered, route, token), 403, 'forbidden');
    const stranger = await h.token('acme', 'nobody');
    await expectProblem(await send(offered, route, stranger), 403, 'forbidden');
  });

  it.each(routes)("$name answers 404 for another tenant's Environment, profile or not", async (route) => {
    const token = await h.token('globex', 'bob');
    await expectProblem(await send(h.request.bind(h), route, token), 404, 'environment-not-found');
    await expectProblem(await send(offered, route, token), 404, 'environment-not-found');
  });

  it.each(routes)('$name answers 401 without a token', async (route) => {
    const res = await h.request(route.method, route.path(s), {
      ...(route.body === undefined ? {} : { body: route.body(s) }),
    });
    await expectProblem(res, 401, 'unauthenticated');
  });

  const badInputs: [string, Route, (s: Scenario) => { path?: string; body?: unknown }][] = [
    [
      'create names a command',
      routes[1]!,
      (s) => ({ body: { ...commandBody(s), command: { executable: '/bin/sh' } } }),
    ],
    ['create names an image', routes[1]!, (s) => ({ body: { ...commandBody(s), image: 'evil@sha256:00' } })],
    ['create without an expected binding', routes[1]!, () => ({ body: { checkpoint } })],
    [
      'create with a partial checkpoint',
      routes[1]!,
      (s) => ({ body: { ...commandBody(s), checkpoint: { tenantId: 'acme' } } }),
    ],
    [
      'create with a zero fence',
      routes[1]!,
      (s) => ({
        body: { ...commandBody(s), expectedBinding: { ...commandBody(s).expectedBinding, providerFence: 0 } },
      }),
    ],
    ['create with a body that is not JSON', routes[1]!, () => ({ body: '{"checkpoint":' })],
    ['reconcile with an array body', routes[3]!, () => ({ body: [] })],
    [
      'reconcile with a bad operation ID',
      routes[3]!,
      (s) => ({ path: routes[3]!.path(s, 'op%20id'), body: commandBody(s) }),
    ],
    ['read with a bad operation ID', routes[2]!, (s) => ({ path: routes[2]!.path(s, '.hidden') })],
    ['capture with a bad operation ID', routes[4]!, (s) => ({ path: routes[4]!.path(s, '%00') })],
    [
      'acknowledge at journal position 0',
      routes[5]!,
      (s) => ({
        body: { request: commandBody(s), acknowledgment: { ...acknowledgment, journalPosition: 0 } },
      }),
    ],
    [
      'acknowledge with an unknown field',
      routes[5]!,
      (s) => ({ body: { request: commandBody(s), acknowledgment, extra: true } }),
    ],
    [
      'acknowledge without a capture',
      routes[5]!,
      (s) => ({
        body: { request: commandBody(s), acknowledgment: { ...acknowledgment, capture: undefined } },
      }),
    ],
    [
      'binding-preparation without a session',
      routes[0]!,
      (s) => ({ path: `${bt(s)}/binding-preparation?executionProfileReference=build-v2` }),
    ],
    [
      'binding-preparation with a bad profile reference',
      routes[0]!,
      (s) => ({ path: `${bt(s)}/binding-preparation?sessionId=s-1&executionProfileReference=%00` }),
    ],
  ];

  it.each(badInputs)(
    '%s: 400 before authority or capability, and nothing changes',
    async (_name, route, input) => {
      const before = await revision();
      const { path, body } = input(s);
      const at = path ?? route.path(s);
      // Even a caller who may not write, on an app with a profile, hears about its input first.
      const reader = await h.token('acme', 'reader');
      for (const [via, token] of [
        [h.request.bind(h), s.token],
        [offered, s.token],
        [offered, reader],
      ] as const) {
        const res = await via(route.method, at, { token, ...(body === undefined ? {} : { body }) });
        expect(res.status, await res.clone().text()).toBe(400);
        expect(res.headers.get('content-type')).toBe('application/problem+json');
        expect(res.headers.get('cache-control')).toBe('no-store');
      }
      expect(await revision()).toBe(before);
    },
  );

  it("never writes the caller's bearer to a log line, whatever the answer", async () => {
    const token = await h.token('acme', 'alice');
    const reader = await h.token('acme', 'reader');
    const bob = await h.token('globex', 'bob');
    for (const route of routes) {
      for (const via of [offered, unoffered]) {
        for (const who of [token, reader, bob]) await send(via, route, who);
        const bad = route.method === 'POST' ? { body: '{' } : {};
        await via(route.method, route.path(s, 'op%20id'), { token, ...bad });
      }
    }
    const text = logs.text();
    // The requests were logged (501s as failures), just never with a credential.
    expect(text).toContain('"msg":"request"');
    expect(text).toContain('build-test-not-implemented');
    for (const secret of [token, reader, bob].flatMap(tokenParts)) expect(text).not.toContain(secret);
  });

  it('keeps the bearer out of anything that prints it, yet hands it to a Core call', async () => {
    const token = await h.token('acme', 'alice');
    const exp = decodeJwt(token).exp!;
    const bearer = new PresentedBearer(token, new Date(exp * 1000));
    const actor = coreActorOf({ caller: { tenantId: 'acme', subject: 'alice' }, bearer });
    expect(actor.bearer).toBe(token);
    expect(actor.expiresAt.getTime()).toBe(exp * 1000);
    expect(actor).toMatchObject({ tenantId: 'acme', subject: 'alice' });
    const { inspect } = await import('node:util');
    const printed = [
      JSON.stringify({ bearer, actor }),
      String(bearer),
      inspect(bearer),
      inspect(actor),
      JSON.stringify(Object.entries(actor)),
    ];
    const own = capture();
    own.logger.info({ bearer, actor, nested: { actor } }, 'printed');
    printed.push(own.text());
    for (const text of printed) {
      for (const secret of tokenParts(token)) expect(text).not.toContain(secret);
    }
    expect(own.text()).toContain('[redacted]');
  });
});

describe('BuildTest composition', () => {
  it('offers BuildTest in embedded mode once a profile file is configured (embedded Core)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sandlot-build-test-'));
    try {
      const file = join(dir, 'build-test.json');
      await writeFile(file, JSON.stringify(profileDocument));
      const logger = createLogger({ level: 'silent' });
      const config = loadConfig({
        SANDLOT_DATA_DIR: join(dir, 'data'),
        SANDLOT_BUILDTEST_PROFILE_FILE: file,
      });
      expect(config.buildTestProfile?.hash).toMatch(/^[0-9a-f]{64}$/);
      const sandlot = await composeSandlot(config, logger, { workers: false });
      try {
        expect(sandlot.services.buildTest.offered).toBe(true);
      } finally {
        await sandlot.close();
      }
      const without = await composeSandlot(loadConfig({ SANDLOT_DATA_DIR: join(dir, 'data') }), logger, {
        workers: false,
      });
      try {
        expect(without.services.buildTest.offered).toBe(false);
      } finally {
        await without.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
