// API-server semantics the adapter relies on, exercised through client-node: status subresource
// isolation, generation and resourceVersion rules, patch formats, finalizers, paging, faults.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { skipWithoutCrds } from '../../support/crd-dir.ts';
import { PatchStrategy, failureOf, kubeClients, setHeaderOptions, type KubeClients } from './clients.ts';
import { sandboxClaim } from './fixtures.ts';
import { startFakeKubeApi, type FakeKubeApi } from './index.ts';

const ns = 'api';
const EXT = {
  group: 'extensions.agents.x-k8s.io',
  version: 'v1beta1',
  namespace: ns,
  plural: 'sandboxclaims',
};
type Claim = {
  metadata: { name: string; resourceVersion: string; generation: number; uid: string; [k: string]: unknown };
  spec: object;
  status?: object;
};

let fake: FakeKubeApi;
let k: KubeClients;
const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

beforeAll(async () => {
  fake = await startFakeKubeApi({ namespace: ns, controller: { paused: true } });
  k = kubeClients(fake.kubeconfig());
});
afterAll(() => fake.close());

const createClaim = async (name: string, extra: object = {}) =>
  (await k.custom.createNamespacedCustomObject({
    ...EXT,
    body: { ...sandboxClaim(name, 'pool'), ...extra },
  })) as Claim;
const getClaim = async (name: string) =>
  (await k.custom.getNamespacedCustomObject({ ...EXT, name })) as Claim;

describe.skipIf(skipWithoutCrds)('writes', () => {
  it('drops status on create and keeps it out of main-resource writes; /status writes only status', async () => {
    const created = await createClaim('status', { status: { sandbox: { name: 'x' } } });
    expect(created.status).toBeUndefined();
    const status = { conditions: [], sandbox: { name: 'mine' } };
    const viaStatus = (await k.custom.replaceNamespacedCustomObjectStatus({
      ...EXT,
      name: 'status',
      body: { ...created, spec: { warmPoolRef: { name: 'changed' } }, status },
    })) as Claim;
    expect(viaStatus).toMatchObject({
      spec: { warmPoolRef: { name: 'pool' } },
      status: { sandbox: { name: 'mine' } },
    });
    expect(viaStatus.metadata.generation).toBe(1);
    const viaMain = (await k.custom.replaceNamespacedCustomObject({
      ...EXT,
      name: 'status',
      body: { ...viaStatus, spec: { warmPoolRef: { name: 'changed' } }, status: {} },
    })) as Claim;
    expect(viaMain).toMatchObject({
      spec: { warmPoolRef: { name: 'changed' } },
      status: { sandbox: { name: 'mine' } },
    });
    expect(viaMain.metadata.generation).toBe(2);
    const body = { status: { sandbox: { name: 'patched' } } };
    const patched = (await k.custom.patchNamespacedCustomObjectStatus(
      { ...EXT, name: 'status', body },
      merge,
    )) as Claim;
    expect(patched.status).toEqual({ conditions: [], sandbox: { name: 'patched' } });
  });

  it('needs a resourceVersion to replace a custom resource, and a no-op write keeps it', async () => {
    const created = await createClaim('versions');
    const { metadata } = created;
    const unversioned = { ...created, metadata: { name: metadata.name } };
    const refused = await failureOf(
      k.custom.replaceNamespacedCustomObject({ ...EXT, name: 'versions', body: unversioned }),
    );
    expect(refused).toMatchObject({
      code: 422,
      status: { details: { causes: [{ field: 'metadata.resourceVersion' }] } },
    });
    const same = (await k.custom.replaceNamespacedCustomObject({
      ...EXT,
      name: 'versions',
      body: created,
    })) as Claim;
    expect(same.metadata.resourceVersion).toBe(metadata.resourceVersion);
    const labelled = (await k.custom.patchNamespacedCustomObject(
      { ...EXT, name: 'versions', body: { metadata: { labels: { a: 'b' } } } },
      merge,
    )) as Claim;
    expect(labelled.metadata.generation).toBe(1);
    expect(Number(labelled.metadata.resourceVersion)).toBeGreaterThan(Number(metadata.resourceVersion));
  });

  it('applies JSON Patch, client-node’s default, and refuses a failed test operation', async () => {
    const created = await createClaim('json-patch');
    const ops = [
      { op: 'test', path: '/metadata/resourceVersion', value: created.metadata.resourceVersion },
      { op: 'add', path: '/metadata/annotations', value: { note: 'x' } },
    ];
    const patched = (await k.custom.patchNamespacedCustomObject({
      ...EXT,
      name: 'json-patch',
      body: ops,
    })) as Claim;
    expect(patched.metadata['annotations']).toEqual({ note: 'x' });
    const stale = await failureOf(
      k.custom.patchNamespacedCustomObject({ ...EXT, name: 'json-patch', body: ops }),
    );
    expect(stale.code).toBe(422);
    expect(fake.requests.at(-1)?.contentType).toBe('application/json-patch+json');
  });

  it('treats a stale resourceVersion in a merge patch as a conflict', async () => {
    await createClaim('merge-rv');
    const body = { metadata: { resourceVersion: '1', labels: { x: 'y' } } };
    const refused = await failureOf(
      k.custom.patchNamespacedCustomObject({ ...EXT, name: 'merge-rv', body }, merge),
    );
    expect(refused).toMatchObject({ code: 409, status: { reason: 'Conflict' } });
  });

  it('fills generateName', async () => {
    const body = { ...sandboxClaim('x', 'pool'), metadata: { generateName: 'lease-' } };
    const created = (await k.custom.createNamespacedCustomObject({ ...EXT, body })) as Claim;
    expect(created.metadata.name).toMatch(/^lease-[a-z0-9]{5}$/);
  });
});

describe.skipIf(skipWithoutCrds)('deletion', () => {
  it('keeps an object with finalizers until the last one is removed', async () => {
    await createClaim('finalized', { metadata: { name: 'finalized', finalizers: ['sandlot.dev/hold'] } });
    await k.custom.deleteNamespacedCustomObject({ ...EXT, name: 'finalized' });
    const held = await getClaim('finalized');
    expect(held.metadata['deletionTimestamp']).toBeTruthy();
    const adding = await failureOf(
      k.custom.patchNamespacedCustomObject(
        { ...EXT, name: 'finalized', body: { metadata: { finalizers: ['sandlot.dev/hold', 'other'] } } },
        merge,
      ),
    );
    expect(adding.code).toBe(422);
    await k.custom.patchNamespacedCustomObject(
      { ...EXT, name: 'finalized', body: { metadata: { finalizers: null } } },
      merge,
    );
    expect((await failureOf(getClaim('finalized'))).code).toBe(404);
  });

  it('checks a resourceVersion precondition on delete', async () => {
    await createClaim('rv-precondition');
    const body = { preconditions: { resourceVersion: '1' } };
    const refused = await failureOf(
      k.custom.deleteNamespacedCustomObject({ ...EXT, name: 'rv-precondition', body }),
    );
    expect(refused).toMatchObject({ code: 409, status: { reason: 'Conflict' } });
  });
});

describe.skipIf(skipWithoutCrds)('lists', () => {
  it('pages with limit and continue', async () => {
    for (const name of ['page-a', 'page-b', 'page-c'])
      await createClaim(name, { metadata: { name, labels: { page: 'yes' } } });
    const first = (await k.custom.listNamespacedCustomObject({
      ...EXT,
      labelSelector: 'page=yes',
      limit: 2,
    })) as { items: Claim[]; metadata: { continue?: string } };
    expect(first.items.map((i) => i.metadata.name)).toEqual(['page-a', 'page-b']);
    const rest = (await k.custom.listNamespacedCustomObject({
      ...EXT,
      labelSelector: 'page=yes',
      limit: 2,
      _continue: first.metadata.continue ?? '',
    })) as { items: Claim[] };
    expect(rest.items.map((i) => i.metadata.name)).toEqual(['page-c']);
  });

  it('rejects an unparseable selector and an unsupported field', async () => {
    expect(
      (await failureOf(k.custom.listNamespacedCustomObject({ ...EXT, labelSelector: 'a in (b' }))).code,
    ).toBe(400);
    expect(
      (await failureOf(k.custom.listNamespacedCustomObject({ ...EXT, fieldSelector: 'spec.x=y' }))).code,
    ).toBe(400);
  });
});

describe.skipIf(skipWithoutCrds)('faults', () => {
  it('fails the next matching requests with the given status, then recovers', async () => {
    fake.faults.failNext({ verb: 'get', resource: 'sandboxclaims', name: 'page-a' }, 503, 2);
    expect(await failureOf(getClaim('page-a'))).toMatchObject({
      code: 503,
      status: { reason: 'ServiceUnavailable' },
    });
    expect((await failureOf(getClaim('page-a'))).code).toBe(503);
    expect((await getClaim('page-a')).metadata.name).toBe('page-a');
    fake.faults.failNext({ verb: 'create', resource: 'sandboxclaims' }, 409);
    expect((await failureOf(createClaim('never'))).status.reason).toBe('AlreadyExists');
    expect(
      fake.objects.get({
        apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
        kind: 'SandboxClaim',
        namespace: ns,
        name: 'never',
      }),
    ).toBeUndefined();
  });

  it('fails lists, delays answers, and clears', async () => {
    fake.faults.listErrors('sandboxclaims', 1);
    expect((await failureOf(k.custom.listNamespacedCustomObject(EXT))).code).toBe(500);
    fake.faults.latency(60);
    const started = Date.now();
    await k.custom.listNamespacedCustomObject(EXT);
    expect(Date.now() - started).toBeGreaterThanOrEqual(50);
    fake.faults.failNext({ resource: 'sandboxclaims' }, 500);
    fake.faults.clear();
    await k.custom.listNamespacedCustomObject(EXT);
  });

  it('drops the answer to a delete after performing it', async () => {
    await createClaim('drop-delete');
    fake.faults.dropResponseAfterApply({ verb: 'delete', name: 'drop-delete' });
    await expect(k.custom.deleteNamespacedCustomObject({ ...EXT, name: 'drop-delete' })).rejects.toThrow();
    expect(
      fake.requests.filter((r) => r.name === 'drop-delete' && r.verb === 'delete').map((r) => r.status),
    ).toEqual([0]);
    expect((await failureOf(getClaim('drop-delete'))).code).toBe(404);
  });
});

describe.skipIf(skipWithoutCrds)('the Pod log subresource', () => {
  const pod = (name: string, containers: string[], init: string[] = []) =>
    k.core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name },
        spec: {
          containers: containers.map((c) => ({ name: c, image: 'i' })),
          ...(init.length > 0 ? { initContainers: init.map((c) => ({ name: c, image: 'i' })) } : {}),
        },
      },
    });

  it('serves what a container printed: the last tailLines lines, then the first limitBytes bytes', async () => {
    await pod('logs', ['main'], ['helper']);
    fake.podLogs.set(ns, 'logs', 'main', 'one\ntwo\nthree\nfour');
    fake.podLogs.set(ns, 'logs', 'helper', 'helper output\n');
    const read = (query: { tailLines?: number; limitBytes?: number; container?: string }) =>
      k.core.readNamespacedPodLog({ namespace: ns, name: 'logs', container: 'main', ...query });
    expect(await read({})).toBe('one\ntwo\nthree\nfour');
    expect(await read({ tailLines: 2 })).toBe('three\nfour');
    expect(await read({ tailLines: 3, limitBytes: 7 })).toBe('two\nthr');
    expect(await read({ tailLines: 0 })).toBe('');
    expect(await read({ tailLines: 10, limitBytes: 1000 })).toBe('one\ntwo\nthree\nfour');
    expect(await read({ container: 'helper' })).toBe('helper output\n');
    const request = fake.requests.at(-1);
    expect(request).toMatchObject({ verb: 'get', resource: 'pods', subresource: 'log', name: 'logs' });
  });

  it('answers an empty log for a container that printed nothing, and refuses what the API refuses', async () => {
    await pod('quiet', ['only']);
    expect(await k.core.readNamespacedPodLog({ namespace: ns, name: 'quiet' })).toBe('');
    await pod('two', ['a', 'b']);
    const noContainer = await failureOf(k.core.readNamespacedPodLog({ namespace: ns, name: 'two' }));
    expect(noContainer).toMatchObject({ code: 400, status: { reason: 'BadRequest' } });
    expect(noContainer.status.message).toContain('a container name must be specified for pod two');
    const wrong = await failureOf(
      k.core.readNamespacedPodLog({ namespace: ns, name: 'two', container: 'c' }),
    );
    expect(wrong.status.message).toBe('container c is not valid for pod two');
    const limit = await failureOf(
      k.core.readNamespacedPodLog({ namespace: ns, name: 'two', container: 'a', limitBytes: 0 }),
    );
    expect(limit).toMatchObject({ code: 422, status: { reason: 'Invalid' } });
    const absent = await failureOf(k.core.readNamespacedPodLog({ namespace: ns, name: 'absent' }));
    expect(absent).toMatchObject({ code: 404, status: { reason: 'NotFound', details: { name: 'absent' } } });
    fake.faults.failNext({ verb: 'get', resource: 'pods', subresource: 'log' }, 500);
    const injected = await failureOf(k.core.readNamespacedPodLog({ namespace: ns, name: 'quiet' }));
    expect(injected.code).toBe(500);
  });
});
