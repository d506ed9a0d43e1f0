// Readiness for dispatch needs the AgentHost's configured handshake, not only a started sandbox:
// each missing requirement is a condition a caller can read, with its reason.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddedAgentHost } from '../../actors/agenthost/embedded.ts';
import type { ReadinessCondition } from '../../actors/sandbox/readiness.ts';
import { startFakeKubeApi, type FakeKubeApi } from '../fakes/kube-api/index.ts';
import { skipWithoutCrds } from '../support/crd-dir.ts';
import { openBackend, type BackendHandle } from '../support/databases.ts';
import {
  NAMESPACE,
  adapterOn,
  ciliumPolicyObject,
  refs,
  runtimeClassObject,
  verifierOn,
  withWorkspaces,
} from '../support/fake-cluster-harness.ts';
import { eventually, setupCustomScenario } from '../support/sandbox-scenarios.ts';
import { buildHarness, type Harness } from '../support/harness.ts';
import { json, provisionBody, setupScenario, waitForLease, type Scenario } from '../support/sandbox-flow.ts';

interface Inspection {
  environmentRevision: number;
  readyForDispatch: boolean;
  phase: string | null;
  conditions: ReadinessCondition[];
  lease: Record<string, unknown>;
  observation: { exact: boolean; phase: string | null } | null;
}

const conditionOf = (body: Inspection, type: string) => body.conditions.find((c) => c.type === type);

describe('readiness needs an explicit configured phase', () => {
  let handle: BackendHandle;
  let h: Harness;
  let host: EmbeddedAgentHost;

  beforeAll(async () => {
    handle = await openBackend('postgres');
    host = new EmbeddedAgentHost({ db: handle.db, autoConfigure: false });
    h = await buildHarness(handle.db, {
      workers: {},
      agentHost: host,
      provider: { phaseDelaysMs: { imageReady: 5, started: 10 } },
    });
  });
  afterAll(async () => {
    await h.close();
    await handle.close();
  });

  async function activeScenario(
    run: string,
    project = 'checkout',
  ): Promise<{ s: Scenario; operationId: string }> {
    const s = await setupScenario(h, { run, project });
    const provisioned = await h.request('POST', `${s.base}/sandbox/provision`, {
      token: s.token,
      body: provisionBody(s),
    });
    expect(provisioned.status).toBe(202);
    const lease = await waitForLease(h, s, (l) => l['state'] === 'Active' && l['phase'] === 'started');
    return { s, operationId: String(lease['operationId']) };
  }

  const inspect = async (s: Scenario, generation = 1) =>
    json<Inspection>(
      await h.request('GET', `${s.base}/sandbox?networkPolicyGeneration=${generation}`, { token: s.token }),
    );

  it('a started sandbox whose Host has not completed its handshake is not ready, and says why', async () => {
    const { s, operationId } = await activeScenario('run-unconfigured');
    const before = await inspect(s);
    expect(before.observation).toMatchObject({ exact: true, phase: 'started' });
    expect(before.readyForDispatch).toBe(false);
    expect(before.phase).toBe('started');
    expect(conditionOf(before, 'SandboxObserved')).toMatchObject({ status: 'True', reason: 'Started' });
    expect(conditionOf(before, 'HostConfigured')).toMatchObject({
      status: 'False',
      reason: 'NotConfigured',
      observedGeneration: 1,
    });
    expect(before.conditions.filter((c) => c.status !== 'True').map((c) => c.type)).toEqual([
      'HostConfigured',
    ]);

    host.configure(operationId);
    const after = await inspect(s);
    expect(after.readyForDispatch).toBe(true);
    expect(after.phase).toBe('configured');
    expect(after.conditions.map((c) => [c.type, c.status])).toEqual([
      ['LeaseCurrent', 'True'],
      ['LeaseUnexpired', 'True'],
      ['SandboxObserved', 'True'],
      ['HostConfigured', 'True'],
      ['NetworkPolicyVerified', 'True'],
      ['WorkspaceAttached', 'True'],
    ]);
  });

  it('a waiting inspection answers once the Host configures, though no transition marks that', async () => {
    const { s, operationId } = await activeScenario('run-wait-configure');
    const before = await inspect(s);
    expect(before.readyForDispatch).toBe(false);
    const started = Date.now();
    const waiting = h.request(
      'GET',
      `${s.base}/sandbox?networkPolicyGeneration=1&wait=20s&after=${before.environmentRevision}`,
      { token: s.token },
    );
    setTimeout(() => host.configure(operationId), 600);
    const answer = await json<Inspection>(await waiting);
    const ms = Date.now() - started;
    expect(answer.readyForDispatch).toBe(true);
    expect(answer.phase).toBe('configured');
    expect(ms).toBeGreaterThanOrEqual(550);
    expect(ms).toBeLessThan(5_000);
  });

  it('a network policy generation that is not the lease’s is not ready, with its condition', async () => {
    const { s, operationId } = await activeScenario('run-network', 'network');
    host.configure(operationId);
    const operator = await h.token('acme', 'ops', { operator: true });
    const second = await h.request('PUT', '/admin/tenants/acme/projects/network/network-policies/2', {
      token: operator,
      body: { policy: { egress: [{ toFQDNs: ['example.org'] }] } },
    });
    expect([200, 201]).toContain(second.status);
    const mismatch = await inspect(s, 2);
    expect(mismatch.readyForDispatch).toBe(false);
    expect(conditionOf(mismatch, 'NetworkPolicyVerified')).toMatchObject({
      status: 'False',
      reason: 'GenerationMismatch',
    });
    expect(conditionOf(mismatch, 'HostConfigured')?.status).toBe('True');
    // Generation 1 is the lease's, but no longer the project's policy in force.
    const superseded = await inspect(s, 1);
    expect(superseded.readyForDispatch).toBe(false);
    expect(conditionOf(superseded, 'NetworkPolicyVerified')).toMatchObject({ status: 'False' });
  });

  it('a Host configured for another network generation or mount path is not configured for this lease', async () => {
    const { s, operationId } = await activeScenario('run-wrong-host');
    host.configure(operationId, { networkPolicyGeneration: 7, workspaceMountPath: '/elsewhere' });
    const body = await inspect(s);
    expect(body.readyForDispatch).toBe(false);
    const configured = conditionOf(body, 'HostConfigured');
    expect(configured).toMatchObject({ status: 'False', reason: 'ConfiguredForAnother' });
    expect(configured?.message).toContain('network policy generation');
    expect(configured?.message).toContain('Workspace mount path');
  });

  it('without a network policy generation the caller is told to pass one', async () => {
    const { s, operationId } = await activeScenario('run-no-generation');
    host.configure(operationId);
    const body = await json<Inspection>(await h.request('GET', `${s.base}/sandbox`, { token: s.token }));
    expect(body.readyForDispatch).toBe(false);
    expect(conditionOf(body, 'NetworkPolicyVerified')).toMatchObject({
      status: 'False',
      reason: 'NotRequested',
    });
  });
});

describe('a long-poll inspection of a lease still provisioning', () => {
  it('answers at the transition to Active, not only once the lease is ready', async () => {
    const handle = await openBackend('postgres');
    // The Host never configures, so the lease never gets ready: only the transition can end the wait.
    const host = new EmbeddedAgentHost({ db: handle.db, autoConfigure: false });
    const h = await buildHarness(handle.db, {
      workers: { callTimeoutMs: 20_000 },
      agentHost: host,
      provider: { faults: { script: [{ operation: 'provision', call: 1, fault: 'latency', ms: 3_000 }] } },
    });
    try {
      const s = await setupScenario(h, { run: 'run-wait-active' });
      const provisioned = await h.request('POST', `${s.base}/sandbox/provision`, {
        token: s.token,
        body: provisionBody(s),
      });
      expect(provisioned.status).toBe(202);
      const before = await json<Inspection>(
        await h.request('GET', `${s.base}/sandbox?networkPolicyGeneration=1`, { token: s.token }),
      );
      expect(before.lease['state']).toBe('Provisioning');
      const started = Date.now();
      const answer = await json<Inspection>(
        await h.request(
          'GET',
          `${s.base}/sandbox?networkPolicyGeneration=1&wait=30s&after=${before.environmentRevision}`,
          { token: s.token },
        ),
      );
      expect(answer.lease['state']).toBe('Active');
      expect(answer.readyForDispatch).toBe(false);
      expect(answer.environmentRevision).toBeGreaterThan(before.environmentRevision);
      // Well before the wait's 30 s deadline, which is when a wait for readiness would have ended.
      expect(Date.now() - started).toBeLessThan(20_000);
      // The answer at the transition ran no describe of its own: it says so, and opened no attempt.
      expect(conditionOf(answer, 'SandboxObserved')).toMatchObject({
        status: 'Unknown',
        reason: 'NotYetObserved',
      });
      expect(answer.observation).toMatchObject({ exact: false, error: { code: 'not-yet-observed' } });
      const describes = async () =>
        (
          await handle.db.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM provider_attempts WHERE operation_id = $1 AND kind = 'describe'`,
            [answer.lease['operationId']],
          )
        ).rows[0]?.n;
      expect(await describes()).toBe(0);
      // Asked again past that revision, the inspection describes the lease (the sandbox started).
      const next = await json<Inspection>(
        await h.request(
          'GET',
          `${s.base}/sandbox?networkPolicyGeneration=1&wait=2s&after=${answer.environmentRevision}`,
          { token: s.token },
        ),
      );
      expect(next.observation).toMatchObject({ exact: true, error: null });
      expect(conditionOf(next, 'SandboxObserved')?.status).toBe('True');
      expect(await describes()).toBeGreaterThan(0);
    } finally {
      await h.close();
      await handle.close();
    }
  });
});

describe.skipIf(skipWithoutCrds)(
  'readiness, placement and renewal on the Agent Sandbox adapter (fake API)',
  () => {
    let fake: FakeKubeApi;
    let handle: BackendHandle;
    let h: Harness;
    let host: EmbeddedAgentHost;

    beforeAll(async () => {
      fake = await startFakeKubeApi({ namespace: NAMESPACE });
      fake.objects.put(runtimeClassObject());
      handle = await openBackend('postgres');
      host = new EmbeddedAgentHost({ db: handle.db, autoConfigure: false });
      h = await buildHarness(handle.db, {
        workers: { callTimeoutMs: 15_000 },
        sandboxProvider: withWorkspaces(fake, adapterOn(fake)),
        networkPolicies: verifierOn(fake),
        agentHost: host,
        leaseTtlMs: 600_000,
      });
    });
    afterAll(async () => {
      await h.close();
      await handle.close();
      await fake.close();
    });

    it('a Ready, started Pod without the Host handshake is not ready; configured, it is, and it is projected and renewed', async () => {
      const s = await setupCustomScenario(h, {
        project: 'checkout',
        run: 'run-k8s-ready',
        policyGenerations: [],
      });
      fake.objects.put(ciliumPolicyObject({ tenantId: 'acme', projectId: 'checkout', generation: 1 }));
      expect(
        (await h.request('POST', `${s.base}/sandbox/provision`, { token: s.token, body: provisionBody(s) }))
          .status,
      ).toBe(202);
      const lease = await waitForLease(h, s, (l) => l['state'] === 'Active', 30_000);
      const inspect = async () =>
        json<Inspection>(
          await h.request('GET', `${s.base}/sandbox?networkPolicyGeneration=1`, { token: s.token }),
        );
      const started = await eventually(
        'the Pod to be observed started',
        async () => {
          const seen = await inspect();
          return conditionOf(seen, 'SandboxObserved')?.status === 'True' ? seen : undefined;
        },
        20_000,
      );
      // Kubernetes says the Pod is Ready and the sandbox started, yet no Host handshake: not ready.
      const claimName = String(lease['resourceId']).split('/')[0] ?? '';
      const pod = fake.objects.get(refs.pod(claimName)) as {
        status?: { conditions?: { type: string; status: string }[] };
      };
      expect(pod.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
      expect(started.readyForDispatch).toBe(false);
      expect(started.phase).toBe('started');
      expect(conditionOf(started, 'HostConfigured')).toMatchObject({
        status: 'False',
        reason: 'NotConfigured',
      });

      host.configure(String(lease['operationId']));
      const ready = await inspect();
      expect(ready.readyForDispatch).toBe(true);
      expect(ready.phase).toBe('configured');

      // The projection carries the resource ID exactly as the lease stored it, and the Pod mapping.
      const placement = await json<{ resource: { resourceId: string; placement: Record<string, string> } }>(
        await h.request('GET', `${s.base}/sandbox/v1/placement`, { token: s.token }),
      );
      expect(placement.resource.resourceId).toBe(lease['resourceId']);
      const mapped = ready.lease['placement'] as Record<string, string>;
      expect(placement.resource.placement['podUid']).toBe(mapped['podUid']);
      expect(mapped['podUid']).toEqual(expect.any(String));
      expect(JSON.stringify(placement)).not.toContain('runtimeClassName');

      // Renewal moves the claim's shutdown time (a backstop past the lease's expiry) before the lease's.
      const claimBefore = fake.objects.get(refs.claim(claimName)) as {
        spec: { lifecycle?: { shutdownTime?: string } };
      };
      const termBefore = Date.parse(claimBefore.spec.lifecycle?.shutdownTime ?? '');
      expect(termBefore).toBeGreaterThan(Date.parse(String(lease['expiresAt'])));
      await new Promise((r) => setTimeout(r, 1_100));
      const renewed = await h.request('POST', `${s.base}/sandbox/renew`, {
        token: s.token,
        body: { expectedResourceGeneration: 1, providerFence: 1, idempotencyKey: 'renew-k8s' },
      });
      expect(renewed.status).toBe(200);
      const { lease: after } = await json<{ lease: Record<string, unknown> }>(renewed);
      expect(Date.parse(String(after['expiresAt']))).toBeGreaterThan(Date.parse(String(lease['expiresAt'])));
      const claimAfter = fake.objects.get(refs.claim(claimName)) as {
        spec: { lifecycle?: { shutdownTime?: string } };
      };
      expect(Date.parse(claimAfter.spec.lifecycle?.shutdownTime ?? '')).toBeGreaterThan(termBefore);
    });
  },
);
