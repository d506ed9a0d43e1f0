// The Agent Sandbox BuildTest runner against the fake Kubernetes API over real TLS, on a lease the
// adapter provisioned: a real Git bundle is prepared into the lease's Workspace PVC by the helper
// over exec, the seeded command runs only after the receipt matched, the collector seals a document
// that parses, the command's log is read back bounded by maxLogBytes (an unreadable one marked
// unavailable), an eviction for the command's output is an output-limit interruption, and every
// refusal (a wrong receipt, a failed command, a receipt for another Pod, a Pod re-created under the
// same name) comes back as the port promises.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseDocument } from '../../formats/awscapt2/output-document.ts';
import { AgentSandboxBuildTestRunner } from '../../providers/agent-sandbox/build-test-runner.ts';
import {
  buildTestPodName,
  buildTestPolicyName,
  operationLabelOf,
  repositoryPathOf,
} from '../../providers/agent-sandbox/build-test-names.ts';
import { pvcNameOf } from '../../providers/agent-sandbox/names.ts';
import type { CollectorObservation } from '../../providers/build-test.ts';
import { ProviderError } from '../../providers/errors.ts';
import type { SandboxProvider } from '../../providers/provider.ts';
import { budget, failureOf } from '../contract/contract-subject.ts';
import { installBuildTest, type FakeBuildTest } from '../fakes/kube-api/build-test-kubelet.ts';
import { startFakeKubeApi, type FakeKubeApi, type KubeObject } from '../fakes/kube-api/index.ts';
import { sha256 } from '../support/build-test-commands.ts';
import { skipWithoutCrds } from '../support/crd-dir.ts';
import { eventually } from '../support/sandbox-scenarios.ts';
import {
  NAMESPACE,
  adapterOn,
  kubeConfigOf,
  runtimeClassObject,
  wipeNamespace,
  withWorkspaces,
} from '../support/fake-cluster-harness.ts';
import { gitSeed, type GitSeed } from '../support/git-seed.ts';
import {
  runnerOperation,
  runnerProfile,
  type RunnerOperation,
} from '../support/build-test-runner-fixture.ts';
import { collectCapture } from '../../lib/capture-stream.ts';

let fake: FakeKubeApi;
let bt: FakeBuildTest;
let provider: SandboxProvider;
let runner: AgentSandboxBuildTestRunner;
let seed: GitSeed;

beforeAll(async () => {
  if (skipWithoutCrds) return;
  fake = await startFakeKubeApi({ namespace: NAMESPACE, controller: { intervalMs: 10 } });
  fake.objects.put(runtimeClassObject());
  bt = await installBuildTest(fake);
  provider = withWorkspaces(fake, adapterOn(fake));
  runner = new AgentSandboxBuildTestRunner({ kubeConfig: kubeConfigOf(fake), namespace: NAMESPACE });
  seed = await gitSeed({
    'README.md': '# demo\n',
    'src/index.js': 'console.log(1);\n',
    'build.sh': 'exit 0\n',
  });
});

// Each case starts on an empty namespace: the fake's passes grow with the objects it holds.
beforeEach(() => {
  if (!skipWithoutCrds) wipeNamespace(fake);
});

afterAll(async () => {
  await fake?.close();
  await bt?.close();
});

type Operation = RunnerOperation;

/** A fresh operation on a fresh lease provisioned through the adapter. */
const operation = (version: 1 | 2, outputs: string[]) => runnerOperation(provider, version, outputs, seed);

const podOf = (name: string) =>
  fake.objects.get({ apiVersion: 'v1', kind: 'Pod', namespace: NAMESPACE, name });
const policyOf = (name: string) =>
  fake.objects.get({ apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', namespace: NAMESPACE, name });
const hostRepo = (op: Operation) =>
  join(
    bt.workspaceDir(pvcNameOf(op.placement.workspace.volumeId) ?? ''),
    repositoryPathOf(op.placement.workspace.mountPath, op.binding.operationId).slice(
      op.placement.workspace.mountPath.length + 1,
    ),
  );

async function settledCollector(op: Operation): Promise<CollectorObservation> {
  for (let i = 0; i < 100; i += 1) {
    const observed = await runner.observeCollector(op.binding, op.placement, budget());
    if (observed.state !== 'running') return observed;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error('the collector never answered');
}

async function runToCollector(op: Operation) {
  const commandPod = await runner.startCommand(op.request, budget());
  const observed = await runner.observeCommand(op.binding, op.placement, budget());
  expect(observed).toMatchObject({ state: 'exited', exitCode: 0 });
  const preparation = observed.state === 'exited' ? observed.preparation : null;
  const collectorPod = await runner.startCollector({ ...op.request, commandPod, preparation }, budget());
  return { commandPod, collectorPod, collector: await settledCollector(op) };
}

async function refusal(promise: Promise<unknown>): Promise<ProviderError> {
  const error = await failureOf(promise);
  expect(error).toBeInstanceOf(ProviderError);
  expect((error as ProviderError).kind).toBe('definitive');
  return error as ProviderError;
}

type Spec = { containers: Container[]; initContainers?: Container[]; volumes: Volume[] };
type Container = {
  name: string;
  restartPolicy?: string;
  volumeMounts?: { name: string; readOnly?: boolean }[];
};
type Volume = { name: string; persistentVolumeClaim?: { claimName: string; readOnly?: boolean } };
const specOf = (pod: KubeObject | undefined) => pod?.spec as Spec;

describe.skipIf(skipWithoutCrds)('AgentSandboxBuildTestRunner on the fake Kubernetes API', () => {
  it('prepares the seed over exec, runs the command and seals a document that parses (version 2)', async () => {
    const op = await operation(2, ['dist/app.js', 'src/index.js']);
    bt.plans.set(op.binding.operationId, {
      write: { 'dist/app.js': 'built\n', 'src/index.js': 'console.log(2);\n' },
    });
    const { commandPod, collectorPod, collector } = await runToCollector(op);
    expect(collector.state).toBe('sealed');
    if (collector.state !== 'sealed') return;
    expect(collector.receipt).toMatchObject({
      podUid: collectorPod.uid,
      operationId: op.binding.operationId,
    });
    const capture = collector.receipt.capture!;
    const bytes = await collectCapture(
      await runner.readCapture(
        { binding: op.binding, placement: op.placement, collectorPodUid: collectorPod.uid, ...capture },
        budget(),
      ),
    );
    expect({ sha256: sha256(bytes), length: bytes.length }).toEqual(capture);
    expect(Buffer.from(bytes).equals(bt.sealed.get(collectorPod.uid)!)).toBe(true);
    const document = parseDocument(bytes);
    expect(document.manifest.source).toEqual(op.command.source);
    const changes = Object.fromEntries(document.manifest.files.map((f) => [f.path, f.change]));
    expect(changes).toMatchObject({
      'dist/app.js': 'added',
      'src/index.js': 'modified',
      'README.md': 'unchanged',
    });
    const observed = await runner.observeCommand(op.binding, op.placement, budget());
    expect(observed).toMatchObject({
      state: 'exited',
      preparation: {
        podUid: commandPod.uid,
        sourceSha256: op.command.source!.seedSha256,
        path: repositoryPathOf('/workspace', op.binding.operationId),
      },
    });
  });

  it('ends the capture exchange when its reader leaves after the first chunk, and serves it whole again', async () => {
    const op = await operation(2, ['dist/app.js']);
    // Random text, so the sealed document spans many of the kubelet's stdout pieces.
    bt.plans.set(op.binding.operationId, {
      write: { 'dist/app.js': randomBytes(96 * 1024).toString('hex') },
    });
    const { collectorPod, collector } = await runToCollector(op);
    expect(collector.state).toBe('sealed');
    if (collector.state !== 'sealed') return;
    const ref = {
      binding: op.binding,
      placement: op.placement,
      collectorPodUid: collectorPod.uid,
      ...collector.receipt.capture!,
    };
    let release = () => {};
    bt.captureHold.set(collectorPod.uid, new Promise<void>((resolve) => (release = resolve)));
    const captures = () =>
      fake.execSessions.filter((s) => s.container === 'collector' && s.command.at(-1) === 'capture');
    const before = captures().length;
    let first: Uint8Array | null = null;
    // A budget longer than the case: only leaving the stream can end this exchange in time.
    for await (const chunk of await runner.readCapture(ref, budget(600_000))) {
      first = chunk;
      break;
    }
    // Leaving the loop returned the stream, which ended its exchange before it settled.
    expect(first?.length).toBeGreaterThan(0);
    const ended = await eventually('the capture session ending', () => {
      const outcomes = captures()
        .slice(before)
        .map((s) => s.outcome);
      return Promise.resolve(outcomes.includes('open') ? undefined : outcomes);
    });
    expect(ended).toEqual(['client-closed']);
    release();
    bt.captureHold.delete(collectorPod.uid);
    const bytes = await collectCapture(await runner.readCapture(ref, budget()));
    expect({ sha256: sha256(bytes), length: bytes.length }).toEqual(collector.receipt.capture);
    expect(Buffer.from(bytes.subarray(0, first!.length)).equals(Buffer.from(first!))).toBe(true);
  });

  it('collects the declared outputs of a version 1 command without a document', async () => {
    const op = await operation(1, ['reports/junit.xml']);
    const { collector } = await runToCollector(op);
    expect(collector).toMatchObject({ state: 'sealed', receipt: { version: 1, capture: null } });
    if (collector.state === 'sealed')
      expect(collector.receipt.outputs.map((o) => o.path)).toEqual(['reports/junit.xml']);
  });

  it('answers a repeated start with the same Pod; the fake holds one command Pod', async () => {
    const op = await operation(2, []);
    const first = await runner.startCommand(op.request, budget());
    const again = await runner.startCommand(op.request, budget());
    expect(again).toEqual(first);
    const selector = `sandlot.dev/build-test-role=command,sandlot.dev/owner-hash=${op.placement.lease.owner.ownerHash}`;
    expect(
      fake.objects.list({ apiVersion: 'v1', kind: 'Pod' }, { namespace: NAMESPACE, labelSelector: selector }),
    ).toHaveLength(1);
    const other = {
      ...op.request,
      binding: { ...op.binding, requestFingerprint: sha256(Buffer.from('other')) },
    };
    expect((await refusal(runner.startCommand(other, budget()))).code).toBe('pod-not-ours');
    // A same-named Pod of another owner is never adopted either.
    const foreign = await operation(2, []);
    const name = buildTestPodName(foreign.binding.operationId, 'command');
    fake.objects.put({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: NAMESPACE, labels: { app: 'other' } },
      spec: { containers: [{ name: 'main', image: 'other' }] },
    });
    expect((await refusal(runner.startCommand(foreign.request, budget()))).code).toBe('pod-not-ours');
  });

  it('never starts the command when the preparation receipt does not match', async () => {
    const op = await operation(2, ['out.txt']);
    bt.preparationReceiptPatch.set(op.binding.operationId, { sourceSha256: 'f'.repeat(64) });
    const pod = await runner.startCommand(op.request, budget());
    expect(bt.released.has(pod.uid)).toBe(false);
    expect(existsSync(join(hostRepo(op), 'out.txt'))).toBe(false);
    const observed = await runner.observeCommand(op.binding, op.placement, budget());
    expect(observed).toMatchObject({ state: 'failed', reason: 'preparation-failed' });
  });

  it('refuses a collector after the command exited 2', async () => {
    const op = await operation(2, []);
    bt.plans.set(op.binding.operationId, { exitCode: 2 });
    const commandPod = await runner.startCommand(op.request, budget());
    const observed = await runner.observeCommand(op.binding, op.placement, budget());
    expect(observed).toMatchObject({ state: 'exited', exitCode: 2 });
    const error = await refusal(
      runner.startCollector({ ...op.request, commandPod, preparation: null }, budget()),
    );
    expect(error.code).toBe('command-not-succeeded');
  });

  it('reads an exited command’s log from the log subresource, whole when it fits in maxLogBytes', async () => {
    const op = await operation(2, []);
    bt.plans.set(op.binding.operationId, { exitCode: 3, output: 'compiling\nerror: no such file\n' });
    const pod = await runner.startCommand(op.request, budget());
    const observed = await runner.observeCommand(op.binding, op.placement, budget());
    expect(observed).toMatchObject({
      state: 'exited',
      exitCode: 3,
      log: { bytes: 30, truncated: false, tail: 'compiling\nerror: no such file\n' },
    });
    expect(observed.state === 'exited' && 'unavailable' in observed.log).toBe(false);
    const reads = fake.requests.filter((r) => r.subresource === 'log' && r.name === pod.name);
    expect(reads.map((r) => ({ verb: r.verb, query: r.query }))).toEqual([
      {
        verb: 'get',
        query: {
          container: 'command',
          tailLines: '65537',
          limitBytes: String(runnerProfile.resources.maxLogBytes + 1),
        },
      },
    ]);
  });

  it('keeps exactly the end of a longer log within maxLogBytes, and marks it truncated', async () => {
    const max = runnerProfile.resources.maxLogBytes;
    const lines = Array.from({ length: 2_000 }, (_, i) => `line ${i}\n`).join('');
    const op = await operation(2, []);
    bt.plans.set(op.binding.operationId, { output: lines });
    await runner.startCommand(op.request, budget());
    const observed = await runner.observeCommand(op.binding, op.placement, budget());
    if (observed.state !== 'exited') throw new Error(`not exited: ${observed.state}`);
    const { log } = observed;
    expect(log).toMatchObject({ truncated: true, bytes: Buffer.byteLength(log.tail) });
    expect(log.bytes).toBeLessThanOrEqual(max);
    expect(lines.endsWith(log.tail) && log.tail.startsWith('line ')).toBe(true);
    expect(log.tail.endsWith('line 1999\n')).toBe(true);

    // One line longer than the limit: its first maxLogBytes bytes, the end of the log being that line.
    const long = await operation(2, []);
    bt.plans.set(long.binding.operationId, { output: `first\n${'é'.repeat(max)}\n` });
    await runner.startCommand(long.request, budget());
    const seen = await runner.observeCommand(long.binding, long.placement, budget());
    expect(seen).toMatchObject({
      state: 'exited',
      log: { truncated: true, bytes: max, tail: 'é'.repeat(max / 2) },
    });
  });

  it('reports an unreadable log as unavailable and keeps the exit code as the evidence', async () => {
    const op = await operation(2, []);
    await runner.startCommand(op.request, budget());
    fake.faults.failNext({ verb: 'get', resource: 'pods', subresource: 'log' }, 403);
    expect(await runner.observeCommand(op.binding, op.placement, budget())).toMatchObject({
      state: 'exited',
      exitCode: 0,
      log: { bytes: 0, truncated: false, tail: '', unavailable: 'forbidden-403' },
    });
    fake.faults.failNext({ verb: 'get', resource: 'pods', subresource: 'log' }, 500);
    expect(await runner.observeCommand(op.binding, op.placement, budget())).toMatchObject({
      state: 'exited',
      exitCode: 0,
      log: { tail: '', unavailable: 'http-500' },
    });
  });

  it('ends a command evicted for its output (ephemeral-storage limit) Interrupted with output-limit', async () => {
    const op = await operation(2, []);
    bt.plans.set(op.binding.operationId, { interrupt: { reason: 'output-limit' }, output: 'x\n' });
    const commandPod = await runner.startCommand(op.request, budget());
    expect(podOf(commandPod.name)?.status).toMatchObject({ phase: 'Failed', reason: 'Evicted' });
    const observed = await runner.observeCommand(op.binding, op.placement, budget());
    expect(observed).toMatchObject({ state: 'interrupted', reason: 'output-limit' });
    expect(observed.state === 'interrupted' && observed.message).toContain(
      'Container command exceeded its local ephemeral storage limit',
    );
    const error = await refusal(
      runner.startCollector({ ...op.request, commandPod, preparation: null }, budget()),
    );
    expect(error.code).toBe('command-not-succeeded');
  });

  it('fails a collector whose receipt names another Pod UID as invalid-receipt', async () => {
    const op = await operation(2, []);
    bt.collectorReceiptPatch.set(op.binding.operationId, { podUid: 'another-pod' });
    const { collector } = await runToCollector(op);
    expect(collector).toMatchObject({ state: 'failed', reason: 'invalid-receipt' });
  });

  it('runs offline: a deny-all policy made before the Pod, no helper state in the command, read-only collector', async () => {
    const op = await operation(2, []);
    const { commandPod, collectorPod } = await runToCollector(op);
    for (const pod of [commandPod, collectorPod]) {
      const policy = policyOf(buildTestPolicyName(op.binding.operationId, pod.role));
      expect(policy?.spec).toEqual({
        podSelector: {
          matchLabels: {
            'sandlot.dev/build-test-operation': operationLabelOf(op.binding.operationId),
            'sandlot.dev/build-test-role': pod.role,
          },
        },
        policyTypes: ['Ingress', 'Egress'],
      });
      expect(podOf(pod.name)?.metadata.labels).toMatchObject({
        'sandlot.dev/build-test-operation': operationLabelOf(op.binding.operationId),
        'sandlot.dev/build-test-role': pod.role,
      });
      const created = (kind: string, name: string) =>
        fake.requests.findIndex(
          (r) => r.method === 'POST' && r.resource === kind && JSON.stringify(r.body ?? '').includes(name),
        );
      expect(created('networkpolicies', `${pod.name}-offline`)).toBeLessThan(
        created('pods', `"${pod.name}"`),
      );
      expect(created('networkpolicies', `${pod.name}-offline`)).toBeGreaterThanOrEqual(0);
    }
    const command = specOf(podOf(commandPod.name));
    expect(command.containers.map((c) => c.name)).toEqual(['command']);
    expect(command.containers[0]!.volumeMounts!.map((m) => m.name)).toEqual(['workspace']);
    expect(command.initContainers).toMatchObject([{ name: 'preparation', restartPolicy: 'Always' }]);
    expect(command.volumes.find((v) => v.persistentVolumeClaim)?.persistentVolumeClaim).toEqual({
      claimName: pvcNameOf(op.placement.workspace.volumeId),
      readOnly: false,
    });
    const collector = specOf(podOf(collectorPod.name));
    expect(collector.containers[0]!.volumeMounts).toContainEqual(
      expect.objectContaining({ name: 'workspace', readOnly: true }),
    );
    expect(collector.volumes.find((v) => v.persistentVolumeClaim)?.persistentVolumeClaim?.readOnly).toBe(
      true,
    );
  });

  it('deletes exactly the given UIDs, never a Pod re-created under the same name', async () => {
    const op = await operation(2, []);
    const { commandPod, collectorPod } = await runToCollector(op);
    await runner.deletePods(op.binding, op.placement, [commandPod, collectorPod], budget());
    expect(podOf(commandPod.name)).toBeUndefined();
    expect(podOf(collectorPod.name)).toBeUndefined();
    expect(policyOf(buildTestPolicyName(op.binding.operationId, 'command'))).toBeUndefined();
    expect(await runner.observeCommand(op.binding, op.placement, budget())).toEqual({ state: 'absent' });
    await runner.deletePods(op.binding, op.placement, [commandPod, collectorPod], budget()); // already gone

    const second = await operation(2, []);
    const first = await runner.startCommand(second.request, budget());
    const stored = podOf(first.name)!;
    fake.objects.remove({ apiVersion: 'v1', kind: 'Pod', namespace: NAMESPACE, name: first.name });
    const metadata = { ...stored.metadata };
    delete (metadata as { uid?: string }).uid;
    delete (metadata as { resourceVersion?: string }).resourceVersion;
    const replacement = fake.objects.put({ ...stored, metadata });
    expect(replacement.metadata.uid).not.toBe(first.uid);
    await runner.deletePods(second.binding, second.placement, [first], budget());
    expect(podOf(first.name)?.metadata.uid).toBe(replacement.metadata.uid);
    expect(policyOf(buildTestPolicyName(second.binding.operationId, 'command'))).toBeDefined();
  });
});
