// The whole E2 flow (HTTP → actor → worker → provider) with SANDLOT_PROVIDER=agent-sandbox: the
// production adapter against the fake Kubernetes API, which validates every object against the
// real Agent Sandbox CRD schemas and runs the claim → Sandbox → Pod controllers. Network policies
// are verified as in production: by reading back the project's CiliumNetworkPolicy planted in the
// fake, never through the admin route and its table.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { skipWithoutCrds } from '../support/crd-dir.ts';
import {
  NAMESPACE,
  adapterOn,
  ciliumPolicyObject,
  refs,
  runtimeClassObject,
  verifierOn,
  withWorkspaces,
} from '../support/fake-cluster-harness.ts';
import { LABELS, objectNames } from '../../providers/agent-sandbox/names.ts';
import { readCurrentLease } from '../../store/leases.ts';
import { readVolume } from '../../store/workspaces.ts';
import { startFakeKubeApi, type FakeKubeApi } from '../fakes/kube-api/index.ts';
import { openBackend, type BackendHandle } from '../support/databases.ts';
import { buildHarness, type Harness } from '../support/harness.ts';
import {
  json,
  provisionBody,
  waitForLease,
  waitForLifecycle,
  type Scenario,
} from '../support/sandbox-flow.ts';
import {
  environmentRows,
  problemOf,
  provisionWith,
  setupCustomScenario,
  slug,
} from '../support/sandbox-scenarios.ts';

const EXT = 'extensions.agents.x-k8s.io/v1beta1';

describe.skipIf(skipWithoutCrds)(
  'sandbox lifecycle on the Agent Sandbox adapter against the fake Kubernetes API',
  () => {
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
        networkPolicies: verifierOn(fake),
      });
    });
    afterAll(async () => {
      await h.close();
      await handle.close();
      await fake.close();
    });

    const inNamespace = (kind: string, apiVersion = EXT) =>
      fake.objects.list({ apiVersion, kind }, { namespace: NAMESPACE });

    /** A project with grants and a run selection but no network policy in the table: only Cilium's. */
    const setup = (project: string, run: string): Promise<Scenario> =>
      setupCustomScenario(h, { project, run, policyGenerations: [] });
    const plantPolicy = (project: string, generation: number) =>
      fake.objects.put(ciliumPolicyObject({ tenantId: 'acme', projectId: project, generation }));
    const inspect = (s: Scenario, generation: number) =>
      h.request('GET', `${s.base}/sandbox?networkPolicyGeneration=${generation}`, { token: s.token });

    it('provisions a claim to Active with the pod started, then releases it and leaves nothing behind', async () => {
      const s = await setup('checkout', 'run-k8s');
      const provider = await json<{ providerId: string }>(
        await h.request('GET', '/admin/provider', {
          token: await h.token('acme', 'ops', { operator: true }),
        }),
      );
      expect(provider.providerId).toBe('agent-sandbox');
      plantPolicy('checkout', 1);

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
        const inspected = await json<{ readyForDispatch: boolean }>(await inspect(s, 1));
        ready = inspected.readyForDispatch;
        if (!ready) await new Promise((r) => setTimeout(r, 100));
      }
      expect(ready).toBe(true);
      // The policy read back selects the very Pod the adapter made.
      const claimName = inNamespace('SandboxClaim')[0]!.metadata.name;
      const podLabels = fake.objects.get(refs.pod(claimName))?.metadata.labels ?? {};
      const selector = ciliumPolicyObject({ tenantId: 'acme', projectId: 'checkout', generation: 1 }).spec
        .endpointSelector.matchLabels;
      for (const [key, value] of Object.entries(selector)) expect(podLabels[key], key).toBe(value);

      // A policy read that fails is neither verified nor unverified: 503, and asking again works.
      fake.faults.listErrors('ciliumnetworkpolicies', 1, 500);
      const unavailable = await inspect(s, 1);
      expect(unavailable.status).toBe(503);
      expect(slug(await problemOf(unavailable))).toBe('network-policy-unavailable');
      expect((await json<{ readyForDispatch: boolean }>(await inspect(s, 1))).readyForDispatch).toBe(true);

      // A newer generation of the project's policy supersedes the lease's: no longer ready.
      plantPolicy('checkout', 2);
      const superseded = await json<{
        readyForDispatch: boolean;
        networkPolicy: { generation: number; verified: boolean };
      }>(await inspect(s, 1));
      expect(superseded).toMatchObject({
        readyForDispatch: false,
        networkPolicy: { generation: 1, verified: false },
      });

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

    it('records the Pod’s placement from later observations when the provision read it back pending', async () => {
      const s = await setup('starting', 'run-k8s-starting');
      plantPolicy('starting', 1);
      // Held controllers: no Sandbox and no Pod yet, so the read-back answers `pending`, as on a real
      // cluster where a Pod takes seconds to start; the lease goes Active with an empty placement.
      fake.controller.pause();
      try {
        const provisioned = await h.request('POST', `${s.base}/sandbox/provision`, {
          token: s.token,
          body: provisionBody(s, 'starting'),
        });
        expect(provisioned.status).toBe(202);
        const pending = await waitForLease(h, s, (l) => l['state'] === 'Active', 30_000);
        expect(pending['phase']).toBe('pending');
        expect((await readCurrentLease(h.db, s.environmentId))?.resource?.placement).toEqual({});
      } finally {
        fake.controller.resume();
      }

      // The observer's exact describes map the Pod and fill in where it runs, not its UID alone.
      await waitForLease(h, s, (l) => l['state'] === 'Active' && l['phase'] === 'started', 30_000);
      const lease = (await readCurrentLease(h.db, s.environmentId))!;
      const { claim } = objectNames(lease.operationId);
      const pod = fake.objects.get(refs.pod(claim))!;
      const sandbox = fake.objects.get(refs.sandbox(claim))!;
      const podIP = (pod.status as { podIP?: string } | undefined)?.podIP;
      expect(podIP).toEqual(expect.any(String));
      expect(lease.resource?.placement).toMatchObject({
        namespace: NAMESPACE,
        claim,
        sandbox: claim,
        sandboxUid: sandbox.metadata.uid,
        pod: claim,
        podUid: pod.metadata.uid,
        podIP,
        node: (pod.spec as { nodeName?: string }).nodeName,
      });
    }, 90_000);

    it('retires placement when the pod finishes, keeps the Environment Registered, and provisions anew', async () => {
      const s = await setup('retire', 'run-k8s-retire');
      plantPolicy('retire', 1);
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

    it('refuses to provision until the project’s Cilium policy is read back, and dispatches nothing meanwhile', async () => {
      const s = await setup('gated', 'run-k8s-gated');
      // The admin route's table says nothing here: only the Cilium policy counts.
      const missing = await h.request('POST', `${s.base}/sandbox/provision`, {
        token: s.token,
        body: provisionWith(s.volume, 'p-missing'),
      });
      expect(missing.status).toBe(409);
      const problem = await problemOf(missing);
      expect(slug(problem)).toBe('network-policy-unverified');
      expect(problem.detail).toMatch(/no CiliumNetworkPolicy in namespace sandlot-test/);

      // A policy that selects the wrong Pods is refused too.
      const wrong = ciliumPolicyObject(
        { tenantId: 'acme', projectId: 'gated', generation: 1 },
        {
          [LABELS.networkPolicyGeneration]: '1',
        },
      );
      fake.objects.put(wrong);
      const misselecting = await h.request('POST', `${s.base}/sandbox/provision`, {
        token: s.token,
        body: provisionWith(s.volume, 'p-wrong'),
      });
      expect(misselecting.status).toBe(409);
      expect((await problemOf(misselecting)).detail).toMatch(/does not select sandlot\.dev\/project-hash/);

      // The list fails: 503, not a verdict.
      plantPolicy('gated', 1);
      fake.faults.listErrors('ciliumnetworkpolicies', 1, 503);
      const unavailable = await h.request('POST', `${s.base}/sandbox/provision`, {
        token: s.token,
        body: provisionWith(s.volume, 'p-unavailable'),
      });
      expect(unavailable.status).toBe(503);
      expect(slug(await problemOf(unavailable))).toBe('network-policy-unavailable');

      const rows = await environmentRows(h.db, s.environmentId);
      expect(rows.leases).toEqual([]);
      expect(rows.attempts).toEqual([]);
      expect(
        inNamespace('SandboxClaim').filter(
          (c) => c.metadata.annotations?.['sandlot.dev/environment-id'] === s.environmentId,
        ),
      ).toEqual([]);

      const admitted = await h.request('POST', `${s.base}/sandbox/provision`, {
        token: s.token,
        body: provisionBody(s, 'p-admitted'),
      });
      expect(admitted.status).toBe(202);
      expect(await json(admitted)).toMatchObject({ networkPolicyGeneration: 1, state: 'Provisioning' });
      await waitForLease(h, s, (l) => l['state'] === 'Active', 30_000);
    }, 90_000);
  },
);
