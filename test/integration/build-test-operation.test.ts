// A BuildTest operation end to end in embedded mode, over the HTTP routes, real PostgreSQL and the
// simulated provider's command and collector Pods (a real Git bundle as the version 2 seed): the
// caller names a checkpoint and the binding it expects; the command Core accepted runs once; the
// capture is exactly the sealed document; the Core-verified acknowledgment is saved once, then the
// exact Pods are deleted and the capture is gone (410). A lease keeps the AcceptedBuildTestProfile
// it accepted: a process whose profile changed runs operations on an old lease under the old one.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AcceptedBuildTestCommand, JournalAcknowledgment } from '../../actors/ports.ts';
import {
  EmbeddedCore,
  registerAcceptedCommand,
  registerAdmission,
} from '../../actors/build-test/core-embedded.ts';
import { parseDocument } from '../../formats/awscapt2/output-document.ts';
import type { BuildTestRunner } from '../../providers/build-test.ts';
import { collectCapture } from '../../lib/capture-stream.ts';
import { SimulatedBuildTestRunner } from '../../providers/simulated/build-test-runner.ts';
import { recordBuildTestStep, readBuildTestOperation } from '../../store/build-test-operations.ts';
import { sha256 } from '../support/build-test-commands.ts';
import { embeddedWorker, loadedProfile, profileDocument } from '../support/build-test-profile.ts';
import { isolatedPostgres, type IsolatedPostgres } from '../support/databases.ts';
import { gitSeed, type GitSeed } from '../support/git-seed.ts';
import { acceptVersion2 as acceptScenario } from '../support/build-test-scenario.ts';
import { buildHarness, type Harness } from '../support/harness.ts';
import { json, provisionBody, setupScenario, waitForLease, type Scenario } from '../support/sandbox-flow.ts';
import { eventually } from '../support/sandbox-scenarios.ts';
import { createLogger } from '../../lib/logger.ts';
import { startWorkers } from '../../workers/host.ts';

const profile = loadedProfile();

const checkpoint = (checkpointId: string) => ({
  tenantId: 'acme',
  projectId: 'checkout',
  runId: 'run-1',
  stepId: 'build',
  checkpointId,
});

interface Operation {
  operationId: string;
  state: string;
  step: string | null;
  version: number;
  requestFingerprint: string;
  pods: { command: { uid: string } | null; collector: { uid: string } | null };
  exitCode: number | null;
  capture: { sha256: string; length: number } | null;
  collectorReceipt: Record<string, unknown> | null;
  acknowledgment: Record<string, unknown> | null;
  error: Record<string, unknown> | null;
  cleanedAt: string | null;
  createdAt: string;
  updatedAt: string;
}
interface Result {
  operation: Operation;
  replay: boolean;
}

/**
 * When set, the capture the API reads comes in 256-byte chunks with its last byte changed, and the
 * last chunk only once `lastChunk` opens (the test opens it when the first bytes reached it).
 */
let tamperCapture = false;
let lastChunk = gate();

function gate(): { promise: Promise<void>; resolve: () => void } {
  let resolve = () => {};
  const promise = new Promise<void>((done) => (resolve = done));
  return { promise, resolve };
}

/** The runner, but its captures can be made to lie (a provider that answers other bytes). */
function lyingAboutCaptures(runner: BuildTestRunner): BuildTestRunner {
  async function* tampered(source: AsyncIterable<Uint8Array>) {
    const whole = await collectCapture(source);
    whole[whole.length - 1] = (whole[whole.length - 1] ?? 0) ^ 0xff;
    for (let at = 0; at < whole.length; at += 256) {
      if (at + 256 >= whole.length) await lastChunk.promise;
      yield whole.subarray(at, at + 256);
    }
  }
  return {
    startCommand: (...a) => runner.startCommand(...a),
    observeCommand: (...a) => runner.observeCommand(...a),
    startCollector: (...a) => runner.startCollector(...a),
    observeCollector: (...a) => runner.observeCollector(...a),
    readCapture: async (...a) => {
      const stream = await runner.readCapture(...a);
      return tamperCapture ? tampered(stream) : stream;
    },
    deletePods: (...a) => runner.deletePods(...a),
  };
}

describe('a BuildTest operation (embedded mode, simulated Pods)', () => {
  let pg: IsolatedPostgres;
  let h: Harness;
  let s: Scenario;
  let runner: SimulatedBuildTestRunner;
  let stateDir: string;
  let seed: GitSeed;

  beforeEach(async () => {
    pg = await isolatedPostgres();
    const db = pg.open();
    stateDir = await mkdtemp(join(tmpdir(), 'sandlot-bt-op-'));
    runner = new SimulatedBuildTestRunner({ db, stateDir });
    tamperCapture = false;
    lastChunk = gate();
    const core = new EmbeddedCore(db);
    h = await buildHarness(db, {
      workers: { callTimeoutMs: 5_000 },
      buildTest: {
        offer: { profile, core, runner: lyingAboutCaptures(runner) },
        worker: embeddedWorker(runner, core),
      },
    });
    s = await setupScenario(h);
    await h.request('POST', `${s.base}/sandbox/provision`, { token: s.token, body: provisionBody(s) });
    await waitForLease(h, s, (l) => l['state'] === 'Active');
    seed = await gitSeed({ 'README.md': '# app\n', 'src/index.js': 'console.log(1);\n' });
  });
  afterEach(async () => {
    await h.close();
    await pg.drop();
    await rm(stateDir, { recursive: true, force: true });
  });

  const commands = () => `${s.base}/sandbox/build-test/commands`;

  async function binding() {
    const res = await h.request(
      'GET',
      `${s.base}/sandbox/build-test/binding-preparation?sessionId=session-1&executionProfileReference=build-v2`,
      { token: s.token },
    );
    expect(res.status).toBe(200);
    return (await json<{ binding: Record<string, unknown> }>(res)).binding;
  }

  const acceptVersion2 = (checkpointId: string, outputs: string[]) =>
    acceptScenario(h.db, checkpoint(checkpointId), seed, outputs);

  async function acceptVersion1(checkpointId: string): Promise<AcceptedBuildTestCommand> {
    const command: AcceptedBuildTestCommand = {
      checkpoint: checkpoint(checkpointId),
      operationId: `op-${checkpointId}`,
      selectionHash: 'a'.repeat(64),
      version: 1,
      command: { executable: '/usr/bin/make', args: ['test'] },
      options: {
        workingDirectory: '.',
        environment: {},
        timeoutSeconds: 600,
        outputs: ['reports/junit.xml'],
      },
    };
    expect(await registerAcceptedCommand(h.db, command, 'test')).toBe('created');
    return command;
  }

  const create = async (checkpointId: string) =>
    h.request('POST', commands(), {
      token: s.token,
      body: { checkpoint: checkpoint(checkpointId), expectedBinding: await binding() },
    });

  const read = async (operationId: string) => {
    const res = await h.request('GET', `${commands()}/${operationId}`, { token: s.token });
    expect(res.status).toBe(200);
    return json<Result>(res);
  };

  const settled = (operationId: string, state = 'Succeeded') =>
    eventually(`operation ${operationId} ${state}`, async () => {
      const { operation } = await read(operationId);
      return operation.state === state && operation.step === null ? operation : undefined;
    });

  function acknowledgmentOf(command: AcceptedBuildTestCommand, op: Operation): JournalAcknowledgment {
    if (op.capture === null || op.pods.command === null || op.pods.collector === null)
      throw new Error('no capture');
    return {
      checkpoint: command.checkpoint,
      operationId: command.operationId,
      journalPosition: 7,
      recordSha256: 'd'.repeat(64),
      objectReference: `source-control://captures/${command.operationId}`,
      capture: {
        sha256: op.capture.sha256,
        length: op.capture.length,
        requestFingerprint: op.requestFingerprint,
        collectorPodUid: op.pods.collector.uid,
        commandPodUid: op.pods.command.uid,
      },
    };
  }

  it('streams the capture, and cuts the connection when the bytes turn out not to be the sealed ones', async () => {
    await acceptVersion2('cp-lie', ['dist/app.js']);
    expect((await create('cp-lie')).status).toBe(202);
    const done = await settled('op-cp-lie');
    const length = done.capture?.length ?? 0;
    expect(length).toBeGreaterThan(512);
    tamperCapture = true;
    const server = serve({ fetch: h.fetch, port: 0, hostname: '127.0.0.1' }) as http.Server;
    await new Promise((resolve) => server.once('listening', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const path = `${commands()}/op-cp-lie/workspace-capture`;
      const answer = await new Promise<{ status: number; declared: string; got: number; cut: boolean }>(
        (resolve, reject) => {
          const req = http.get(
            { host: '127.0.0.1', port, path, headers: { authorization: `Bearer ${s.token}` } },
            (res) => {
              let got = 0;
              const end = (cut: boolean) =>
                resolve({
                  status: res.statusCode ?? 0,
                  declared: String(res.headers['content-length']),
                  got,
                  cut,
                });
              res.on('data', (chunk: Buffer) => {
                // Bytes arrive while the provider is still answering: the capture streams.
                got += chunk.length;
                lastChunk.resolve();
              });
              res.on('end', () => end(!res.complete));
              res.on('error', () => end(true));
              res.on('aborted', () => end(true));
            },
          );
          req.on('error', reject);
        },
      );
      // The answer began (200, the exact length declared), but ended before its last chunk.
      expect(answer).toMatchObject({ status: 200, declared: String(length), cut: true });
      expect(answer.got).toBeLessThan(length);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
    // Read honestly again, the capture is whole: nothing was changed by the failed read.
    tamperCapture = false;
    const again = await h.request('GET', `${commands()}/op-cp-lie/workspace-capture`, { token: s.token });
    expect(sha256(Buffer.from(await again.arrayBuffer()))).toBe(done.capture?.sha256);
  });

  it('version 2: runs once, captures the exact sealed document, acknowledges once, cleans up', async () => {
    const command = await acceptVersion2('cp-v2', ['dist/app.js']);
    const created = await create('cp-v2');
    expect(created.status).toBe(202);
    expect(created.headers.get('cache-control')).toBe('no-store');
    const first = await json<Result>(created);
    expect(first).toMatchObject({ replay: false, operation: { operationId: 'op-cp-v2', version: 2 } });

    const done = await settled('op-cp-v2');
    expect(done).toMatchObject({ exitCode: 0, collectorReceipt: expect.any(Object) as unknown });
    // Timestamps are PostgreSQL's, at microsecond precision.
    expect(done.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);

    // The same request again: the same operation, a replay.
    const again = await create('cp-v2');
    expect(again.status).toBe(200);
    expect(await json<Result>(again)).toMatchObject({ replay: true, operation: { operationId: 'op-cp-v2' } });

    const capture = await h.request('GET', `${commands()}/op-cp-v2/workspace-capture`, { token: s.token });
    expect(capture.status).toBe(200);
    expect(capture.headers.get('content-type')).toBe('application/octet-stream');
    expect(capture.headers.get('cache-control')).toBe('no-store');
    expect(capture.headers.get('content-length')).toBe(String(done.capture?.length));
    const bytes = Buffer.from(await capture.arrayBuffer());
    expect({ sha256: sha256(bytes), length: bytes.length }).toEqual(done.capture);
    expect(capture.headers.get('x-sandlot-capture-sha256')).toBe(done.capture?.sha256);
    const document = parseDocument(bytes);
    expect(document.manifest.binding).toEqual({
      operationId: 'op-cp-v2',
      checkpointId: 'cp-v2',
      requestFingerprint: done.requestFingerprint,
    });
    expect(document.manifest.files.map((f) => [f.path, f.change])).toEqual([
      ['README.md', 'unchanged'],
      ['dist/app.js', 'added'],
      ['src/index.js', 'unchanged'],
    ]);

    // An acknowledgment Core does not vouch for is refused, and nothing changes.
    const ack = acknowledgmentOf(command, done);
    // The acknowledgment travels with the original command request.
    const original = { checkpoint: checkpoint('cp-v2'), expectedBinding: await binding() };
    const unverified = await h.request('POST', `${commands()}/op-cp-v2/workspace-capture/acknowledge`, {
      token: s.token,
      body: { request: original, acknowledgment: ack },
    });
    expect(unverified.status).toBe(409);
    expect((await read('op-cp-v2')).operation.acknowledgment).toBeNull();

    expect(await registerAdmission(h.db, ack, 'events')).toBe('created');
    // Another request than the operation's original is refused, however good the acknowledgment.
    for (const request of [
      { ...original, checkpoint: checkpoint('cp-other') },
      { ...original, expectedBinding: { ...original.expectedBinding, providerFence: 2 } },
    ]) {
      const mismatch = await h.request('POST', `${commands()}/op-cp-v2/workspace-capture/acknowledge`, {
        token: s.token,
        body: { request, acknowledgment: ack },
      });
      expect(mismatch.status).toBe(409);
      expect(await json(mismatch)).toMatchObject({
        type: 'urn:sandlot:problem:build-test-acknowledgment-mismatch',
      });
      expect((await read('op-cp-v2')).operation.acknowledgment).toBeNull();
    }
    const acked = await h.request('POST', `${commands()}/op-cp-v2/workspace-capture/acknowledge`, {
      token: s.token,
      body: { request: original, acknowledgment: ack },
    });
    expect(acked.status).toBe(202);
    const cleaned = await eventually('the Pods deleted', async () => {
      const { operation } = await read('op-cp-v2');
      return operation.cleanedAt === null ? undefined : operation;
    });
    expect(cleaned).toMatchObject({ state: 'Succeeded', acknowledgment: ack, capture: done.capture });
    // A replay keeps the stored acknowledgment; another one is refused.
    const replay = await h.request('POST', `${commands()}/op-cp-v2/workspace-capture/acknowledge`, {
      token: s.token,
      body: { request: original, acknowledgment: ack },
    });
    expect(replay.status).toBe(200);
    expect((await json<Result>(replay)).replay).toBe(true);
    const other = await h.request('POST', `${commands()}/op-cp-v2/workspace-capture/acknowledge`, {
      token: s.token,
      body: { request: original, acknowledgment: { ...ack, journalPosition: 8 } },
    });
    expect(other.status).toBe(409);
    // After acknowledgment the capture is read through Source Control.
    const gone = await h.request('GET', `${commands()}/op-cp-v2/workspace-capture`, { token: s.token });
    expect(gone.status).toBe(410);
    expect(((await gone.json()) as { detail: string }).detail).toContain(ack.objectReference);
    const { rows } = await h.db.query<{ n: string }>(
      `SELECT count(*) AS n FROM simulated_build_test_pods WHERE operation_id = 'op-cp-v2' AND role = 'command'`,
    );
    expect(Number(rows[0]?.n)).toBe(1);
  });

  it('version 1: the declared outputs are collected as evidence; there is no document to read', async () => {
    await acceptVersion1('cp-v1');
    expect((await create('cp-v1')).status).toBe(202);
    const done = await settled('op-cp-v1');
    expect(done.collectorReceipt).toMatchObject({
      version: 1,
      outputs: [expect.objectContaining({ path: 'reports/junit.xml' })],
      capture: null,
    });
    const capture = await h.request('GET', `${commands()}/op-cp-v1/workspace-capture`, { token: s.token });
    expect(capture.status).toBe(409);
  });

  it('a command that exits non-zero fails, and no collector Pod is ever started', async () => {
    await acceptVersion2('cp-fail', []);
    runner.setPlan('op-cp-fail', { exitCode: 2 });
    expect((await create('cp-fail')).status).toBe(202);
    const done = await settled('op-cp-fail', 'Failed');
    expect(done).toMatchObject({ exitCode: 2, pods: { collector: null } });
  });

  it("refuses another Environment's operation with 409: Core's operation ID is one Environment's", async () => {
    await acceptVersion2('cp-shared', []);
    expect((await create('cp-shared')).status).toBe(202);
    const other = await setupScenario(h, { key: 'env-2' });
    await h.request('POST', `${other.base}/sandbox/provision`, {
      token: other.token,
      body: provisionBody(other),
    });
    await waitForLease(h, other, (l) => l['state'] === 'Active');
    const prepared = await h.request(
      'GET',
      `${other.base}/sandbox/build-test/binding-preparation?sessionId=s&executionProfileReference=p`,
      { token: other.token },
    );
    const { binding: otherBinding } = await json<{ binding: Record<string, unknown> }>(prepared);
    const taken = await h.request('POST', `${other.base}/sandbox/build-test/commands`, {
      token: other.token,
      body: { checkpoint: checkpoint('cp-shared'), expectedBinding: otherBinding },
    });
    expect(taken.status).toBe(409);
    expect(((await taken.json()) as { type: string }).type).toContain('build-test-operation-conflict');
    expect(await readBuildTestOperation(h.db, other.environmentId, 'op-cp-shared')).toBeNull();
  });

  it('refuses a caller-supplied command, another binding, another run: nothing is reserved', async () => {
    await acceptVersion2('cp-refused', []);
    const expectedBinding = await binding();
    const withCommand = await h.request('POST', commands(), {
      token: s.token,
      body: {
        checkpoint: checkpoint('cp-refused'),
        expectedBinding,
        command: { executable: '/bin/sh', args: ['-c', 'curl evil'] },
      },
    });
    expect(withCommand.status).toBe(400);
    const staleBinding = await h.request('POST', commands(), {
      token: s.token,
      body: {
        checkpoint: checkpoint('cp-refused'),
        expectedBinding: { ...expectedBinding, providerFence: 9 },
      },
    });
    expect(staleBinding.status).toBe(409);
    expect(((await staleBinding.json()) as { type: string }).type).toContain('build-test-binding-mismatch');
    const otherRun = await h.request('POST', commands(), {
      token: s.token,
      body: { checkpoint: { ...checkpoint('cp-refused'), runId: 'run-2' }, expectedBinding },
    });
    expect(otherRun.status).toBe(422);
    expect(await readBuildTestOperation(h.db, s.environmentId, 'op-cp-refused')).toBeNull();
  });

  it('refuses a token bound to another run: no command.reserve is journaled, no outbox row written', async () => {
    await acceptVersion2('cp-bound', []);
    const written = async () =>
      (
        await h.db.query<{ journal: number; outbox: number }>(
          `SELECT (SELECT count(*)::int FROM environment_journal WHERE environment_id = $1) AS journal,
                  (SELECT count(*)::int FROM outbox WHERE environment_id = $1) AS outbox`,
          [s.environmentId],
        )
      ).rows[0];
    const before = await written();
    const elsewhere = await h.token('acme', 'alice', {
      runBinding: { projectId: 'checkout', runId: 'run-2' },
    });
    const res = await h.request('POST', commands(), {
      token: elsewhere,
      body: { checkpoint: checkpoint('cp-bound'), expectedBinding: await binding() },
    });
    expect(res.status).toBe(403);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(await json(res)).toMatchObject({ type: 'urn:sandlot:problem:run-binding-required' });
    expect(await written()).toEqual(before);
    expect(await readBuildTestOperation(h.db, s.environmentId, 'op-cp-bound')).toBeNull();
  });

  it('a command still running at the deadline is looked at again (reconcile or reconciler): the same Pod, never a second', async () => {
    await acceptVersion2('cp-slow', []);
    runner.setPlan('op-cp-slow', { durationMs: 7_000 });
    expect((await create('cp-slow')).status).toBe(202);
    const running = await eventually('the first look to end', async () => {
      const { operation } = await read('op-cp-slow');
      return operation.pods.command !== null && operation.state === 'Running' ? operation : undefined;
    });
    const reconcileBody = { checkpoint: checkpoint('cp-slow'), expectedBinding: await binding() };
    // A reconcile naming another checkpoint is refused.
    const mismatch = await h.request('POST', `${commands()}/op-cp-slow/reconcile`, {
      token: s.token,
      body: { ...reconcileBody, checkpoint: checkpoint('cp-other') },
    });
    expect(mismatch.status).toBe(409);
    // The caller may reconcile (202: reopened; 200: the reconciler had reopened it already): either
    // way the same step, the same Pod.
    const reconciled = await h.request('POST', `${commands()}/op-cp-slow/reconcile`, {
      token: s.token,
      body: reconcileBody,
    });
    expect([200, 202]).toContain(reconciled.status);
    const done = await settled('op-cp-slow');
    expect(done.pods.command?.uid).toBe(running.pods.command?.uid);
    const { rows } = await h.db.query<{ n: string }>(
      `SELECT count(*) AS n FROM simulated_build_test_pods WHERE operation_id = 'op-cp-slow' AND role = 'command'`,
    );
    expect(Number(rows[0]?.n)).toBe(1);
  });

  it('a recorded command Pod that vanished ends the operation Interrupted: it is never started again', async () => {
    await acceptVersion2('cp-vanish', []);
    runner.setPlan('op-cp-vanish', { durationMs: 30_000 });
    expect((await create('cp-vanish')).status).toBe(202);
    const running = await eventually('the command Pod recorded', async () => {
      const { operation } = await read('op-cp-vanish');
      return operation.pods.command !== null && operation.state === 'Running' ? operation : undefined;
    });
    // Someone deletes the command Pod (the simulated cluster's row of it).
    await h.db.query(
      `DELETE FROM simulated_build_test_pods WHERE operation_id = 'op-cp-vanish' AND role = 'command'`,
    );
    const reconciled = await h.request('POST', `${commands()}/op-cp-vanish/reconcile`, {
      token: s.token,
      body: { checkpoint: checkpoint('cp-vanish'), expectedBinding: await binding() },
    });
    expect([200, 202]).toContain(reconciled.status);
    const done = await settled('op-cp-vanish', 'Interrupted');
    expect(done.error).toMatchObject({ code: 'command-pod-vanished' });
    expect(done.pods.command?.uid).toBe(running.pods.command?.uid);
    const { rows } = await h.db.query<{ n: string }>(
      `SELECT count(*) AS n FROM simulated_build_test_pods WHERE operation_id = 'op-cp-vanish' AND role = 'command'`,
    );
    expect(Number(rows[0]?.n)).toBe(0);
  });

  it('workers stopped mid-command: new workers (and a new runner) resume the same Pod, and capture once', async () => {
    await acceptVersion2('cp-restart', ['dist/app.js']);
    runner.setPlan('op-cp-restart', { durationMs: 1_500, write: { 'dist/app.js': 'built\n' } });
    expect((await create('cp-restart')).status).toBe(202);
    await eventually('the command Pod to start', async () => {
      const { rows } = await h.db.query(
        `SELECT 1 FROM simulated_build_test_pods WHERE operation_id = 'op-cp-restart'`,
      );
      return rows.length > 0 ? true : undefined;
    });
    // The workers stop while the command runs; the new ones and the new runner have only the rows.
    await h.workers?.close();
    const restarted = new SimulatedBuildTestRunner({ db: h.db, stateDir });
    const core = new EmbeddedCore(h.db);
    const workers = await startWorkers(
      {
        db: h.db,
        runtime: h.runtime,
        provider: h.provider,
        logger: createLogger({ level: 'silent' }),
        networkPolicies: h.networkPolicies,
        authority: h.authority,
        selections: h.selections,
        buildTest: embeddedWorker(restarted, core),
      },
      { reconcileEveryMs: 200, republishAfterMs: 500, relayPollMs: 100, callTimeoutMs: 5_000 },
    );
    try {
      const done = await settled('op-cp-restart');
      const { rows } = await h.db.query<{ role: string; n: string }>(
        `SELECT role, count(*) AS n FROM simulated_build_test_pods WHERE operation_id = 'op-cp-restart'
          GROUP BY role ORDER BY role`,
      );
      expect(rows.map((r) => [r.role, Number(r.n)])).toEqual([
        ['collector', 1],
        ['command', 1],
      ]);
      const capture = await h.request('GET', `${commands()}/op-cp-restart/workspace-capture`, {
        token: s.token,
      });
      const bytes = Buffer.from(await capture.arrayBuffer());
      expect({ sha256: sha256(bytes), length: bytes.length }).toEqual(done.capture);
    } finally {
      await workers.close();
    }
  });

  it('an operation is read under the current Sandbox binding: once its lease is released, 409', async () => {
    await acceptVersion2('cp-read', []);
    expect((await create('cp-read')).status).toBe(202);
    await settled('op-cp-read');
    const lease = await waitForLease(h, s, (l) => l['state'] === 'Active');
    const abandoned = await h.request('POST', `${s.base}/sandbox/abandon`, {
      token: s.token,
      body: {
        resourceGeneration: lease['resourceGeneration'],
        providerFence: lease['providerFence'],
        idempotencyKey: 'abandon-read',
      },
    });
    expect(abandoned.status).toBe(202);
    await waitForLease(h, s, (l) => l['state'] === 'Released');
    const res = await h.request('GET', `${commands()}/op-cp-read`, { token: s.token });
    expect(res.status).toBe(409);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect((await json<{ type: string }>(res)).type).toBe('urn:sandlot:problem:build-test-no-active-lease');
    // The list is a record read: it still shows the operation of the released lease.
    const listed = await h.request('GET', commands(), { token: s.token });
    expect(listed.status).toBe(200);
    expect(listed.headers.get('cache-control')).toBe('no-store');
    const { operations } = await json<{ operations: Operation[] }>(listed);
    expect(operations.map((o) => [o.operationId, o.state])).toEqual([['op-cp-read', 'Succeeded']]);
  });

  it("lists the Environment's operations newest first, and nothing of another Environment", async () => {
    const list = async (base = s.base) => {
      const res = await h.request('GET', `${base}/sandbox/build-test/commands`, { token: s.token });
      expect(res.status).toBe(200);
      return (await json<{ operations: Operation[] }>(res)).operations.map((o) => o.operationId);
    };
    expect(await list()).toEqual([]);
    await acceptVersion2('cp-a', []);
    expect((await create('cp-a')).status).toBe(202);
    await settled('op-cp-a');
    await acceptVersion2('cp-b', []);
    expect((await create('cp-b')).status).toBe(202);
    await settled('op-cp-b');
    expect(await list()).toEqual(['op-cp-b', 'op-cp-a']);
    const missing = await h.request(
      'GET',
      `${s.base.replace(/[^/]+$/, 'env_' + 'a'.repeat(32))}/sandbox/build-test/commands`,
      {
        token: s.token,
      },
    );
    expect(missing.status).toBe(404);
  });

  it('a terminal operation keeps its status, Pods and evidence against an identical or changed save', async () => {
    await acceptVersion2('cp-final', []);
    expect((await create('cp-final')).status).toBe(202);
    const done = await settled('op-cp-final');
    const before = await readBuildTestOperation(h.db, s.environmentId, 'op-cp-final');
    await recordBuildTestStep(h.db, s.environmentId, 'op-cp-final', 'Failed', 'collect', {
      exitCode: 3,
      commandPod: { role: 'command', name: 'other', uid: 'other' },
      capture: { sha256: 'f'.repeat(64), length: 1 },
    });
    const after = await readBuildTestOperation(h.db, s.environmentId, 'op-cp-final');
    expect(after).toEqual(before);
    expect(after?.capture).toEqual(done.capture);
  });
  it('a lease keeps the profile it accepted: after the profile changes, its operations still run under it; a new lease gets the new one', async () => {
    const leaseProfile = async (environmentId: string) =>
      (
        await h.db.query<{ profile: unknown }>(
          `SELECT build_test_profile AS profile FROM sandbox_leases WHERE environment_id = $1`,
          [environmentId],
        )
      ).rows.map((r) => r.profile);
    // Lease 1 was reserved under profile A (npm and make; versions 1 and 2): it recorded all of it.
    expect(await leaseProfile(s.environmentId)).toEqual([profileDocument()]);

    // The profile file changes to B (make only, version 1 only) and the process restarts: new
    // workers and API over the same database. They record which profile each Pod was started under.
    const changed = loadedProfile(profileDocument(['/usr/bin/make'], ['v1']));
    expect(changed.hash).not.toBe(profile.hash);
    await h.workers?.close();
    const startedUnder: string[] = [];
    const recording: BuildTestRunner = {
      startCommand: (request, options) => {
        startedUnder.push(request.profile.hash);
        return runner.startCommand(request, options);
      },
      observeCommand: (...a) => runner.observeCommand(...a),
      startCollector: (request, options) => {
        startedUnder.push(request.profile.hash);
        return runner.startCollector(request, options);
      },
      observeCollector: (...a) => runner.observeCollector(...a),
      readCapture: (...a) => runner.readCapture(...a),
      deletePods: (...a) => runner.deletePods(...a),
    };
    const core = new EmbeddedCore(h.db);
    const restarted = await buildHarness(h.db, {
      migrated: true,
      workers: { callTimeoutMs: 5_000 },
      buildTest: {
        offer: { profile: changed, core, runner: recording },
        worker: embeddedWorker(recording, core),
      },
    });
    try {
      const token = await restarted.token('acme', 'alice');
      const prepare = async (base: string) => {
        const res = await restarted.request(
          'GET',
          `${base}/sandbox/build-test/binding-preparation?sessionId=s&executionProfileReference=p`,
          { token },
        );
        return { status: res.status, body: await json<Record<string, unknown>>(res) };
      };
      const createOn = async (base: string, checkpointId: string) =>
        restarted.request('POST', `${base}/sandbox/build-test/commands`, {
          token,
          body: {
            checkpoint: checkpoint(checkpointId),
            expectedBinding: (await prepare(base)).body['binding'],
          },
        });
      const settledOn = (base: string, operationId: string) =>
        eventually(`operation ${operationId} settled`, async () => {
          const res = await restarted.request('GET', `${base}/sandbox/build-test/commands/${operationId}`, {
            token,
          });
          const { operation } = await json<{ operation: Operation & { profileHash: string } }>(res);
          return operation.step === null && operation.state !== 'Running' ? operation : undefined;
        });

      // The old lease: binding preparation answers A, and a version 2 npm command (which B would
      // refuse) is admitted, recorded under A's hash and run with A's images and limits.
      expect((await prepare(s.base)).body).toMatchObject({
        profileHash: profile.hash,
        versions: ['v1', 'v2'],
      });
      await acceptVersion2('cp-old-lease', ['dist/app.js']);
      expect((await createOn(s.base, 'cp-old-lease')).status).toBe(202);
      const old = await settledOn(s.base, 'op-cp-old-lease');
      expect(old).toMatchObject({ state: 'Succeeded', exitCode: 0, profileHash: profile.hash });
      // The command Pod and the collector Pod (a repeated start answers the same Pod).
      expect(startedUnder.length).toBeGreaterThanOrEqual(2);
      expect(new Set(startedUnder)).toEqual(new Set([profile.hash]));
      const startsOnOldLease = startedUnder.length;

      // A new lease (another Environment of the run, provisioned now) records B and runs under it.
      const s2 = await setupScenario(restarted, { key: 'env-2' });
      const provisioned = await restarted.request('POST', `${s2.base}/sandbox/provision`, {
        token: s2.token,
        body: provisionBody(s2),
      });
      expect(provisioned.status).toBe(202);
      await waitForLease(restarted, s2, (l) => l['state'] === 'Active');
      expect(await leaseProfile(s2.environmentId)).toEqual([profileDocument(['/usr/bin/make'], ['v1'])]);
      expect((await prepare(s2.base)).body).toMatchObject({ profileHash: changed.hash, versions: ['v1'] });
      await acceptVersion2('cp-new-lease-v2', []);
      const refused = await createOn(s2.base, 'cp-new-lease-v2');
      expect(refused.status).toBe(409);
      expect(((await refused.json()) as { type: string }).type).toContain('build-test-command-not-admitted');
      await acceptVersion1('cp-new-lease-v1');
      expect((await createOn(s2.base, 'cp-new-lease-v1')).status).toBe(202);
      const fresh = await settledOn(s2.base, 'op-cp-new-lease-v1');
      expect(fresh).toMatchObject({ state: 'Succeeded', profileHash: changed.hash });
      expect(startedUnder.length).toBeGreaterThanOrEqual(startsOnOldLease + 2);
      expect(new Set(startedUnder.slice(startsOnOldLease))).toEqual(new Set([changed.hash]));

      // A lease that recorded no profile (reserved while none was configured) runs no BuildTest.
      await h.db.query(`UPDATE sandbox_leases SET build_test_profile = NULL WHERE environment_id = $1`, [
        s.environmentId,
      ]);
      const without = await prepare(s.base);
      expect(without.status).toBe(409);
      expect(without.body['type']).toContain('build-test-lease-without-profile');
    } finally {
      await restarted.close();
    }
  });
});
