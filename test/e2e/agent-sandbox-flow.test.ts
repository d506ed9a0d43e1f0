// The whole E2 flow (HTTP → actor → worker → provider) with SANDLOT_PROVIDER=agent-sandbox: the
// production adapter against the fake Kubernetes API, which validates every object against the
// real Agent Sandbox CRD schemas and runs the claim → Sandbox → Pod controllers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  NAMESPACE,
  adapterOn,
  runtimeClassObject,
  withWorkspaces,
} from '../../providers/agent-sandbox/fake-cluster-harness.ts';
import { readVolume } from '../../store/workspaces.ts';
import { startFakeKubeApi, type FakeKubeApi } from '../fakes/kube-api/index.ts';
import { openBackend, type BackendHandle } from '../support/databases.ts';
import { buildHarness, type Harness } from '../support/harness.ts';
import {
  json,
  provisionBody,
  setupScenario,
  waitForLease,
  waitForLifecycle,
} from '../support/sandbox-flow.ts';

const EXT = 'extensions.agents.x-k8s.io/v1beta1';

describe('sandbox lifecycle on the Agent Sandbox adapter against the fake Kubernetes API', () => {
  let fake: FakeKubeApi;
  let handle: BackendHandle;
  let h: Harness;

  beforeAll(async () => {
    fake = await startFakeKubeApi({ namespace: NAMESPACE });
    fake.objects.put(runtimeClassObject());
    handle = await openBackend('postgres');
    h = await buildHarness(handle.db, {
      workers: { callTimeoutMs: 15_000, observeEveryMs: 200 },
      sandboxProvider: withWorkspaces(fake, adapterOn(fake)),
    });
  });
  afterAll(async () => {
    await h.close();
    await handle.close();
    await fake.close();
  });

  const inNamespace = (kind: string, apiVersion = EXT) =>
    fake.objects.list({ apiVersion, kind }, { namespace: NAMESPACE });

  it('provisions a claim to Active with the pod started, then releases it and leaves nothing behind', async () => {
    const s = await setupScenario(h, { run: 'run-k8s' });
    const provider = await json<{ providerId: string }>(
      await h.request('GET', '/admin/provider', { token: await h.token('acme', 'ops', { operator: true }) }),
    );
    expect(provider.providerId).toBe('agent-sandbox');

    const provisioned = await h.request('POST', `${s.base}/sandbox/provision`, {
      token: s.token,
      body: provisionBody(s),
    });
    expect(provisioned.status).toBe(202);
    const lease = await waitForLease(h, s, (l) => l['state'] === 'Active', 30_000);
    expect(inNamespace('SandboxClaim')).toHaveLength(1);
    expect(inNamespace('SandboxTemplate')).toHaveLength(1);
    expect(inNamespace('SandboxWarmPool')).toHaveLength(1);

    // Ready for dispatch only once the exact observation reaches `started`.
    const until = Date.now() + 20_000;
    let ready = false;
    while (!ready && Date.now() < until) {
      const inspected = await json<{ readyForDispatch: boolean }>(
        await h.request('GET', `${s.base}/sandbox?networkPolicyGeneration=1`, { token: s.token }),
      );
      ready = inspected.readyForDispatch;
      if (!ready) await new Promise((r) => setTimeout(r, 100));
    }
    expect(ready).toBe(true);

    const release = await h.request('POST', `${s.base}/release`, {
      token: s.token,
      body: { expectedLifecycleGeneration: 1, idempotencyKey: 'rel-k8s' },
    });
    expect(release.status).toBe(202);
    await waitForLifecycle(h, s, 'Released', 30_000);
    const final = await waitForLease(h, s, (l) => l['state'] === 'Released');
    expect(final['operationId']).toBe(lease['operationId']);
    for (const kind of ['SandboxClaim', 'SandboxTemplate', 'SandboxWarmPool'])
      expect(inNamespace(kind)).toEqual([]);
    expect(inNamespace('Sandbox', 'agents.x-k8s.io/v1beta1')).toEqual([]);
    expect(inNamespace('Pod', 'v1')).toEqual([]);
    expect((await readVolume(h.db, s.volume.volumeId))?.state).toBe('Available');
    // Every delete of the claim carried a UID precondition.
    const claimDeletes = fake.requests.filter((r) => r.verb === 'delete' && r.resource === 'sandboxclaims');
    expect(claimDeletes.length).toBeGreaterThan(0);
    for (const r of claimDeletes) {
      expect((r.body as { preconditions?: { uid?: string } } | undefined)?.preconditions?.uid).toEqual(
        expect.any(String),
      );
    }
  }, 90_000);

  it('retires placement when the pod finishes, keeps the Environment Registered, and provisions anew', async () => {
    const s = await setupScenario(h, { run: 'run-k8s-retire' });
    await h.request('POST', `${s.base}/sandbox/provision`, {
      token: s.token,
      body: provisionBody(s, 'first'),
    });
    const lease = await waitForLease(
      h,
      s,
      (l) => l['state'] === 'Active' && l['phase'] === 'started',
      30_000,
    );
    const claim = inNamespace('SandboxClaim').find(
      (c) => c.metadata.labels?.['sandlot.dev/operation-id'] === lease['operationId'],
    );
    expect(claim).toBeDefined();
    fake.controller.finishPod(claim!.metadata.name, 'Succeeded', NAMESPACE);

    // The observer sees Finished=True at the current generation: the lease is retired on its own.
    const retired = await waitForLease(h, s, (l) => l['state'] === 'Released', 30_000);
    expect(retired['resourceGeneration']).toBe(1);
    const lifecycle = await json<{ state: string }>(
      await h.request('GET', `${s.base}/lifecycle`, { token: s.token }),
    );
    expect(lifecycle.state).toBe('Registered');
    expect(inNamespace('SandboxClaim').filter((c) => c.metadata.name === claim!.metadata.name)).toEqual([]);

    // A retired Sandbox is never revived: a new provision makes resource generation 2.
    const again = await h.request('POST', `${s.base}/sandbox/provision`, {
      token: s.token,
      body: provisionBody(s, 'second'),
    });
    expect(again.status).toBe(202);
    expect(await json(again)).toMatchObject({ resourceGeneration: 2, state: 'Provisioning' });
    await waitForLease(h, s, (l) => l['state'] === 'Active' && l['resourceGeneration'] === 2, 30_000);
  }, 90_000);
});
