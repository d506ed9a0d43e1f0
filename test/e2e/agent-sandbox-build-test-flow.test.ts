// BuildTest through the HTTP routes with SANDLOT_PROVIDER=agent-sandbox: the production adapter and
// its BuildTest runner against the fake Kubernetes API (real CRD schemas, real TLS, exec over
// WebSocket), the project's network policy read back from Cilium objects, a real Git bundle as the
// seed. One version 2 operation from the binding to capture (the command's log read back from its
// Pod), acknowledgment and exact-UID cleanup.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddedCore, registerAdmission } from '../../actors/build-test/core-embedded.ts';
import type { JournalAcknowledgment } from '../../actors/ports.ts';
import { parseDocument } from '../../formats/awscapt2/output-document.ts';
import { AgentSandboxBuildTestRunner } from '../../providers/agent-sandbox/build-test-runner.ts';
import { installBuildTest, type FakeBuildTest } from '../fakes/kube-api/build-test-kubelet.ts';
import { startFakeKubeApi, type FakeKubeApi } from '../fakes/kube-api/index.ts';
import { embeddedWorker, loadedProfile } from '../support/build-test-profile.ts';
import { acceptVersion2 } from '../support/build-test-scenario.ts';
import { skipWithoutCrds } from '../support/crd-dir.ts';
import { openBackend, type BackendHandle } from '../support/databases.ts';
import {
  NAMESPACE,
  adapterOn,
  ciliumPolicyObject,
  kubeConfigOf,
  runtimeClassObject,
  verifierOn,
  withWorkspaces,
} from '../support/fake-cluster-harness.ts';
import { gitSeed } from '../support/git-seed.ts';
import { buildHarness, type Harness } from '../support/harness.ts';
import { json, provisionBody, waitForLease } from '../support/sandbox-flow.ts';
import { eventually, setupCustomScenario } from '../support/sandbox-scenarios.ts';

interface Operation {
  state: string;
  step: string | null;
  requestFingerprint: string;
  pods: { command: { uid: string } | null; collector: { uid: string } | null };
  capture: { sha256: string; length: number } | null;
  log: Record<string, unknown> | null;
  cleanedAt: string | null;
}

describe.skipIf(skipWithoutCrds)('BuildTest over HTTP on the Agent Sandbox adapter (fake API)', () => {
  let fake: FakeKubeApi;
  let bt: FakeBuildTest;
  let handle: BackendHandle;
  let h: Harness;

  beforeAll(async () => {
    fake = await startFakeKubeApi({ namespace: NAMESPACE, controller: { intervalMs: 10 } });
    fake.objects.put(runtimeClassObject());
    bt = await installBuildTest(fake);
    handle = await openBackend('postgres');
    const runner = new AgentSandboxBuildTestRunner({ kubeConfig: kubeConfigOf(fake), namespace: NAMESPACE });
    const core = new EmbeddedCore(handle.db);
    h = await buildHarness(handle.db, {
      workers: { callTimeoutMs: 15_000 },
      sandboxProvider: withWorkspaces(fake, adapterOn(fake)),
      networkPolicies: verifierOn(fake),
      buildTest: {
        offer: { profile: loadedProfile(), core, runner },
        worker: embeddedWorker(runner, core),
      },
    });
  }, 60_000);
  afterAll(async () => {
    await h?.close();
    await handle?.close();
    await fake?.close();
    await bt?.close();
  });

  it('runs a version 2 command: capture, Core-verified acknowledgment, exact Pods deleted', async () => {
    const s = await setupCustomScenario(h, { project: 'checkout', run: 'run-bt', policyGenerations: [] });
    fake.objects.put(ciliumPolicyObject({ tenantId: 'acme', projectId: 'checkout', generation: 1 }));
    expect(
      (await h.request('POST', `${s.base}/sandbox/provision`, { token: s.token, body: provisionBody(s) }))
        .status,
    ).toBe(202);
    await waitForLease(h, s, (l) => l['state'] === 'Active', 30_000);

    const checkpoint = {
      tenantId: 'acme',
      projectId: 'checkout',
      runId: 'run-bt',
      stepId: 'build',
      checkpointId: 'cp-k8s',
    };
    const seed = await gitSeed({ 'README.md': '# app\n', 'src/index.js': 'console.log(1);\n' });
    const command = await acceptVersion2(h.db, checkpoint, seed, ['dist/app.js']);
    bt.plans.set(command.operationId, { write: { 'dist/app.js': 'built\n' }, output: 'built dist/app.js\n' });
    const routes = `${s.base}/sandbox/build-test`;
    const prepared = await h.request(
      'GET',
      `${routes}/binding-preparation?sessionId=s&executionProfileReference=p`,
      { token: s.token },
    );
    expect(prepared.status).toBe(200);
    const { binding } = await json<{ binding: Record<string, unknown> }>(prepared);
    const created = await h.request('POST', `${routes}/commands`, {
      token: s.token,
      body: { checkpoint, expectedBinding: binding },
    });
    expect(created.status).toBe(202);

    const read = async () =>
      (
        await json<{ operation: Operation }>(
          await h.request('GET', `${routes}/commands/${command.operationId}`, { token: s.token }),
        )
      ).operation;
    const done = await eventually(
      'the operation to succeed',
      async () => {
        const op = await read();
        if (op.state === 'Failed' || op.state === 'Interrupted') throw new Error(JSON.stringify(op));
        return op.state === 'Succeeded' && op.step === null ? op : undefined;
      },
      30_000,
    );
    const collectorUid = done.pods.collector?.uid ?? '';
    // The command's log, read back from the command Pod's log subresource.
    expect(done.log).toEqual({ bytes: 18, truncated: false, tail: 'built dist/app.js\n' });

    const capture = await h.request('GET', `${routes}/commands/${command.operationId}/workspace-capture`, {
      token: s.token,
    });
    expect(capture.status).toBe(200);
    const bytes = Buffer.from(await capture.arrayBuffer());
    expect({ sha256: createHash('sha256').update(bytes).digest('hex'), length: bytes.length }).toEqual(
      done.capture,
    );
    // Exactly what the collector Pod sealed in its private state.
    expect(bytes.equals(bt.sealed.get(collectorUid) ?? Buffer.alloc(0))).toBe(true);
    expect(parseDocument(bytes).manifest.files.map((f) => [f.path, f.change])).toEqual([
      ['README.md', 'unchanged'],
      ['dist/app.js', 'added'],
      ['src/index.js', 'unchanged'],
    ]);

    const ack: JournalAcknowledgment = {
      checkpoint,
      operationId: command.operationId,
      journalPosition: 3,
      recordSha256: 'd'.repeat(64),
      objectReference: `source-control://captures/${command.operationId}`,
      capture: {
        sha256: done.capture?.sha256 ?? '',
        length: done.capture?.length ?? 0,
        requestFingerprint: done.requestFingerprint,
        collectorPodUid: collectorUid,
        commandPodUid: done.pods.command?.uid ?? '',
      },
    };
    expect(await registerAdmission(h.db, ack, 'events')).toBe('created');
    const acked = await h.request(
      'POST',
      `${routes}/commands/${command.operationId}/workspace-capture/acknowledge`,
      {
        token: s.token,
        body: { request: { checkpoint, expectedBinding: binding }, acknowledgment: ack },
      },
    );
    expect(acked.status).toBe(202);
    await eventually(
      'the Pods deleted',
      async () => ((await read()).cleanedAt === null ? undefined : true),
      30_000,
    );
    const pods = fake.objects
      .list({ apiVersion: 'v1', kind: 'Pod' }, { namespace: NAMESPACE })
      .filter((p) => p.metadata.labels?.['sandlot.dev/build-test-role'] !== undefined);
    expect(pods).toEqual([]);
    const gone = await h.request('GET', `${routes}/commands/${command.operationId}/workspace-capture`, {
      token: s.token,
    });
    expect(gone.status).toBe(410);
  }, 90_000);
});
