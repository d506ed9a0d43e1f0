// A worker's own Core credential (SANDLOT_CORE_TOKEN_FILE) in production mode. The BuildTest offer
// and the worker's deps are exactly what cli/compose.ts builds from a production Config
// (buildTestFor, buildTestWorkerFor): the HTTP Core adapter, the simulated provider's runner, and a
// worker actor carrying the token from the file. They run against a stand-in Core on 127.0.0.1 that
// authenticates every bearer (test/support/core-stand-in.ts), answering from the embedded Core's
// tables. The rest of the stack (token verification, Projects authority, run selection) is the
// harness's embedded one, so the admin routes can set the scenario up; production's versions of
// those are covered by test/integration/auth-matrix.test.ts.
//
// A token Core does not know fails the step with core-denied, recorded on the operation; the file
// rotated to the right token is picked up by the same workers, and the step runs.
import { mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EmbeddedCore } from '../../actors/build-test/core-embedded.ts';
import { buildTestFor, buildTestWorkerFor } from '../../cli/compose.ts';
import { loadConfig } from '../../config/load.ts';
import type { Config } from '../../config/types.ts';
import { HttpCore } from '../../http/clients/core-client.ts';
import { SimulatedBuildTestRunner } from '../../providers/simulated/build-test-runner.ts';
import { profileDocument } from '../support/build-test-profile.ts';
import { startCoreStandIn, type CoreStandIn } from '../support/core-stand-in.ts';
import { isolatedPostgres, type IsolatedPostgres } from '../support/databases.ts';
import { gitSeed } from '../support/git-seed.ts';
import { acceptVersion2 } from '../support/build-test-scenario.ts';
import { buildHarness, type Harness } from '../support/harness.ts';
import { json, provisionBody, setupScenario, waitForLease, type Scenario } from '../support/sandbox-flow.ts';
import { eventually } from '../support/sandbox-scenarios.ts';

/** JWT-shaped (Core would verify it; the worker reads only its exp). */
const WORKER_TOKEN = [
  { alg: 'RS256', typ: 'JWT' },
  { sub: 'system:serviceaccount:sandlot:worker', exp: 4_102_444_800 },
  'signature',
]
  .map((part) => Buffer.from(typeof part === 'string' ? part : JSON.stringify(part)).toString('base64url'))
  .join('.');
const UNKNOWN_TOKEN = 'a-token-core-does-not-know';

const checkpoint = (checkpointId: string) => ({
  tenantId: 'acme',
  projectId: 'checkout',
  runId: 'run-1',
  stepId: 'build',
  checkpointId,
});

interface Operation {
  state: string;
  step: string | null;
  exitCode: number | null;
  error: { code?: string } | null;
  pods: { command: unknown };
}

describe('a worker asks Core with its own token (production mode, HTTP Core)', () => {
  let pg: IsolatedPostgres;
  let dir: string;
  let tokenFile: string;
  let config: Config;
  let core: CoreStandIn;
  let h: Harness;
  let s: Scenario;
  /** Who the stand-in Core knows, by bearer; the caller's token is added once it is minted. */
  let bearers: Record<string, { tenantId: string; subject: string }>;

  beforeEach(async () => {
    pg = await isolatedPostgres();
    const db = pg.open();
    dir = await mkdtemp(join(tmpdir(), 'sandlot-worker-credential-'));
    const profileFile = join(dir, 'build-test.json');
    await writeFile(profileFile, JSON.stringify(profileDocument()));
    tokenFile = join(dir, 'core-token');
    await writeFile(tokenFile, `${UNKNOWN_TOKEN}\n`);
    bearers = { [WORKER_TOKEN]: { tenantId: 'acme', subject: 'sandlot-worker' } };
    core = await startCoreStandIn({ backend: new EmbeddedCore(db), bearers });
    config = loadConfig({
      DATABASE_URL: 'postgres://127.0.0.1/sandlot',
      SANDLOT_JWT_ISSUER: 'https://issuer.example',
      SANDLOT_JWKS_URL: 'https://issuer.example/jwks',
      SANDLOT_PROJECTS_URL: 'https://projects.example',
      SANDLOT_RUN_SELECTION_URL: 'https://selection.example',
      SANDLOT_BUILDTEST_PROFILE_FILE: profileFile,
      SANDLOT_CORE_URL: core.url,
      SANDLOT_CORE_TOKEN_FILE: tokenFile,
    });
    expect(config.mode).toBe('production');
    const composed = buildTestFor(config, db).buildTest;
    expect(composed?.core).toBeInstanceOf(HttpCore);
    expect(composed?.runner).toBeInstanceOf(SimulatedBuildTestRunner);
    // The same offer with the runner's private repositories under this test's directory.
    const offer = { ...composed!, runner: new SimulatedBuildTestRunner({ db, stateDir: join(dir, 'pods') }) };
    const worker = buildTestWorkerFor(offer, config).buildTest!;
    h = await buildHarness(db, {
      workers: { callTimeoutMs: 5_000 },
      buildTest: { offer, worker: { ...worker, pollMs: 50 } },
    });
    s = await setupScenario(h);
    bearers[s.token] = { tenantId: 'acme', subject: 'alice' };
    await h.request('POST', `${s.base}/sandbox/provision`, { token: s.token, body: provisionBody(s) });
    await waitForLease(h, s, (l) => l['state'] === 'Active');
  });
  afterEach(async () => {
    await h.close();
    await core.close();
    await pg.drop();
    await rm(dir, { recursive: true, force: true });
  });

  const commands = () => `${s.base}/sandbox/build-test/commands`;

  const accept = async (checkpointId: string) =>
    acceptVersion2(h.db, checkpoint(checkpointId), await gitSeed({ 'README.md': '# app\n' }));

  async function run(checkpointId: string): Promise<Operation> {
    await accept(checkpointId);
    const prepared = await h.request(
      'GET',
      `${s.base}/sandbox/build-test/binding-preparation?sessionId=s&executionProfileReference=p`,
      { token: s.token },
    );
    const { binding } = await json<{ binding: Record<string, unknown> }>(prepared);
    const created = await h.request('POST', commands(), {
      token: s.token,
      body: { checkpoint: checkpoint(checkpointId), expectedBinding: binding },
    });
    expect(created.status, await created.clone().text()).toBe(202);
    return eventually(`op-${checkpointId} to settle`, async () => {
      const res = await h.request('GET', `${commands()}/op-${checkpointId}`, { token: s.token });
      const { operation } = await json<{ operation: Operation }>(res);
      return operation.step === null && operation.state !== 'Running' ? operation : undefined;
    });
  }

  /** The bearers the stand-in saw on one route, in order. */
  const bearersSeen = (route: string) =>
    core.requests.filter((r) => r.route === route).map((r) => r.headers.authorization);

  it('a token Core does not know fails the step (core-denied); the rotated file is picked up and the step runs', async () => {
    const denied = await run('cp-denied');
    expect(denied).toMatchObject({
      state: 'Failed',
      error: { code: 'core-denied' },
      pods: { command: null },
    });
    // The caller's bearer served the request (the command, then again after the seed transfer);
    // the worker presented the file's token, and only that.
    const caller = `Bearer ${s.token}`;
    expect(bearersSeen('accepted-command')).toEqual([caller, caller, `Bearer ${UNKNOWN_TOKEN}`]);

    // The kubelet rotates a projected token by replacing the file: the same workers read it again.
    await writeFile(tokenFile, `${WORKER_TOKEN}\n`);
    const later = new Date(Date.now() + 5_000);
    await utimes(tokenFile, later, later);
    core.requests.length = 0;
    const done = await run('cp-allowed');
    expect(done).toMatchObject({ state: 'Succeeded', exitCode: 0, error: null });
    const worker = `Bearer ${WORKER_TOKEN}`;
    // The caller resolves and transfers once; every later read (the command step's, the seed and
    // the recheck after it, the collect step's) is the worker's, with its own token.
    const seen = bearersSeen('accepted-command');
    expect(seen.slice(0, 2)).toEqual([caller, caller]);
    expect(seen.length).toBeGreaterThanOrEqual(4);
    expect(new Set(seen.slice(2))).toEqual(new Set([worker]));
    expect(bearersSeen('workspace-seed')).toEqual([caller, worker]);
  });

  it("the worker's CoreActor carries the token, expires at its exp, and prints without it", async () => {
    await writeFile(tokenFile, WORKER_TOKEN);
    const later = new Date(Date.now() + 5_000);
    await utimes(tokenFile, later, later);
    const worker = buildTestWorkerFor(buildTestFor(config, h.db).buildTest, config).buildTest!;
    const actor = worker.workerActor('acme');
    expect(actor).toMatchObject({ tenantId: 'acme', subject: 'sandlot-worker' });
    expect(actor.bearer).toBe(WORKER_TOKEN);
    expect(actor.expiresAt).toEqual(new Date(4_102_444_800_000));
    const parts = WORKER_TOKEN.split('.');
    for (const text of [JSON.stringify(actor), inspect(actor), JSON.stringify(Object.entries(actor))]) {
      for (const secret of [WORKER_TOKEN, parts[1]!, parts[2]!]) expect(text).not.toContain(secret);
    }
  });

  it('production composes no runner without a worker token', () => {
    const withoutToken: Config = { ...config };
    delete withoutToken.coreToken;
    expect(() => buildTestFor(withoutToken, h.db)).toThrow(/SANDLOT_CORE_TOKEN_FILE/);
  });
});
