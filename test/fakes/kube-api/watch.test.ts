// Watch as client-go and client-node expect it: a chunked stream of one JSON event per line, the
// current state first or a replay from a resourceVersion (410 Expired once it is too old), selector
// transitions as ADDED/DELETED, bookmarks, timeoutSeconds, and streams that end with the client,
// the server or an injected fault. Every wait is on an event or the end of a stream.
import { KubeConfig, Watch } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { PatchStrategy, failureOf, kubeClients, setHeaderOptions, type KubeClients } from './clients.ts';
import { startFakeKubeApi, type FakeKubeApi, type PlantedObject } from './index.ts';
import { openWatch } from './watch-client.ts';
import { skipWithoutCrds } from '../../support/crd-dir.ts';

const pod = (namespace: string, name: string, labels: Record<string, string> = {}): PlantedObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace, labels },
  spec: { containers: [{ name: 'main', image: 'busybox' }] },
});
const podRef = (namespace: string, name: string) => ({ apiVersion: 'v1', kind: 'Pod', namespace, name });
const podsOf = (namespace: string) => `/api/v1/namespaces/${namespace}/pods`;
const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

let fake: FakeKubeApi;
let k: KubeClients;

beforeAll(async () => {
  if (skipWithoutCrds) return;
  fake = await startFakeKubeApi({ controller: { paused: true }, watch: { bookmarkIntervalMs: 100 } });
  k = kubeClients(fake.kubeconfig());
});
afterAll(() => fake?.close());

describe.skipIf(skipWithoutCrds)('the stream', () => {
  it('starts with an ADDED event for every current matching object when no resourceVersion is given', async () => {
    fake.objects.put(pod('initial', 'b', { app: 'web' }));
    fake.objects.put(pod('initial', 'a', { app: 'web' }));
    fake.objects.put(pod('initial', 'db', { app: 'db' }));
    const watch = await openWatch(fake, podsOf('initial'), { labelSelector: 'app=web' });
    expect(watch.status).toBe(200);
    expect(watch.headers['content-type']).toBe('application/json');
    expect(watch.headers['transfer-encoding']).toBe('chunked');
    const initial = await watch.take(2);
    expect(initial).toEqual([
      { type: 'ADDED', object: fake.objects.get(podRef('initial', 'a')) },
      { type: 'ADDED', object: fake.objects.get(podRef('initial', 'b')) },
    ]);
    fake.objects.put(pod('initial', 'c', { app: 'web' }));
    expect(await watch.next()).toEqual({ type: 'ADDED', object: fake.objects.get(podRef('initial', 'c')) });
    const fromZero = await openWatch(fake, podsOf('initial'), {
      labelSelector: 'app=web',
      resourceVersion: '0',
    });
    expect((await fromZero.take(3)).map((e) => [e.type, e.object['metadata']])).toMatchObject([
      ['ADDED', { name: 'a' }],
      ['ADDED', { name: 'b' }],
      ['ADDED', { name: 'c' }],
    ]);
    watch.disconnect();
    fromZero.disconnect();
    const recorded = fake.requests.filter((r) => r.verb === 'watch' && r.namespace === 'initial');
    expect(recorded.map((r) => [r.resource, r.status])).toEqual([
      ['pods', 200],
      ['pods', 200],
    ]);
  });

  it('sends live ADDED, MODIFIED and DELETED events, judged by the selector before and after', async () => {
    const watch = await openWatch(fake, podsOf('live'), { labelSelector: 'app=web' });
    const web = fake.objects.put(pod('live', 'web', { app: 'web' }));
    fake.objects.put(pod('live', 'db', { app: 'db' })); // never matches: no event
    const noted = fake.objects.mutate(podRef('live', 'web'), (p) => (p.metadata.annotations = { n: '1' }));
    const relabelled = fake.objects.mutate(podRef('live', 'web'), (p) => (p.metadata.labels = { app: 'db' }));
    const joined = fake.objects.mutate(podRef('live', 'db'), (p) => (p.metadata.labels = { app: 'web' }));
    const last = fake.objects.get(podRef('live', 'db'));
    fake.objects.remove(podRef('live', 'db'));
    const events = await watch.take(5);
    expect(events.map((e) => e.type)).toEqual(['ADDED', 'MODIFIED', 'DELETED', 'ADDED', 'DELETED']);
    expect(events[0]?.object).toEqual(web);
    expect(events[1]?.object).toEqual(noted);
    // Leaving the selector: the last state this watcher could see, at the version of the change.
    expect(events[2]?.object).toEqual({
      ...noted,
      metadata: { ...noted.metadata, resourceVersion: relabelled.metadata.resourceVersion },
    });
    expect(events[3]?.object).toEqual(joined);
    // A removal takes a resourceVersion of its own.
    expect(events[4]?.object).toEqual({
      ...last,
      metadata: { ...last?.metadata, resourceVersion: String(fake.objects.revision) },
    });
    expect(fake.objects.revision).toBeGreaterThan(Number(joined.metadata.resourceVersion));
    watch.disconnect();
  });

  it('reports a deletion held by a finalizer as MODIFIED, and its removal as DELETED', async () => {
    fake.objects.put({
      ...pod('held', 'p'),
      metadata: { name: 'p', namespace: 'held', finalizers: ['x/hold'] },
    });
    const watch = await openWatch(fake, podsOf('held'), { resourceVersion: String(fake.objects.revision) });
    await k.core.deleteNamespacedPod({ namespace: 'held', name: 'p' });
    const deleting = await watch.next();
    expect(deleting).toMatchObject({ type: 'MODIFIED', object: { metadata: { finalizers: ['x/hold'] } } });
    expect(deleting.object['metadata']).toHaveProperty('deletionTimestamp');
    await k.core.patchNamespacedPod(
      { namespace: 'held', name: 'p', body: { metadata: { finalizers: null } } },
      merge,
    );
    expect(await watch.next()).toMatchObject({
      type: 'DELETED',
      object: { metadata: { name: 'p', resourceVersion: String(fake.objects.revision) } },
    });
    watch.disconnect();
  });

  it('watches cluster-scoped kinds and namespaced kinds across namespaces, with a metadata.name field selector', async () => {
    const runtimeClasses = await openWatch(fake, '/apis/node.k8s.io/v1/runtimeclasses');
    const named = await openWatch(fake, '/api/v1/pods', {
      fieldSelector: 'metadata.name=twin',
      resourceVersion: String(fake.objects.revision),
    });
    const gvisor = fake.objects.put({
      apiVersion: 'node.k8s.io/v1',
      kind: 'RuntimeClass',
      metadata: { name: 'gvisor' },
      handler: 'runsc',
    });
    expect(await runtimeClasses.next()).toEqual({ type: 'ADDED', object: gvisor });
    fake.objects.put(pod('one', 'twin'));
    fake.objects.put(pod('one', 'other'));
    fake.objects.put(pod('two', 'twin'));
    expect((await named.take(2)).map((e) => e.object['metadata'])).toMatchObject([
      { namespace: 'one', name: 'twin' },
      { namespace: 'two', name: 'twin' },
    ]);
    runtimeClasses.disconnect();
    named.disconnect();
    const refused = await openWatch(fake, podsOf('one'), { fieldSelector: 'spec.bogus=x' });
    expect(refused).toMatchObject({ status: 400, body: { reason: 'BadRequest' } });
    const unparsable = await openWatch(fake, podsOf('one'), { labelSelector: 'a in (b' });
    expect(unparsable.status).toBe(400);
  });

  it('is what client-node’s Watch reads, for a custom kind too', async () => {
    const config = new KubeConfig();
    config.loadFromString(fake.kubeconfig());
    const seen: [string, unknown][] = [];
    let added!: () => void;
    const first = new Promise<void>((resolve) => (added = resolve));
    let ended!: (error: unknown) => void;
    const done = new Promise<unknown>((resolve) => (ended = resolve));
    const path = '/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/cn/sandboxclaims';
    await new Watch(config).watch(
      path,
      { allowWatchBookmarks: true },
      (type, object: { metadata?: { name?: string } }) => {
        seen.push([type, object.metadata?.name]);
        if (type === 'ADDED') added();
      },
      (error) => ended(error),
    );
    fake.objects.put({
      apiVersion: 'extensions.agents.x-k8s.io/v1beta1',
      kind: 'SandboxClaim',
      metadata: { name: 'claim', namespace: 'cn' },
      spec: { warmPoolRef: { name: 'pool' } },
    });
    await first;
    expect(fake.watches.endAll()).toBeGreaterThanOrEqual(1); // as a server ends a watch after a while
    expect(await done).toBeNull();
    expect(seen.filter(([type]) => type !== 'BOOKMARK')).toEqual([['ADDED', 'claim']]);
  });
});

describe.skipIf(skipWithoutCrds)('resourceVersion', () => {
  it('replays only the events after the version given, and a no-op write sends none', async () => {
    const first = fake.objects.put(pod('resume', 'a'));
    const from = fake.objects.revision;
    const changed = fake.objects.mutate(podRef('resume', 'a'), (p) => (p.metadata.labels = { v: '2' }));
    const second = fake.objects.put(pod('resume', 'b'));
    const watch = await openWatch(fake, podsOf('resume'), { resourceVersion: String(from) });
    expect(await watch.take(2)).toEqual([
      { type: 'MODIFIED', object: changed },
      { type: 'ADDED', object: second },
    ]);
    expect(Number(first.metadata.resourceVersion)).toBe(from);
    // A PUT of the object as stored changes nothing and keeps its resourceVersion: no event.
    const stored = await k.core.readNamespacedPod({ namespace: 'resume', name: 'b' });
    const same = await k.core.replaceNamespacedPod({ namespace: 'resume', name: 'b', body: stored });
    expect(same.metadata?.resourceVersion).toBe(second.metadata.resourceVersion);
    const third = fake.objects.put(pod('resume', 'c'));
    expect(await watch.next()).toEqual({ type: 'ADDED', object: third });
    watch.disconnect();
  });

  it('picks up where a list left off', async () => {
    fake.objects.put(pod('listed', 'a'));
    const list = await k.core.listNamespacedPod({ namespace: 'listed' });
    fake.objects.put(pod('listed', 'b'));
    const watch = await openWatch(fake, podsOf('listed'), {
      resourceVersion: list.metadata?.resourceVersion ?? '',
    });
    expect(await watch.next()).toMatchObject({ type: 'ADDED', object: { metadata: { name: 'b' } } });
    watch.disconnect();
  });
});

describe.skipIf(skipWithoutCrds)('bookmarks', () => {
  it('tell a watcher that asked for them the current version, and nobody else', async () => {
    const plain = await openWatch(fake, podsOf('marks'));
    const marked = await openWatch(fake, podsOf('marks'), {
      allowWatchBookmarks: 'true',
      resourceVersion: String(fake.objects.revision),
    });
    expect(await marked.next()).toEqual({
      type: 'BOOKMARK',
      object: { kind: 'Pod', apiVersion: 'v1', metadata: { resourceVersion: String(fake.objects.revision) } },
    });
    fake.objects.put(pod('elsewhere', 'unseen'));
    const moved = String(fake.objects.revision);
    for (;;) {
      const event = await marked.nextOf('BOOKMARK');
      if ((event.object['metadata'] as { resourceVersion: string }).resourceVersion === moved) break;
    }
    // Bookmarks came to `marked` all along; `plain`, which did not ask, got none before this.
    fake.objects.put(pod('marks', 'seen'));
    expect(await plain.next()).toMatchObject({ type: 'ADDED', object: { metadata: { name: 'seen' } } });
    plain.disconnect();
    marked.disconnect();
  });
});

describe.skipIf(skipWithoutCrds)('the end of a stream', () => {
  it('comes cleanly after timeoutSeconds', async () => {
    const started = performance.now();
    const watch = await openWatch(fake, podsOf('timeout'), { timeoutSeconds: '1' });
    expect(await watch.ended).toBe('end');
    expect(performance.now() - started).toBeGreaterThanOrEqual(900);
  });

  it('frees the subscription when the client goes away', async () => {
    await vi.waitFor(() => expect(fake.watches.open()).toBe(0), { timeout: 10_000 });
    const watch = await openWatch(fake, podsOf('leaving'));
    expect(fake.watches.open()).toBe(1);
    watch.disconnect();
    await vi.waitFor(() => expect(fake.watches.open()).toBe(0), { timeout: 10_000 });
  });

  it('is injected by faults: a failed watch, a dropped one and a cut stream', async () => {
    fake.faults.failNext({ verb: 'watch', resource: 'pods' }, 500);
    fake.faults.listErrors('pods', 1); // lists only: the watch below is not failed by it
    const failed = await openWatch(fake, podsOf('faults'));
    expect(failed).toMatchObject({
      status: 500,
      body: { kind: 'Status', reason: 'InternalError', code: 500 },
    });
    const opened = await openWatch(fake, podsOf('faults'));
    expect(opened.status).toBe(200);
    expect((await failureOf(k.core.listNamespacedPod({ namespace: 'faults' }))).code).toBe(500);
    fake.objects.put(pod('faults', 'p'));
    expect(await opened.next()).toMatchObject({ type: 'ADDED' });
    expect(fake.watches.cutAll()).toBe(1);
    expect(await opened.ended).toBe('cut');
    fake.faults.dropResponseAfterApply({ verb: 'watch' });
    await expect(openWatch(fake, podsOf('faults'))).rejects.toThrow();
    fake.faults.clear();
    const watches = fake.requests.filter((r) => r.verb === 'watch' && r.namespace === 'faults');
    expect(watches.map((r) => r.status)).toEqual([500, 200, 0]);
  });
});

describe.skipIf(skipWithoutCrds)('a short history', () => {
  let small: FakeKubeApi;
  beforeAll(async () => {
    small = await startFakeKubeApi({
      controller: { paused: true },
      watch: { historySize: 3, defaultTimeoutMs: 300 },
    });
  });
  afterAll(() => small.close());

  it('answers a version older than the history with a 410 Expired ERROR event, and ends', async () => {
    const start = small.objects.revision;
    for (const name of ['a', 'b', 'c', 'd', 'e']) small.objects.put(pod('old', name));
    const oldest = start + 2; // the three kept changes came after it
    const watch = await openWatch(small, podsOf('old'), { resourceVersion: String(start) });
    expect(watch.status).toBe(200);
    expect(await watch.next()).toEqual({
      type: 'ERROR',
      object: {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        reason: 'Expired',
        code: 410,
        message: `too old resource version: ${start} (${oldest})`,
      },
    });
    expect(await watch.ended).toBe('end');
    const kept = await openWatch(small, podsOf('old'), { resourceVersion: String(oldest) });
    expect((await kept.take(3)).map((e) => e.object['metadata'])).toMatchObject([
      { name: 'c' },
      { name: 'd' },
      { name: 'e' },
    ]);
    // Without timeoutSeconds the server's default ends it.
    expect(await kept.ended).toBe('end');
  });
});

describe.skipIf(skipWithoutCrds)('a closing server', () => {
  it('ends every open stream, and close() returns', async () => {
    const closing = await startFakeKubeApi({ controller: { paused: true } });
    const pods = await openWatch(closing, '/api/v1/pods', { timeoutSeconds: '600' });
    const classes = await openWatch(closing, '/apis/node.k8s.io/v1/runtimeclasses', {
      allowWatchBookmarks: 'true',
    });
    expect(closing.watches.open()).toBe(2);
    await closing.close();
    expect(await pods.ended).toBe('end');
    expect(await classes.ended).toBe('end');
    expect(closing.watches.open()).toBe(0);
  });
});
