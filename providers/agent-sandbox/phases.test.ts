// Phases come from what Kubernetes observed of the Pod, one controller pass at a time: pending until
// the Pod is scheduled, then scheduled → image-ready (an imageID) → started (running since), never
// from a Ready condition. Finished needs the Sandbox's Finished condition at its generation.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { skipWithoutCrds } from '../../test/support/crd-dir.ts';
import { startFakeKubeApi, type FakeKubeApi, type KubeObject } from '../../test/fakes/kube-api/index.ts';
import {
  budget,
  newOwner,
  ownedBy,
  presentResource,
  provisionRequest,
  refTo,
} from '../../test/contract/contract-subject.ts';
import type { ProviderResource, SandboxProvider } from '../provider.ts';
import {
  adapterOn,
  NAMESPACE,
  runtimeClassObject,
  workspacePvcObject,
} from '../../test/support/fake-cluster-harness.ts';
import { objectNames } from './names.ts';

const EXT = 'extensions.agents.x-k8s.io/v1beta1';
const shortBudget = (ms = 400) => ({
  signal: new AbortController().signal,
  deadline: new Date(Date.now() + ms),
});

describe.skipIf(skipWithoutCrds)('Agent Sandbox phases, one controller pass at a time', () => {
  let fake: FakeKubeApi;
  let provider: SandboxProvider;

  beforeAll(async () => {
    fake = await startFakeKubeApi({ namespace: NAMESPACE, controller: { paused: true } });
    fake.objects.put(runtimeClassObject());
    provider = adapterOn(fake);
  });
  afterAll(async () => {
    await fake.close();
  });

  /** Provisions with the cluster frozen (the claim exists, nothing runs: pending), then runs `passes` passes. */
  async function provisioned(
    passes: number,
  ): Promise<{ resource: ProviderResource; pod: string; sandbox: string }> {
    const made = provisionRequest({ provider }, newOwner());
    fake.objects.put(workspacePvcObject(made));
    const early = await provider.provision(made, shortBudget(1500));
    expect(early.phase).toBe('pending');
    const name = objectNames(made.owner.operationId).claim;
    expect(
      fake.objects.get({ apiVersion: EXT, kind: 'SandboxClaim', namespace: NAMESPACE, name }),
    ).toBeDefined();
    for (let i = 0; i < passes; i++) await fake.controller.step();
    const [resource] = await provider.listOwned(ownedBy({ provider }, made.owner), budget());
    if (resource === undefined) throw new Error('nothing listed');
    return { resource, pod: name, sandbox: name };
  }
  const describeNow = async (resource: ProviderResource) =>
    presentResource(await provider.describe(refTo({ provider }, resource), budget()));
  const podRef = (name: string) => ({ apiVersion: 'v1', kind: 'Pod', namespace: NAMESPACE, name });
  const sandboxRef = (name: string) => ({
    apiVersion: 'agents.x-k8s.io/v1beta1',
    kind: 'Sandbox',
    namespace: NAMESPACE,
    name,
  });

  it('reports scheduled, then image-ready, then started as the kubelet moves the Pod', async () => {
    // Pass 1 makes the Sandbox, pass 2 the Pod, pass 3 schedules it.
    const { resource } = await provisioned(3);
    expect(resource.phase).toBe('scheduled');
    await fake.controller.step();
    expect((await describeNow(resource)).phase).toBe('image-ready');
    await fake.controller.step();
    const started = await describeNow(resource);
    expect(started.phase).toBe('started');
    expect(started.finished).toBeUndefined();
    expect(started.placement).toMatchObject({ namespace: NAMESPACE, node: 'fake-node-1' });
  });

  it('reports pending, not Ready, for a Pod that reports Ready but was never scheduled', async () => {
    const { resource, pod } = await provisioned(5);
    fake.objects.mutate(podRef(pod), (object: KubeObject) => {
      const status = (object.status ??= {}) as { conditions?: { type: string; status: string }[] };
      status.conditions = (status.conditions ?? [])
        .filter((c) => c.type !== 'PodScheduled')
        .map((c) => (c.type === 'Ready' ? { ...c, status: 'True' } : c));
    });
    expect((await describeNow(resource)).phase).toBe('pending');
  });

  it.each([
    ['Succeeded', 'PodSucceeded'],
    ['Failed', 'PodFailed'],
  ] as const)(
    'reports finished (%s) from the Sandbox condition at its current generation',
    async (phase, reason) => {
      const { resource, pod, sandbox } = await provisioned(5);
      fake.controller.finishPod(pod, phase);
      await fake.controller.step();
      expect((await describeNow(resource)).finished).toEqual({ reason });

      // A new spec generation the controller has not observed yet: the old Finished no longer counts.
      fake.objects.mutate(sandboxRef(sandbox), (object: KubeObject) => {
        (object.spec as { shutdownPolicy?: string }).shutdownPolicy = 'Delete';
      });
      expect((await describeNow(resource)).finished).toBeUndefined();
    },
  );
});
