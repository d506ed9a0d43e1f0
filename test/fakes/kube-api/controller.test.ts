// The fake's controller loop against agent-sandbox's documented behaviour: how claims resolve pools
// and templates, how pods get scheduled, finish and are owned, and how deletion cascades.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { skipWithoutCrds } from '../../support/crd-dir.ts';
import { kubeClients, type KubeClients } from './clients.ts';
import { runtimeClass, sandboxClaim, sandboxTemplate, warmPool } from './fixtures.ts';
import { startFakeKubeApi, type Condition, type FakeKubeApi, type KubeObject } from './index.ts';

const ns = 'ctl';
const EXT = { group: 'extensions.agents.x-k8s.io', version: 'v1beta1', namespace: ns };
const SANDBOX = { apiVersion: 'agents.x-k8s.io/v1beta1', kind: 'Sandbox', namespace: ns };
const CLAIM = { apiVersion: 'extensions.agents.x-k8s.io/v1beta1', kind: 'SandboxClaim', namespace: ns };
const POD = { apiVersion: 'v1', kind: 'Pod', namespace: ns };

let fake: FakeKubeApi;
let k: KubeClients;

beforeAll(async () => {
  fake = await startFakeKubeApi({ namespace: ns, controller: { paused: true } });
  k = kubeClients(fake.kubeconfig());
  await k.node.createRuntimeClass({ body: runtimeClass('kata') });
});
afterAll(() => fake.close());

const create = (plural: string, body: object) =>
  k.custom.createNamespacedCustomObject({ ...EXT, plural, body });
const condition = (object: KubeObject | undefined, type: string): Condition | undefined =>
  (object?.status?.['conditions'] as Condition[] | undefined)?.find((c) => c.type === type);
const stored = (ref: { apiVersion: string; kind: string; namespace: string }, name: string) =>
  fake.objects.get({ ...ref, name });

describe.skipIf(skipWithoutCrds)('claims', () => {
  it('reports WarmPoolNotFound, then TemplateNotFound, then binds once both exist', async () => {
    await create('sandboxclaims', sandboxClaim('orphan', 'late-pool'));
    await fake.controller.step();
    expect(condition(stored(CLAIM, 'orphan'), 'Ready')).toMatchObject({
      status: 'False',
      reason: 'WarmPoolNotFound',
    });
    await create('sandboxwarmpools', warmPool('late-pool', 'late-template'));
    await fake.controller.step();
    expect(condition(stored(CLAIM, 'orphan'), 'Ready')).toMatchObject({
      status: 'False',
      reason: 'TemplateNotFound',
    });
    await create('sandboxtemplates', sandboxTemplate('late-template'));
    await fake.controller.settle();
    expect(condition(stored(CLAIM, 'orphan'), 'Ready')).toMatchObject({
      status: 'True',
      reason: 'DependenciesReady',
    });
  });

  it('copies Ready from the Sandbox, with the Sandbox generation as observedGeneration', async () => {
    await create('sandboxtemplates', sandboxTemplate('plain'));
    await create('sandboxwarmpools', warmPool('plain', 'plain'));
    await create('sandboxclaims', sandboxClaim('copy', 'plain'));
    await fake.controller.settle();
    const sandbox = stored(SANDBOX, 'copy');
    expect(sandbox?.metadata.labels).toMatchObject({ 'agents.x-k8s.io/launch-type': 'cold' });
    expect(condition(stored(CLAIM, 'copy'), 'Ready')).toEqual(condition(sandbox, 'Ready'));
    expect(stored(CLAIM, 'copy')?.status?.['sandbox']).toEqual({
      name: 'copy',
      podIPs: sandbox?.status?.['podIPs'],
    });
  });

  it('rejects additionalPodMetadata labels outside the allowed domains', async () => {
    await create(
      'sandboxclaims',
      sandboxClaim('meta', 'plain', { additionalPodMetadata: { labels: { 'sandlot.dev/x': 'y' } } }),
    );
    await fake.controller.step();
    expect(condition(stored(CLAIM, 'meta'), 'Ready')).toMatchObject({
      status: 'False',
      reason: 'InvalidMetadata',
    });
    expect(stored(SANDBOX, 'meta')).toBeUndefined();
  });

  it('refuses to create a pod naming a RuntimeClass that does not exist', async () => {
    await create('sandboxtemplates', sandboxTemplate('gvisor', { runtimeClassName: 'gvisor' }));
    await create('sandboxwarmpools', warmPool('gvisor', 'gvisor'));
    await create('sandboxclaims', sandboxClaim('no-runtime', 'gvisor'));
    await fake.controller.settle();
    const ready = condition(stored(CLAIM, 'no-runtime'), 'Ready');
    expect(ready).toMatchObject({ status: 'False', reason: 'ReconcilerError' });
    expect(ready?.message).toContain('RuntimeClass "gvisor" not found');
  });
});

describe.skipIf(skipWithoutCrds)('sandboxes and pods', () => {
  beforeAll(async () => {
    await create(
      'sandboxtemplates',
      sandboxTemplate('with-pvc', { claimName: 'workspace-data', service: true }),
    );
    await create('sandboxwarmpools', warmPool('with-pvc', 'with-pvc'));
  });

  it('keeps a pod unscheduled while its PVC is missing, then schedules it', async () => {
    await create('sandboxclaims', sandboxClaim('needs-pvc', 'with-pvc'));
    await fake.controller.settle();
    const pod = stored(POD, 'needs-pvc');
    expect(pod?.spec?.['nodeName']).toBeUndefined();
    expect(condition(pod, 'PodScheduled')).toMatchObject({ status: 'False', reason: 'Unschedulable' });
    expect(condition(stored(SANDBOX, 'needs-pvc'), 'PodScheduled')).toMatchObject({
      status: 'False',
      reason: 'Unschedulable',
    });
    await k.core.createNamespacedPersistentVolumeClaim({
      namespace: ns,
      body: {
        metadata: { name: 'workspace-data' },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
      },
    });
    await fake.controller.settle();
    expect(stored(POD, 'needs-pvc')?.status?.['phase']).toBe('Running');
    const sandbox = stored(SANDBOX, 'needs-pvc');
    expect(sandbox?.status?.['serviceFQDN']).toBe(`needs-pvc.${ns}.svc.cluster.local`);
    const service = await k.core.readNamespacedService({ name: 'needs-pvc', namespace: ns });
    expect(service.spec?.clusterIP).toBe('None');
    // The API server's Service defaults: headless is still of type ClusterIP, private to the cluster.
    expect(service.spec?.type).toBe('ClusterIP');
    expect(service.spec?.clusterIPs).toEqual(['None']);
    expect(service.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'Sandbox', controller: true });
  });

  it('gives a Service created without a clusterIP the defaults and a virtual IP', async () => {
    const service = await k.core.createNamespacedService({
      namespace: ns,
      body: { metadata: { name: 'plain' }, spec: { selector: { app: 'x' }, ports: [{ port: 8443 }] } },
    });
    expect(service.spec).toMatchObject({
      type: 'ClusterIP',
      sessionAffinity: 'None',
      ports: [{ port: 8443, protocol: 'TCP', targetPort: 8443 }],
    });
    expect(service.spec?.clusterIP).toMatch(/^10\.96\.0\.\d+$/);
    expect(service.spec?.clusterIPs).toEqual([service.spec?.clusterIP]);
  });

  it('marks the Sandbox Finished when its pod succeeds or fails', async () => {
    fake.controller.finishPod('needs-pvc', 'Failed');
    await fake.controller.settle();
    const sandbox = stored(SANDBOX, 'needs-pvc');
    expect(condition(sandbox, 'Finished')).toMatchObject({ status: 'True', reason: 'PodFailed' });
    expect(condition(sandbox, 'Ready')).toMatchObject({ status: 'False', reason: 'PodFailed' });
    expect(condition(stored(CLAIM, 'needs-pvc'), 'Finished')).toMatchObject({
      status: 'True',
      reason: 'PodFailed',
    });
    fake.controller.finishPod('copy', 'Succeeded');
    await fake.controller.step();
    expect(condition(stored(SANDBOX, 'copy'), 'Finished')).toMatchObject({ reason: 'PodSucceeded' });
  });

  it('stamps observedGeneration on every condition and follows spec changes', async () => {
    fake.objects.mutate({ ...SANDBOX, name: 'orphan' }, (s) => {
      (s.spec as { operatingMode: string }).operatingMode = 'Suspended';
    });
    await fake.controller.settle();
    const sandbox = stored(SANDBOX, 'orphan');
    expect(sandbox?.metadata.generation).toBe(2);
    for (const c of sandbox?.status?.['conditions'] as Condition[]) expect(c.observedGeneration).toBe(2);
    expect(condition(sandbox, 'Suspended')).toMatchObject({ status: 'True', reason: 'PodTerminated' });
    expect(stored(POD, 'orphan')).toBeUndefined();
  });

  it('fails closed with MultiplePods when a second pod is controlled by the Sandbox', async () => {
    const sandbox = stored(SANDBOX, 'copy');
    const owner = sandbox?.metadata.ownerReferences ?? [];
    expect(owner).toHaveLength(1);
    const pod = stored(POD, 'copy');
    if (!pod) throw new Error('expected the pod of sandbox copy');
    fake.objects.put({ ...pod, metadata: { ...pod.metadata, name: 'copy-twin', uid: 'twin-uid' } });
    fake.objects.mutate({ ...POD, name: 'copy' }, (p) => (p.status = { phase: 'Running' }));
    await fake.controller.step();
    expect(condition(stored(SANDBOX, 'copy'), 'Ready')).toMatchObject({
      status: 'False',
      reason: 'MultiplePods',
    });
    expect(stored(SANDBOX, 'copy')?.status?.['podIPs']).toBeUndefined();
  });
});

describe.skipIf(skipWithoutCrds)('deletion', () => {
  it('deletes a claim in the background and cascades to Sandbox, Pod and Service on later passes', async () => {
    await k.custom.deleteNamespacedCustomObject({ ...EXT, plural: 'sandboxclaims', name: 'needs-pvc' });
    expect(stored(CLAIM, 'needs-pvc')).toBeUndefined();
    expect(stored(SANDBOX, 'needs-pvc')).toBeDefined();
    await fake.controller.settle();
    expect(stored(SANDBOX, 'needs-pvc')).toBeUndefined();
    expect(stored(POD, 'needs-pvc')).toBeUndefined();
    expect(
      fake.objects.get({ apiVersion: 'v1', kind: 'Service', namespace: ns, name: 'needs-pvc' }),
    ).toBeUndefined();
    expect(
      fake.objects.get({
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        namespace: ns,
        name: 'workspace-data',
      }),
    ).toBeDefined();
  });

  it('keeps the lifetime of each object it removed: owners, mounted PVCs, when it came and went', () => {
    const lifetime = (kind: string, name: string) =>
      fake.objects.lifetimes().find((l) => l.kind === kind && l.name === name);
    const claim = lifetime('SandboxClaim', 'needs-pvc');
    const sandbox = lifetime('Sandbox', 'needs-pvc');
    const pod = lifetime('Pod', 'needs-pvc');
    expect(sandbox?.ownerUids).toEqual([claim?.uid]);
    expect(pod).toMatchObject({ ownerUids: [sandbox?.uid], claimNames: ['workspace-data'] });
    for (const l of [claim, sandbox, pod]) expect(l?.deletedAtMs).toBeGreaterThan(l?.createdAtMs ?? Infinity);
    // Deleted in the background: the claim went first, its Pod on a later pass.
    expect(claim?.deletedAtMs).toBeLessThanOrEqual(pod?.deletedAtMs ?? -1);
    expect(lifetime('PersistentVolumeClaim', 'workspace-data')?.deletedAtMs).toBeNull();
  });

  it('orphans dependents when asked to', async () => {
    await create('sandboxclaims', sandboxClaim('keep-sandbox', 'plain'));
    await fake.controller.settle();
    await k.custom.deleteNamespacedCustomObject({
      ...EXT,
      plural: 'sandboxclaims',
      name: 'keep-sandbox',
      propagationPolicy: 'Orphan',
    });
    await fake.controller.settle();
    expect(stored(SANDBOX, 'keep-sandbox')?.metadata.ownerReferences).toBeUndefined();
    expect(stored(POD, 'keep-sandbox')).toBeDefined();
  });
});

describe.skipIf(skipWithoutCrds)('the timed loop', () => {
  it('reconciles on its own every intervalMs unless paused', async () => {
    const live = await startFakeKubeApi({ namespace: ns, controller: { intervalMs: 5 } });
    try {
      const client = kubeClients(live.kubeconfig());
      const at = (plural: string) => ({ ...EXT, plural });
      await client.node.createRuntimeClass({ body: runtimeClass('kata') });
      await client.custom.createNamespacedCustomObject({
        ...at('sandboxtemplates'),
        body: sandboxTemplate('t'),
      });
      await client.custom.createNamespacedCustomObject({
        ...at('sandboxwarmpools'),
        body: warmPool('p', 't'),
      });
      await client.custom.createNamespacedCustomObject({
        ...at('sandboxclaims'),
        body: sandboxClaim('auto', 'p'),
      });
      await expect
        .poll(() => condition(live.objects.get({ ...CLAIM, name: 'auto' }), 'Ready')?.status, {
          timeout: 5_000,
        })
        .toBe('True');
      live.controller.pause();
      const steps = live.controller.steps;
      await new Promise((resolve) => setTimeout(resolve, 30));
      expect(live.controller.steps).toBe(steps);
    } finally {
      await live.close();
    }
  });
});
