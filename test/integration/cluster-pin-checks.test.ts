// Checks made for a lease compare the cluster pin the lease recorded (at admission, the one the new
// lease is about to record), never the pin the process took when it started, against the cluster
// the process reaches now: the Workspace storage readback before a lease is reserved, and the
// network policy verification of every later inspection. The process here trusts its cluster
// through a CA file, as in-cluster service accounts do; when that trusted set changes under it, it
// reaches another cluster, and each check refuses, naming both pins, instead of answering from there.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentSandboxProvider } from '../../providers/agent-sandbox/agent-sandbox-provider.ts';
import { startFakeKubeApi, type FakeKubeApi } from '../fakes/kube-api/index.ts';
import { createCertificateAuthority } from '../fakes/kube-api/tls.ts';
import { skipWithoutCrds } from '../support/crd-dir.ts';
import { openBackend, type BackendHandle } from '../support/databases.ts';
import {
  adapterOn,
  caFileKubeconfig,
  ciliumPolicyObject,
  NAMESPACE,
  plantWorkspace,
  runtimeClassObject,
  storageOn,
  verifierOn,
} from '../support/fake-cluster-harness.ts';
import { buildHarness, type Harness } from '../support/harness.ts';
import { json, provisionBody, waitForLease, type Scenario } from '../support/sandbox-flow.ts';
import { environmentRows, problemOf, setupCustomScenario, slug } from '../support/sandbox-scenarios.ts';

describe.skipIf(skipWithoutCrds)('checks made for a lease compare the cluster pin it recorded', () => {
  let fake: FakeKubeApi;
  let handle: BackendHandle;
  let h: Harness;
  let dir: string;
  let ca: ReturnType<typeof caFileKubeconfig>;
  let provider: AgentSandboxProvider;
  let another: string;

  beforeAll(async () => {
    fake = await startFakeKubeApi({ namespace: NAMESPACE, controller: { intervalMs: 10 } });
    fake.objects.put(runtimeClassObject());
    dir = mkdtempSync(join(tmpdir(), 'sandlot-cluster-pin-'));
    ca = caFileKubeconfig(fake, dir);
    const kubeConfig = ca.kubeConfig();
    provider = adapterOn(fake, {}, kubeConfig);
    handle = await openBackend('postgres');
    h = await buildHarness(handle.db, {
      workers: { callTimeoutMs: 15_000 },
      sandboxProvider: provider,
      networkPolicies: verifierOn(fake, kubeConfig),
      workspaceStorage: storageOn(fake, kubeConfig),
    });
    another = (await createCertificateAuthority('another-cluster-ca')).caPem;
  });
  afterAll(async () => {
    await h.close();
    await handle.close();
    await fake.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A scenario whose Workspace storage and network policy the cluster holds. */
  async function scenario(run: string): Promise<Scenario> {
    const s = await setupCustomScenario(h, { project: 'checkout', run, policyGenerations: [] });
    plantWorkspace(fake, { owner: { environmentId: s.environmentId }, workspace: s.volume });
    fake.objects.put(ciliumPolicyObject({ tenantId: 'acme', projectId: 'checkout', generation: 1 }));
    return s;
  }

  const provision = (s: Scenario) =>
    h.request('POST', `${s.base}/sandbox/provision`, { token: s.token, body: provisionBody(s) });

  it('the storage readback refuses a new lease while the process reaches another cluster', async () => {
    const recorded = String(provider.optionsSnapshot()['clusterPin']);
    const s = await scenario('run-pin-admission');
    try {
      ca.trust(`${fake.caPem}\n${another}`);
      const before = fake.requests.filter((r) => r.resource === 'persistentvolumeclaims').length;
      const res = await provision(s);
      expect(res.status).toBe(409);
      const problem = await problemOf(res);
      expect(slug(problem)).toBe('workspace-cluster-mismatch');
      expect(problem.detail).toContain(`the lease's objects live in cluster ${recorded.slice(0, 12)}…`);
      // Nothing was read from the other cluster, and nothing reserved.
      expect(fake.requests.filter((r) => r.resource === 'persistentvolumeclaims').length).toBe(before);
      expect((await environmentRows(h.db, s.environmentId)).leases).toEqual([]);
    } finally {
      ca.trust(fake.caPem);
    }
    // Back on the lease's cluster, the same request is admitted.
    expect((await provision(s)).status).toBe(202);
    await waitForLease(h, s, (l) => l['state'] === 'Active', 30_000);
  });

  it('inspection verifies the network policy in the cluster the lease recorded, every time', async () => {
    const s = await scenario('run-pin-inspection');
    expect((await provision(s)).status).toBe(202);
    await waitForLease(h, s, (l) => l['state'] === 'Active', 30_000);
    const policyCondition = async () => {
      const res = await h.request('GET', `${s.base}/sandbox?networkPolicyGeneration=1`, { token: s.token });
      const body = await json<{ conditions: { type: string; status: string; message: string }[] }>(res);
      return body.conditions.find((c) => c.type === 'NetworkPolicyVerified');
    };
    expect(await policyCondition()).toMatchObject({ status: 'True' });
    try {
      ca.trust(`${fake.caPem}\n${another}`);
      const before = fake.requests.filter((r) => r.resource === 'ciliumnetworkpolicies').length;
      expect(await policyCondition()).toMatchObject({ status: 'False' });
      expect(fake.requests.filter((r) => r.resource === 'ciliumnetworkpolicies').length).toBe(before);
    } finally {
      ca.trust(fake.caPem);
    }
    expect(await policyCondition()).toMatchObject({ status: 'True' });
  });
});
