// What a BuildTest worker refuses, in embedded mode over HTTP and real PostgreSQL: a collector
// receipt bound to another Pod fails the operation (no capture); a command Core no longer accepts
// fails it before any Pod starts; so does a lease whose network policy generation is no longer
// current; Core unreachable during a step leaves the operation uncertain
// (ReconciliationRequired), and once Core answers again the same operation finishes with one Pod.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CoreUnavailableError } from '../../actors/build-test/core-errors.ts';
import { EmbeddedCore } from '../../actors/build-test/core-embedded.ts';
import type { Core } from '../../actors/ports.ts';
import type { BuildTestRunner } from '../../providers/build-test.ts';
import { SimulatedBuildTestRunner } from '../../providers/simulated/build-test-runner.ts';
import { embeddedWorker, loadedProfile } from '../support/build-test-profile.ts';
import { isolatedPostgres, type IsolatedPostgres } from '../support/databases.ts';
import { gitSeed } from '../support/git-seed.ts';
import { acceptVersion2 } from '../support/build-test-scenario.ts';
import { buildHarness, type Harness } from '../support/harness.ts';
import { json, provisionBody, setupScenario, waitForLease, type Scenario } from '../support/sandbox-flow.ts';
import { eventually } from '../support/sandbox-scenarios.ts';

const profile = loadedProfile();
const checkpoint = {
  tenantId: 'acme',
  projectId: 'checkout',
  runId: 'run-1',
  stepId: 'build',
  checkpointId: 'cp-1',
};

interface Operation {
  state: string;
  step: string | null;
  error: { code?: string } | null;
  pods: { command: { uid: string } | null; collector: { uid: string } | null };
}

describe('BuildTest refusals in the worker', () => {
  let pg: IsolatedPostgres;
  let h: Harness;
  let s: Scenario;
  let stateDir: string;
  let simulated: SimulatedBuildTestRunner;
  let embedded: EmbeddedCore;

  /** A harness whose workers use `runner` and `core` in place of the plain ones. */
  async function start(wrap: {
    runner?: (r: SimulatedBuildTestRunner) => BuildTestRunner;
    core?: (c: EmbeddedCore) => Core;
  }) {
    pg = await isolatedPostgres();
    const db = pg.open();
    stateDir = await mkdtemp(join(tmpdir(), 'sandlot-bt-refusals-'));
    simulated = new SimulatedBuildTestRunner({ db, stateDir });
    embedded = new EmbeddedCore(db);
    const runner = wrap.runner?.(simulated) ?? simulated;
    const core = wrap.core?.(embedded) ?? embedded;
    h = await buildHarness(db, {
      workers: { callTimeoutMs: 5_000 },
      buildTest: {
        offer: { profile, core: embedded, runner: simulated },
        worker: embeddedWorker(runner, core),
      },
    });
    s = await setupScenario(h);
    await h.request('POST', `${s.base}/sandbox/provision`, { token: s.token, body: provisionBody(s) });
    await waitForLease(h, s, (l) => l['state'] === 'Active');
    await acceptVersion2(h.db, checkpoint, await gitSeed({ 'README.md': '# app\n' }), ['dist/app.js']);
  }

  afterEach(async () => {
    await h.close();
    await pg.drop();
    await rm(stateDir, { recursive: true, force: true });
  });

  const commands = () => `${s.base}/sandbox/build-test/commands`;

  async function currentBinding() {
    const prepared = await h.request(
      'GET',
      `${s.base}/sandbox/build-test/binding-preparation?sessionId=s&executionProfileReference=p`,
      { token: s.token },
    );
    return (await json<{ binding: Record<string, unknown> }>(prepared)).binding;
  }

  async function create() {
    const binding = await currentBinding();
    const res = await h.request('POST', commands(), {
      token: s.token,
      body: { checkpoint, expectedBinding: binding },
    });
    expect(res.status).toBe(202);
    return binding;
  }

  const read = async () =>
    (
      await json<{ operation: Operation }>(
        await h.request('GET', `${commands()}/op-cp-1`, { token: s.token }),
      )
    ).operation;

  const commandPods = async () =>
    Number(
      (
        await h.db.query<{ n: string }>(
          `SELECT count(*) AS n FROM simulated_build_test_pods WHERE operation_id = 'op-cp-1' AND role = 'command'`,
        )
      ).rows[0]?.n,
    );

  describe('a collector receipt for another Pod UID', () => {
    beforeEach(() =>
      start({
        runner: (r) => ({
          startCommand: (...a) => r.startCommand(...a),
          observeCommand: (...a) => r.observeCommand(...a),
          startCollector: (...a) => r.startCollector(...a),
          async observeCollector(...a) {
            const seen = await r.observeCollector(...a);
            return seen.state === 'sealed'
              ? { ...seen, receipt: { ...seen.receipt, podUid: 'someone-else' } }
              : seen;
          },
          readCapture: (...a) => r.readCapture(...a),
          deletePods: (...a) => r.deletePods(...a),
        }),
      }),
    );

    it('fails the operation with invalid-receipt, and there is no capture to read', async () => {
      await create();
      const failed = await eventually('the operation to fail', async () => {
        const op = await read();
        return op.state === 'Failed' ? op : undefined;
      });
      expect(failed.error).toMatchObject({ code: 'invalid-receipt' });
      const capture = await h.request('GET', `${commands()}/op-cp-1/workspace-capture`, { token: s.token });
      expect(capture.status).toBe(409);
    });
  });

  describe('a command Core no longer accepts', () => {
    beforeEach(() =>
      start({
        core: (c) => ({
          acceptedCommand: async (actor, ref, signal) => {
            const command = await c.acceptedCommand(actor, ref, signal);
            // The worker asks as sandlot-worker: it sees another command than the one reserved.
            return command === null || actor.subject !== 'sandlot-worker'
              ? command
              : { ...command, command: { ...command.command, args: ['run', 'other'] } };
          },
          workspaceSeed: (...a) => c.workspaceSeed(...a),
          verifyAcknowledgment: (...a) => c.verifyAcknowledgment(...a),
        }),
      }),
    );

    it('fails before any Pod starts', async () => {
      await create();
      const failed = await eventually('the operation to fail', async () => {
        const op = await read();
        return op.state === 'Failed' ? op : undefined;
      });
      expect(failed.error).toMatchObject({ code: 'build-test-command-changed' });
      expect(await commandPods()).toBe(0);
    });
  });

  describe('a lease whose network policy generation is no longer current', () => {
    beforeEach(() => start({}));

    it('starts no Pod: the step fails network-policy-unverified', async () => {
      const binding = await currentBinding();
      const operator = await h.token('acme', 'ops', { operator: true });
      const newer = await h.request('PUT', '/admin/tenants/acme/projects/checkout/network-policies/2', {
        token: operator,
        body: { policy: { egress: [] } },
      });
      expect([200, 201]).toContain(newer.status);
      const created = await h.request('POST', commands(), {
        token: s.token,
        body: { checkpoint, expectedBinding: binding },
      });
      expect(created.status).toBe(202);
      const failed = await eventually('the operation to fail', async () => {
        const op = await read();
        return op.state === 'Failed' ? op : undefined;
      });
      expect(failed.error).toMatchObject({ code: 'network-policy-unverified' });
      expect(await commandPods()).toBe(0);
    });
  });

  describe('Core unreachable during a step', () => {
    let down = true;
    beforeEach(() => {
      down = true;
      return start({
        core: (c) => ({
          acceptedCommand: (...a) => c.acceptedCommand(...a),
          workspaceSeed: async (...a) => {
            if (down) throw new CoreUnavailableError('unreachable', 'connection refused');
            return c.workspaceSeed(...a);
          },
          verifyAcknowledgment: (...a) => c.verifyAcknowledgment(...a),
        }),
      });
    });

    it('leaves the operation uncertain; once Core answers, the same operation finishes with one Pod', async () => {
      const binding = await create();
      await eventually('the step to be uncertain', async () => {
        const op = await read();
        return op.state === 'ReconciliationRequired' ? op : undefined;
      });
      expect(await commandPods()).toBe(0);
      down = false;
      const reconciled = await h.request('POST', `${commands()}/op-cp-1/reconcile`, {
        token: s.token,
        body: { checkpoint, expectedBinding: binding },
      });
      expect([200, 202]).toContain(reconciled.status);
      await eventually('the operation to succeed', async () => {
        const op = await read();
        return op.state === 'Succeeded' && op.step === null ? op : undefined;
      });
      expect(await commandPods()).toBe(1);
    });
  });
});
