// The fake Kubernetes API as the production adapter will meet it: real TLS, a bearer token, and
// client-node v2's CustomObjectsApi / CoreV1Api / NodeV1Api requests, answered with real Status errors.
import { get } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { skipWithoutCrds } from '../support/crd-dir.ts';
import {
  PatchStrategy,
  failureOf,
  kubeClients,
  setHeaderOptions,
  type KubeClients,
} from '../fakes/kube-api/clients.ts';
import { runtimeClass, sandboxClaim, sandboxTemplate, warmPool } from '../fakes/kube-api/fixtures.ts';
import {
  createCertificateAuthority,
  startFakeKubeApi,
  type FakeKubeApi,
  type KubeObject,
} from '../fakes/kube-api/index.ts';

const ns = 'sandlot';
let fake: FakeKubeApi;
let k: KubeClients;

beforeAll(async () => {
  fake = await startFakeKubeApi({ namespace: ns, controller: { paused: true, podLingerSteps: 2 } });
  k = kubeClients(fake.kubeconfig());
  await k.node.createRuntimeClass({ body: runtimeClass('kata') });
});
afterAll(() => fake.close());

/** CustomObjectsApi coordinates for an Agent Sandbox plural in the test namespace. */
const at = (plural: string) => ({
  group: plural === 'sandboxes' ? 'agents.x-k8s.io' : 'extensions.agents.x-k8s.io',
  version: 'v1beta1',
  namespace: ns,
  plural,
});
const create = async (plural: string, body: object) =>
  (await k.custom.createNamespacedCustomObject({ ...at(plural), body })) as KubeObject;
const read = async (plural: string, name: string) =>
  (await k.custom.getNamespacedCustomObject({ ...at(plural), name })) as KubeObject;
const readPod = (name: string) => k.core.readNamespacedPod({ name, namespace: ns });
const causes = (status: { details?: { causes?: { field: string }[] } }) =>
  status.details?.causes?.map((c) => c.field);

describe.skipIf(skipWithoutCrds)('fake Kubernetes API: verbs and errors', () => {
  it('creates, reads, replaces, patches and deletes, answering AlreadyExists and NotFound', async () => {
    const templates = at('sandboxtemplates');
    const created = await create('sandboxtemplates', sandboxTemplate('crud'));
    expect(created.metadata).toMatchObject({ name: 'crud', namespace: ns, generation: 1 });
    expect(created.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(await failureOf(create('sandboxtemplates', sandboxTemplate('crud')))).toMatchObject({
      code: 409,
      status: { kind: 'Status', reason: 'AlreadyExists', details: { name: 'crud' } },
    });

    const changed = { ...created, spec: { ...created.spec, service: true } };
    const stale = { ...changed, metadata: { ...created.metadata, resourceVersion: '1' } };
    const conflict = await failureOf(
      k.custom.replaceNamespacedCustomObject({ ...templates, name: 'crud', body: stale }),
    );
    expect(conflict).toMatchObject({ code: 409, status: { reason: 'Conflict' } });
    const replaced = (await k.custom.replaceNamespacedCustomObject({
      ...templates,
      name: 'crud',
      body: changed,
    })) as KubeObject;
    expect(replaced.metadata.generation).toBe(2);

    const labels = { metadata: { labels: { tier: 'gold' } } };
    const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
    const patched = (await k.custom.patchNamespacedCustomObject(
      { ...templates, name: 'crud', body: labels },
      merge,
    )) as KubeObject;
    expect(patched.metadata).toMatchObject({ labels: { tier: 'gold' }, generation: 2 });

    await k.custom.deleteNamespacedCustomObject({ ...templates, name: 'crud' });
    expect(await failureOf(read('sandboxtemplates', 'crud'))).toMatchObject({
      code: 404,
      status: { reason: 'NotFound', details: { name: 'crud', kind: 'sandboxtemplates' } },
    });
  });

  it('rejects a SandboxClaim with an unknown field, naming the field', async () => {
    const { code, status } = await failureOf(
      create('sandboxclaims', sandboxClaim('odd', 'pool', { bogus: true })),
    );
    expect(code).toBe(422);
    expect(status.reason).toBe('Invalid');
    expect(causes(status)).toEqual(['spec.bogus']);
  });

  it('rejects wrongly typed fields in Sandbox and SandboxWarmPool specs', async () => {
    const podTemplate = { spec: { containers: [{ name: 'main', image: 'x' }] } };
    const sandbox = { apiVersion: 'agents.x-k8s.io/v1beta1', kind: 'Sandbox', metadata: { name: 'typed' } };
    const bad = await failureOf(create('sandboxes', { ...sandbox, spec: { service: 'yes', podTemplate } }));
    expect(bad).toMatchObject({
      code: 422,
      status: { details: { causes: [{ field: 'spec.service', reason: 'FieldValueTypeInvalid' }] } },
    });
    const pool = {
      ...warmPool('typed', 'tpl'),
      spec: { replicas: 'x', sandboxTemplateRef: { name: 'tpl' } },
    };
    expect(causes((await failureOf(create('sandboxwarmpools', pool))).status)).toEqual(['spec.replicas']);
  });

  it('rejects bad names, bad label values and a namespace that differs from the path', async () => {
    const badName = await failureOf(create('sandboxclaims', sandboxClaim('Not_DNS', 'p')));
    expect(badName.code).toBe(422);
    expect(causes(badName.status)).toEqual(['metadata.name']);
    const spec = { containers: [{ name: 'c', image: 'i' }] };
    const longLabel = { metadata: { name: 'labelled', labels: { a: 'x'.repeat(64) } }, spec };
    expect((await failureOf(k.core.createNamespacedPod({ namespace: ns, body: longLabel }))).code).toBe(422);
    const elsewhere = {
      ...sandboxClaim('elsewhere', 'p'),
      metadata: { name: 'elsewhere', namespace: 'other' },
    };
    expect((await failureOf(create('sandboxclaims', elsewhere))).code).toBe(400);
  });

  it('refuses a delete whose UID precondition does not match, and records the precondition', async () => {
    await create('sandboxclaims', sandboxClaim('precond', 'none'));
    const body = { preconditions: { uid: '00000000-0000-0000-0000-000000000000' } };
    const refused = await failureOf(
      k.custom.deleteNamespacedCustomObject({ ...at('sandboxclaims'), name: 'precond', body }),
    );
    expect(refused).toMatchObject({ code: 409, status: { reason: 'Conflict' } });
    expect(refused.status.message).toContain('Precondition failed: UID in precondition');
    const deletes = fake.requests.filter((r) => r.verb === 'delete' && r.name === 'precond');
    expect(deletes.at(-1)?.body).toMatchObject(body);
    expect((await read('sandboxclaims', 'precond')).metadata.name).toBe('precond');
  });

  it('lists with label selectors: equality, inequality, existence and sets', async () => {
    const spec = { containers: [{ name: 'c', image: 'i' }] };
    for (const [name, labels] of [
      ['sel-a', { team: 'x', tier: 'web' }],
      ['sel-b', { team: 'y' }],
      ['sel-c', { team: 'z', tier: 'db' }],
    ] as const) {
      await k.core.createNamespacedPod({ namespace: ns, body: { metadata: { name, labels }, spec } });
    }
    const names = async (labelSelector: string, fieldSelector?: string) =>
      (
        await k.core.listNamespacedPod({
          namespace: ns,
          labelSelector,
          ...(fieldSelector ? { fieldSelector } : {}),
        })
      ).items.map((p) => p.metadata?.name);
    expect(await names('team in (x,y)')).toEqual(['sel-a', 'sel-b']);
    expect(await names('team,!tier')).toEqual(['sel-b']);
    expect(await names('team!=x,tier')).toEqual(['sel-c']);
    expect(await names('team notin (x),team=z')).toEqual(['sel-c']);
    expect(await names('team', 'metadata.name=sel-b')).toEqual(['sel-b']);
  });
});

describe.skipIf(skipWithoutCrds)('fake Kubernetes API: controller', () => {
  beforeAll(async () => {
    const labels = { app: 'runner', 'agents.x-k8s.io/spoof': 'x' };
    await create('sandboxtemplates', sandboxTemplate('runner', { labels }));
    await create('sandboxwarmpools', warmPool('runners', 'runner'));
  });

  it('drives a claim to a running Sandbox and Pod', async () => {
    const claim = await create('sandboxclaims', sandboxClaim('lease-1', 'runners'));
    await fake.controller.step();
    const sandbox = await read('sandboxes', 'lease-1');
    expect(sandbox.metadata.labels).toMatchObject({ 'agents.x-k8s.io/claim-uid': claim.metadata.uid });
    expect(sandbox.metadata.ownerReferences).toEqual([
      expect.objectContaining({
        kind: 'SandboxClaim',
        uid: claim.metadata.uid,
        controller: true,
        blockOwnerDeletion: true,
      }),
    ]);

    await fake.controller.step();
    const pod = await readPod('lease-1');
    expect(pod.spec?.runtimeClassName).toBe('kata');
    expect(pod.spec?.securityContext?.runAsNonRoot).toBe(true);
    expect(pod.metadata?.labels?.['app']).toBe('runner');
    expect(pod.metadata?.labels?.['agents.x-k8s.io/sandbox-name-hash']).toMatch(/^[0-9a-f]{8}$/);
    expect(pod.metadata?.labels).not.toHaveProperty('agents.x-k8s.io/spoof');
    expect(pod.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'Sandbox', uid: sandbox.metadata.uid });

    await fake.controller.step();
    const scheduled = await readPod('lease-1');
    expect(scheduled.spec?.nodeName).toBeTruthy();
    expect(scheduled.status?.conditions?.find((c) => c.type === 'PodScheduled')?.status).toBe('True');
    await fake.controller.step();
    const pulled = (await readPod('lease-1')).status?.containerStatuses?.[0];
    expect(pulled?.imageID).toContain('@sha256:');
    expect(pulled?.state?.waiting).toBeDefined();
    await fake.controller.settle();
    const running = await readPod('lease-1');
    expect(running.status?.phase).toBe('Running');
    expect(running.status?.podIP).toBeTruthy();
    expect(running.status?.containerStatuses?.[0]?.state?.running?.startedAt).toBeInstanceOf(Date);

    const bound = await read('sandboxclaims', 'lease-1');
    expect(bound.status?.['sandbox']).toMatchObject({ name: 'lease-1' });
    const ready = (bound.status?.['conditions'] as { type: string }[]).find((c) => c.type === 'Ready');
    expect(ready).toMatchObject({ status: 'True', reason: 'DependenciesReady' });
  });

  it('keeps a foreground-deleted claim, with a deletionTimestamp, until its Sandbox and Pod are gone', async () => {
    await create('sandboxclaims', sandboxClaim('lease-2', 'runners'));
    await fake.controller.settle();
    const claim = { ...at('sandboxclaims'), name: 'lease-2' };
    await k.custom.deleteNamespacedCustomObject({ ...claim, propagationPolicy: 'Foreground' });
    const deleting = await read('sandboxclaims', 'lease-2');
    expect(deleting.metadata.deletionTimestamp).toBeTruthy();
    expect(deleting.metadata.finalizers).toEqual(['foregroundDeletion']);

    await fake.controller.step(); // the garbage collector deletes the Sandbox in the foreground
    expect((await read('sandboxes', 'lease-2')).metadata.deletionTimestamp).toBeTruthy();
    await fake.controller.step(); // …then its Pod, which lingers (podLingerSteps: 2)
    expect((await readPod('lease-2')).metadata?.deletionTimestamp).toBeInstanceOf(Date);
    expect((await read('sandboxclaims', 'lease-2')).metadata.name).toBe('lease-2');

    await fake.controller.settle();
    expect((await failureOf(readPod('lease-2'))).code).toBe(404);
    expect((await failureOf(read('sandboxes', 'lease-2'))).code).toBe(404);
    expect((await failureOf(read('sandboxclaims', 'lease-2'))).code).toBe(404);
  });
});

describe.skipIf(skipWithoutCrds)('fake Kubernetes API: transport', () => {
  it('fails TLS for a client that trusts another CA', async () => {
    const other = await createCertificateAuthority('another-ca');
    const before = fake.requests.length;
    const stranger = kubeClients(fake.kubeconfig({ caPem: other.caPem }));
    await expect(stranger.core.listNamespacedPod({ namespace: ns })).rejects.toThrow();
    expect(fake.requests.length).toBe(before);
  });

  it('answers 401 to a request without the token', async () => {
    const status = await new Promise<number | undefined>((resolve, reject) => {
      get(`${fake.url}/api/v1/namespaces/${ns}/pods`, { ca: fake.caPem }, (res) => {
        res.resume();
        resolve(res.statusCode);
      }).on('error', reject);
    });
    expect(status).toBe(401);
    const anonymous = kubeClients(fake.kubeconfig({ token: 'wrong' }));
    expect((await failureOf(anonymous.core.listNamespacedPod({ namespace: ns }))).code).toBe(401);
    expect(fake.requests.at(-1)?.status).toBe(401);
  });

  it('applies a create whose answer is dropped: the client errors, the object exists', async () => {
    fake.faults.dropResponseAfterApply({ verb: 'create', resource: 'sandboxclaims' });
    await expect(create('sandboxclaims', sandboxClaim('dropped', 'runners'))).rejects.toThrow();
    const ref = { apiVersion: 'extensions.agents.x-k8s.io/v1beta1', kind: 'SandboxClaim', namespace: ns };
    expect(fake.objects.get({ ...ref, name: 'dropped' })?.metadata.uid).toBeTruthy();
  });
});
