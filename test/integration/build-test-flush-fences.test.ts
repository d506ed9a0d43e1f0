// BuildTest and the Workspace flush hold each other's fence, over the HTTP routes in embedded mode
// (real PostgreSQL, the simulated command Pods, the embedded Host): once a suspend's flush verified
// and moved the volume's data generation, the lease offers no binding and a command named with the
// binding read before the flush is refused, with nothing reserved and no Pod; while a command runs,
// no flush is reserved and the volume stays where it was; once it is terminal, the flush goes ahead.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddedCore } from '../../actors/build-test/core-embedded.ts';
import { SimulatedBuildTestRunner } from '../../providers/simulated/build-test-runner.ts';
import { listBuildTestPods } from '../../store/simulated-build-test-pods.ts';
import { readVolume } from '../../store/workspaces.ts';
import { embeddedWorker, loadedProfile } from '../support/build-test-profile.ts';
import { acceptVersion2 } from '../support/build-test-scenario.ts';
import { gitSeed, type GitSeed } from '../support/git-seed.ts';
import type { Harness } from '../support/harness.ts';
import { json } from '../support/sandbox-flow.ts';
import { eventually } from '../support/sandbox-scenarios.ts';
import {
  activeSandbox,
  coreSuspends,
  flushBodyOf,
  flushVerified,
  openSuspendBackend,
  type ActiveSandbox,
  type SuspendBackend,
} from '../support/suspend-flow.ts';

let backend: SuspendBackend;
let h: Harness;
let runner: SimulatedBuildTestRunner;
let podDir: string;
let seed: GitSeed;
let runs = 0;
// The clock the simulated commands' durations are measured by: a test moves it past a command's end.
let skippedMs = 0;

beforeAll(async () => {
  podDir = await mkdtemp(join(tmpdir(), 'sandlot-bt-fences-'));
  backend = await openSuspendBackend((db) => {
    runner = new SimulatedBuildTestRunner({ db, stateDir: podDir, now: () => Date.now() + skippedMs });
    const core = new EmbeddedCore(db);
    return {
      workers: { callTimeoutMs: 5_000 },
      buildTest: { offer: { profile: loadedProfile(), core, runner }, worker: embeddedWorker(runner, core) },
    };
  });
  h = backend.h;
  seed = await gitSeed({ 'README.md': '# app\n' });
}, 120_000);
afterAll(async () => {
  await backend.close();
  await rm(podDir, { recursive: true, force: true });
});

const checkpointOf = (sandbox: ActiveSandbox, checkpointId: string) => ({
  tenantId: 'acme',
  projectId: sandbox.project,
  runId: sandbox.run,
  stepId: 'build',
  checkpointId,
});
const bt = (sandbox: ActiveSandbox) => `${sandbox.s.base}/sandbox/build-test`;
const bindingOf = (sandbox: ActiveSandbox) =>
  h.request(
    'GET',
    `${bt(sandbox)}/binding-preparation?sessionId=session-1&executionProfileReference=build-v2`,
    { token: sandbox.s.token },
  );
const create = (sandbox: ActiveSandbox, checkpointId: string, expectedBinding: unknown) =>
  h.request('POST', `${bt(sandbox)}/commands`, {
    token: sandbox.s.token,
    body: { checkpoint: checkpointOf(sandbox, checkpointId), expectedBinding },
  });
const flush = (sandbox: ActiveSandbox, body: unknown) =>
  h.request('POST', `${sandbox.s.base}/workspace-volumes/${sandbox.volume.volumeId}/flush`, {
    token: sandbox.s.token,
    body,
  });

async function problemOf(res: Response, status: number, code: string) {
  expect(res.headers.get('content-type')).toBe('application/problem+json');
  const body = (await res.json()) as { type: string; detail: string };
  expect({ status: res.status, type: body.type }).toEqual({ status, type: `urn:sandlot:problem:${code}` });
  return body;
}

const rowsOf = async (table: string, sandbox: ActiveSandbox) =>
  (await h.db.query(`SELECT * FROM ${table} WHERE environment_id = $1`, [sandbox.s.environmentId])).rows;
const operationState = async (operationId: string) =>
  (
    await h.db.query<{ state: string }>('SELECT state FROM build_test_operations WHERE operation_id = $1', [
      operationId,
    ])
  ).rows[0]?.state;

describe('BuildTest and the Workspace flush', () => {
  it('after a verified flush the lease offers no binding, and a command with the old one is refused', async () => {
    const sandbox = await activeSandbox(h, `run-fence-${++runs}`);
    const before = await bindingOf(sandbox);
    expect(before.status).toBe(200);
    const { binding } = await json<{ binding: Record<string, unknown> }>(before);
    await acceptVersion2(h.db, checkpointOf(sandbox, 'cp-after-flush'), seed, []);

    const fenced = await coreSuspends(h, sandbox);
    const { volume } = await flushVerified(h, sandbox, fenced);
    expect(volume.dataGeneration).toBe(sandbox.volume.dataGeneration + 1);

    const offered = await problemOf(await bindingOf(sandbox), 409, 'build-test-workspace-unavailable');
    expect(offered.detail).toContain('flushed for suspend');
    await problemOf(
      await create(sandbox, 'cp-after-flush', binding),
      409,
      'build-test-workspace-unavailable',
    );
    expect(await rowsOf('build_test_operations', sandbox)).toEqual([]);
    expect(await listBuildTestPods(h.db, 'op-cp-after-flush')).toEqual([]);
  });

  it('while a command runs no flush is reserved; once it is terminal, the flush goes ahead', async () => {
    const sandbox = await activeSandbox(h, `run-fence-${++runs}`);
    const { binding } = await json<{ binding: Record<string, unknown> }>(await bindingOf(sandbox));
    await acceptVersion2(h.db, checkpointOf(sandbox, 'cp-running'), seed, []);
    runner.setPlan('op-cp-running', { durationMs: 600_000 });
    expect((await create(sandbox, 'cp-running', binding)).status).toBe(202);
    await eventually('the command Pod runs', async () =>
      (await listBuildTestPods(h.db, 'op-cp-running')).some((pod) => pod.state === 'running')
        ? true
        : undefined,
    );

    const fenced = await coreSuspends(h, sandbox);
    const refused = await problemOf(
      await flush(sandbox, flushBodyOf(fenced, sandbox.volume)),
      409,
      'workspace-build-test-running',
    );
    expect(refused.detail).toContain('op-cp-running');
    expect(await rowsOf('workspace_flushes', sandbox)).toEqual([]);
    expect((await readVolume(h.db, sandbox.volume.volumeId))?.dataGeneration).toBe(
      sandbox.volume.dataGeneration,
    );

    // The command ends (its clock passes its duration) and is collected: now the flush may run.
    skippedMs += 600_000;
    // A look still running at its call deadline ends `running`: the caller reconciles (the same Pod).
    const reconciled = await h.request('POST', `${bt(sandbox)}/commands/op-cp-running/reconcile`, {
      token: sandbox.s.token,
      body: { checkpoint: checkpointOf(sandbox, 'cp-running'), expectedBinding: binding },
    });
    expect([200, 202]).toContain(reconciled.status);
    await eventually('the command is terminal', async () =>
      (await operationState('op-cp-running')) === 'Succeeded' ? true : undefined,
    );
    const { volume } = await flushVerified(h, sandbox, fenced);
    expect(volume.dataGeneration).toBe(sandbox.volume.dataGeneration + 1);
  });
});
