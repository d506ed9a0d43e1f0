// The simulated BuildTest runner over real PostgreSQL and a real Git bundle: the command Pod prepares
// the repository from the seed with the `git` binary, the collector seals a document that parses,
// and every start is idempotent across runner instances (a second "process" over the same database
// and state directory), never running a command or capturing a tree twice.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseDocument } from '../../formats/awscapt2/output-document.ts';
import type { CollectorReceipt, PodRef } from '../../providers/build-test.ts';
import { ProviderError } from '../../providers/errors.ts';
import {
  SimulatedBuildTestRunner,
  type SimulatedCommandPlan,
} from '../../providers/simulated/build-test-runner.ts';
import { migrateSimulated } from '../../providers/simulated/migrate.ts';
import { SimulatedProvider } from '../../providers/simulated/simulated-provider.ts';
import type { Database } from '../../store/db.ts';
import { findBuildTestPod } from '../../store/simulated-build-test-pods.ts';
import { budget, failureOf } from '../contract/contract-subject.ts';
import { sha256 } from '../support/build-test-commands.ts';
import { isolatedPostgres, type IsolatedPostgres } from '../support/databases.ts';
import {
  runnerOperation,
  runnerProfile,
  type RunnerOperation,
} from '../support/build-test-runner-fixture.ts';
import { collectCapture } from '../../lib/capture-stream.ts';

const run = promisify(execFile);
const git = (cwd: string, ...args: string[]) =>
  run(
    '/usr/bin/git',
    ['-c', 'core.hooksPath=/dev/null', '-c', 'user.name=t', '-c', 'user.email=t@t', ...args],
    { cwd, env: { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1' } },
  );

const BASE = {
  'README.md': '# demo\n',
  'src/index.js': 'console.log(1);\n',
  'scripts/build.sh': '#!/bin/sh\nexit 0\n',
};

const profile = runnerProfile;

let iso: IsolatedPostgres;
let db: Database;
let provider: SimulatedProvider;
let stateDir: string;
let seedDir: string;
let seed: Buffer;
let baseSha: string;
let runner: SimulatedBuildTestRunner;

beforeAll(async () => {
  iso = await isolatedPostgres();
  db = iso.open();
  await migrateSimulated(db);
  provider = new SimulatedProvider({ db, optionsRevision: '1' });
  stateDir = await mkdtemp(join(tmpdir(), 'sandlot-bt-state-'));
  seedDir = await mkdtemp(join(tmpdir(), 'sandlot-bt-seed-'));
  await git(seedDir, 'init', '-q', '-b', 'main');
  for (const [path, content] of Object.entries(BASE)) {
    await mkdir(dirname(join(seedDir, path)), { recursive: true });
    await writeFile(join(seedDir, path), content, { mode: path.endsWith('.sh') ? 0o755 : 0o644 });
  }
  await git(seedDir, 'add', '-A');
  await git(seedDir, 'commit', '-qm', 'baseline');
  baseSha = (await git(seedDir, 'rev-parse', 'HEAD')).stdout.trim();
  await git(seedDir, 'bundle', 'create', '-q', 'seed.bundle', '--all');
  seed = await readFile(join(seedDir, 'seed.bundle'));
  runner = new SimulatedBuildTestRunner({ db, stateDir });
});

afterAll(async () => {
  await iso.drop();
  await rm(stateDir, { recursive: true, force: true });
  await rm(seedDir, { recursive: true, force: true });
});

type Operation = RunnerOperation;

/** A fresh operation on a fresh live lease. */
const operation = (version: 1 | 2, outputs: string[], sent: Uint8Array = seed) =>
  runnerOperation(provider, version, outputs, { bytes: seed, baseSha }, sent);

/** Starts the command, observes it exited 0, starts the collector and answers its observation. */
async function runToCollector(op: Operation, plan?: SimulatedCommandPlan, on = runner) {
  if (plan !== undefined) on.setPlan(op.binding.operationId, plan);
  const commandPod = await on.startCommand(op.request, budget());
  const observed = await on.observeCommand(op.binding, op.placement, budget());
  expect(observed).toMatchObject({ state: 'exited', exitCode: 0 });
  const preparation = observed.state === 'exited' ? observed.preparation : null;
  const collectorRequest = { ...op.request, commandPod, preparation };
  const collectorPod = await on.startCollector(collectorRequest, budget());
  const collector = await on.observeCollector(op.binding, op.placement, budget());
  return { commandPod, collectorPod, collectorRequest, collector };
}

const receiptOf = (observation: { state: string; receipt?: CollectorReceipt }): CollectorReceipt => {
  if (observation.state !== 'sealed' || observation.receipt === undefined) throw new Error('not sealed');
  return observation.receipt;
};

async function refusal(promise: Promise<unknown>): Promise<ProviderError> {
  const error = await failureOf(promise);
  expect(error).toBeInstanceOf(ProviderError);
  expect((error as ProviderError).kind).toBe('definitive');
  return error as ProviderError;
}

describe('SimulatedBuildTestRunner', () => {
  it('prepares the repository from the bundle, runs the plan and seals a document that parses (version 2)', async () => {
    const op = await operation(2, ['dist/app.js', 'src/index.js']);
    const { commandPod, collectorPod, collector } = await runToCollector(op, {
      write: { 'dist/app.js': Buffer.from([0, 1, 2, 255]), 'src/index.js': 'console.log(2);\n' },
      output: 'built',
    });
    const receipt = receiptOf(collector);
    expect(receipt).toMatchObject({
      podUid: collectorPod.uid,
      container: 'collector',
      operationId: op.binding.operationId,
      checkpointId: op.binding.checkpoint.checkpointId,
      requestFingerprint: op.binding.requestFingerprint,
      version: 2,
    });
    expect(receipt.outputs.map((o) => o.path)).toEqual(['dist/app.js', 'src/index.js']);
    const capture = receipt.capture!;
    const bytes = await collectCapture(
      await runner.readCapture(
        { binding: op.binding, placement: op.placement, collectorPodUid: collectorPod.uid, ...capture },
        budget(),
      ),
    );
    expect({ sha256: sha256(bytes), length: bytes.length }).toEqual(capture);
    const document = parseDocument(bytes);
    expect(document.manifest.source).toEqual(op.command.source);
    const changes = Object.fromEntries(document.manifest.files.map((f) => [f.path, f.change]));
    expect(changes).toEqual({
      'README.md': 'unchanged',
      'dist/app.js': 'added',
      'scripts/build.sh': 'unchanged',
      'src/index.js': 'modified',
    });
    expect(document.manifest.files.find((f) => f.path === 'scripts/build.sh')?.mode).toBe('100755');
    const observed = await runner.observeCommand(op.binding, op.placement, budget());
    expect(observed).toMatchObject({
      state: 'exited',
      pod: commandPod,
      preparation: { podUid: commandPod.uid },
    });
    if (observed.state === 'exited') expect(observed.log.tail).toContain('built');
  });

  it('collects the declared outputs of a version 1 command into a receipt without a document', async () => {
    const op = await operation(1, ['reports/junit.xml']);
    const { collector } = await runToCollector(op);
    const receipt = receiptOf(collector);
    expect(receipt.capture).toBeNull();
    expect(receipt.outputs.map((o) => o.path)).toEqual(['reports/junit.xml']);
    expect(receipt.outputs[0]!.size).toBeGreaterThan(0);
    expect(receipt.outputs[0]!.sha256).toMatch(/^[0-9a-f]{64}$/);
    const command = await runner.observeCommand(op.binding, op.placement, budget());
    expect(command).toMatchObject({ state: 'exited', preparation: null });
  });

  it('answers a repeated start with the same Pod and never runs the command again', async () => {
    const op = await operation(2, ['out.txt']);
    const first = await runner.startCommand(op.request, budget());
    expect(await runner.observeCommand(op.binding, op.placement, budget())).toMatchObject({
      state: 'exited',
    });
    const repo = join((await findBuildTestPod(db, op.binding.operationId, 'command'))!.workDir, 'repo');
    await writeFile(join(repo, 'out.txt'), 'changed after the run\n');
    const before = await findBuildTestPod(db, op.binding.operationId, 'command');
    const other = new SimulatedBuildTestRunner({ db, stateDir });
    expect(await other.startCommand(op.request, budget())).toEqual(first);
    expect(await runner.startCommand(op.request, budget())).toEqual(first);
    await other.observeCommand(op.binding, op.placement, budget());
    expect(await readFile(join(repo, 'out.txt'), 'utf8')).toBe('changed after the run\n');
    expect(await findBuildTestPod(db, op.binding.operationId, 'command')).toEqual(before);
  });

  it('refuses a repeated start whose binding or lease differs', async () => {
    const op = await operation(2, []);
    await runner.startCommand(op.request, budget());
    const changed = { ...op.binding, requestFingerprint: 'f'.repeat(64) };
    const error = await refusal(runner.startCommand({ ...op.request, binding: changed }, budget()));
    expect(error.code).toBe('binding-mismatch');
  });

  it('fails preparation when the seed is one byte short of the accepted one', async () => {
    const op = await operation(2, [], seed.subarray(0, seed.length - 1));
    const pod = await runner.startCommand(op.request, budget());
    expect(await runner.observeCommand(op.binding, op.placement, budget())).toMatchObject({
      state: 'failed',
      pod,
      reason: 'preparation-failed',
    });
  });

  it('fails preparation when Git refuses an accepted seed that is not a bundle', async () => {
    const op = await operation(2, []);
    const notBundle = Buffer.from('not a bundle\n');
    const source = { ...op.command.source!, seedSha256: sha256(notBundle), seedLength: notBundle.length };
    const command = { ...op.command, source };
    await runner.startCommand({ ...op.request, command, seed: notBundle }, budget());
    const observed = await runner.observeCommand(op.binding, op.placement, budget());
    expect(observed).toMatchObject({ state: 'failed', reason: 'preparation-failed' });
    if (observed.state === 'failed') expect(observed.message).toContain('git');
  });

  it('leaves a preparation cut short by its caller to the next start, which prepares it', async () => {
    const op = await operation(2, ['out.txt']);
    const controller = new AbortController();
    const started = runner.startCommand(op.request, { ...budget(), signal: controller.signal });
    setImmediate(() => controller.abort(new Error('caller gone')));
    const outcome = await started.then(
      () => 'started',
      (error: unknown) => (error instanceof ProviderError ? error.kind : 'other'),
    );
    // Either the abort came too late (started) or it was uncertain, never a definitive refusal.
    expect(['started', 'uncertain']).toContain(outcome);
    const pod = await runner.startCommand(op.request, budget());
    expect(await runner.observeCommand(op.binding, op.placement, budget())).toMatchObject({
      state: 'exited',
      pod,
    });
  });

  it('interrupts a command whose plan outlasts its timeout', async () => {
    const op = await operation(2, []);
    runner.setPlan(op.binding.operationId, { durationMs: 601_000 });
    await runner.startCommand(op.request, budget());
    expect(await runner.observeCommand(op.binding, op.placement, budget())).toMatchObject({
      state: 'running',
    });
    const later = new SimulatedBuildTestRunner({ db, stateDir, now: () => Date.now() + 601_000 });
    expect(await later.observeCommand(op.binding, op.placement, budget())).toMatchObject({
      state: 'interrupted',
      reason: 'timeout',
    });
  });

  it('refuses a placement on a released lease and a profile that is not offline', async () => {
    const op = await operation(2, []);
    const offline = { ...op.request, profile: { ...profile, egress: 'allow' as 'deny-all' } };
    expect((await refusal(runner.startCommand(offline, budget()))).code).toBe('egress-not-denied');
    await provider.release({ ...op.placement.lease, idempotencyKey: 'r1' }, budget());
    expect((await refusal(runner.startCommand(op.request, budget()))).code).toBe('lease-absent');
  });

  it('refuses the collector unless the command exited 0 on the named Pod', async () => {
    const failing = await operation(2, []);
    runner.setPlan(failing.binding.operationId, { exitCode: 2 });
    const commandPod = await runner.startCommand(failing.request, budget());
    const observed = await runner.observeCommand(failing.binding, failing.placement, budget());
    expect(observed).toMatchObject({ state: 'exited', exitCode: 2 });
    const preparation = observed.state === 'exited' ? observed.preparation : null;
    const refused = await refusal(
      runner.startCollector({ ...failing.request, commandPod, preparation }, budget()),
    );
    expect(refused.code).toBe('command-not-succeeded');

    const op = await operation(2, []);
    const pod = await runner.startCommand(op.request, budget());
    const ok = await runner.observeCommand(op.binding, op.placement, budget());
    const prepared = ok.state === 'exited' ? ok.preparation : null;
    const wrong: PodRef = { ...pod, uid: '00000000-0000-4000-8000-000000000000' };
    const mismatch = await refusal(
      runner.startCollector({ ...op.request, commandPod: wrong, preparation: prepared }, budget()),
    );
    expect(mismatch.code).toBe('command-pod-mismatch');
    expect(await runner.observeCollector(op.binding, op.placement, budget())).toEqual({ state: 'absent' });
  });

  it('fails the collector with missing-output when a declared output was not written', async () => {
    const op = await operation(2, ['dist/app.js']);
    const { collector } = await runToCollector(op, { write: {} });
    expect(collector).toMatchObject({ state: 'failed', reason: 'missing-output' });
  });

  it('refuses to capture a tree with a symlink or a FIFO', async () => {
    for (const plan of [{ symlinks: { 'link.txt': 'README.md' } }, { fifos: ['pipe'] }]) {
      const op = await operation(2, ['out.txt']);
      const { collector } = await runToCollector(op, { write: { 'out.txt': 'x' }, ...plan });
      expect(collector).toMatchObject({ state: 'failed', reason: 'capture-refused' });
    }
  });

  it('follows no link on the way to a file: a linked directory makes neither an output nor a captured file', async () => {
    // A directory outside the repository holding the very files the command declares.
    const outside = await mkdtemp(join(tmpdir(), 'sandlot-bt-outside-'));
    await writeFile(join(outside, 'junit.xml'), '<testsuites/>\n');
    await writeFile(join(outside, 'out.txt'), 'x');
    try {
      const v1 = await operation(1, ['reports/junit.xml']);
      const first = await runToCollector(v1, { delete: ['reports'], symlinks: { reports: outside } });
      expect(first.collector).toMatchObject({ state: 'failed', reason: 'capture-refused' });
      if (first.collector.state === 'failed')
        expect(first.collector.message).toContain('reports is a symlink');
      const v2 = await operation(2, ['linked/out.txt']);
      const second = await runToCollector(v2, { symlinks: { linked: outside } });
      expect(second.collector).toMatchObject({ state: 'failed', reason: 'capture-refused' });
    } finally {
      await rm(outside, { recursive: true, force: true });
    }
  });

  it('refuses to capture an undeclared changed file', async () => {
    const op = await operation(2, ['out.txt']);
    const { collector } = await runToCollector(op, { write: { 'out.txt': 'x', 'README.md': '# changed\n' } });
    expect(collector).toMatchObject({ state: 'failed', reason: 'capture-refused' });
    if (collector.state === 'failed') expect(collector.message).toContain('changed-undeclared-file');
  });

  it('answers the same states and bytes from a new runner over the same database, without recapturing', async () => {
    const op = await operation(2, ['out.txt']);
    const { commandPod, collectorPod, collectorRequest, collector } = await runToCollector(op);
    const sealed = await findBuildTestPod(db, op.binding.operationId, 'collector');
    const restarted = new SimulatedBuildTestRunner({ db: iso.open(2), stateDir });
    expect(await restarted.observeCommand(op.binding, op.placement, budget())).toMatchObject({
      state: 'exited',
      pod: commandPod,
    });
    expect(await restarted.observeCollector(op.binding, op.placement, budget())).toEqual(collector);
    expect(await restarted.startCollector(collectorRequest, budget())).toEqual(collectorPod);
    const ref = {
      binding: op.binding,
      placement: op.placement,
      collectorPodUid: collectorPod.uid,
      ...receiptOf(collector).capture!,
    };
    expect(await collectCapture(await restarted.readCapture(ref, budget()))).toEqual(sealed!.sealedDocument);
    expect(await findBuildTestPod(db, op.binding.operationId, 'collector')).toEqual(sealed);
    const other = await refusal(restarted.readCapture({ ...ref, length: ref.length + 1 }, budget()));
    expect(other.code).toBe('capture-mismatch');
  });

  it('finishes a long command from its row once it is due, even in another runner', async () => {
    let now = 1_000_000;
    const clock = () => now;
    const first = new SimulatedBuildTestRunner({ db, stateDir, now: clock });
    const op = await operation(2, ['out.txt']);
    first.setPlan(op.binding.operationId, { durationMs: 5_000, write: { 'out.txt': 'late' } });
    await first.startCommand(op.request, budget());
    expect(await first.observeCommand(op.binding, op.placement, budget())).toMatchObject({
      state: 'running',
    });
    now += 5_000;
    const second = new SimulatedBuildTestRunner({ db, stateDir, now: clock });
    expect(await second.observeCommand(op.binding, op.placement, budget())).toMatchObject({
      state: 'exited',
      exitCode: 0,
    });
  });

  it('deletes exactly the named Pods, then the capture is gone and the working directory removed', async () => {
    const op = await operation(2, ['out.txt']);
    const { commandPod, collectorPod, collector } = await runToCollector(op);
    const workDir = (await findBuildTestPod(db, op.binding.operationId, 'command'))!.workDir;
    const stranger = await operation(1, []);
    const foreign = await runner.startCommand(stranger.request, budget());
    expect((await refusal(runner.deletePods(op.binding, op.placement, [foreign], budget()))).code).toBe(
      'pod-not-ours',
    );
    await runner.deletePods(op.binding, op.placement, [commandPod, collectorPod], budget());
    await runner.deletePods(op.binding, op.placement, [collectorPod], budget());
    const ref = {
      binding: op.binding,
      placement: op.placement,
      collectorPodUid: collectorPod.uid,
      ...receiptOf(collector).capture!,
    };
    expect((await refusal(runner.readCapture(ref, budget()))).code).toBe('capture-gone');
    expect(await runner.observeCommand(op.binding, op.placement, budget())).toEqual({ state: 'absent' });
    await expect(stat(workDir)).rejects.toThrow(/ENOENT/);
  });
});
