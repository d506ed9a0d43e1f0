// The Agent Sandbox change feed end to end: the workers watch the namespace's Sandboxes on the fake
// Kubernetes API (list + watch over real HTTPS) and, when one's Pod finishes, describe exactly that
// lease and retire it, with the observer's passes out of the way (10 min period) and no describe of
// the other Active lease. The watch is resumed after the server ends it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { skipWithoutCrds } from '../support/crd-dir.ts';
import {
  NAMESPACE,
  adapterOn,
  ciliumPolicyObject,
  runtimeClassObject,
  verifierOn,
  withWorkspaces,
} from '../support/fake-cluster-harness.ts';
import { startFakeKubeApi, type FakeKubeApi } from '../fakes/kube-api/index.ts';
import { openBackend, type BackendHandle } from '../support/databases.ts';
import { buildHarness, type Harness } from '../support/harness.ts';
import { provisionBody, waitForLease, type Scenario } from '../support/sandbox-flow.ts';
import { setupCustomScenario } from '../support/sandbox-scenarios.ts';

const EXT = 'extensions.agents.x-k8s.io/v1beta1';

describe.skipIf(skipWithoutCrds)('Agent Sandbox change feed (watch) against the fake Kubernetes API', () => {
  let fake: FakeKubeApi;
  let handle: BackendHandle;
  let h: Harness;

  beforeAll(async () => {
    fake = await startFakeKubeApi({ namespace: NAMESPACE });
    fake.objects.put(runtimeClassObject());
    handle = await openBackend('postgres');
    const adapter = adapterOn(fake);
    h = await buildHarness(handle.db, {
      workers: { callTimeoutMs: 15_000, observeEveryMs: 600_000 },
      sandboxProvider: withWorkspaces(fake, adapter, { changeFeed: true }),
      networkPolicies: verifierOn(fake),
    });
  });
  afterAll(async () => {
    await h?.close();
    await handle?.close();
    await fake?.close();
  });

  const leaseState = async (operationId: string) =>
    (
      await h.db.query<{ state: string }>('SELECT state FROM sandbox_leases WHERE operation_id = $1', [
        operationId,
      ])
    ).rows[0]?.state;
  const describes = async (operationId: string) =>
    (
      await h.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM provider_attempts WHERE operation_id = $1 AND kind = 'describe'`,
        [operationId],
      )
    ).rows[0]?.n ?? 0;

  it('retires the lease whose Pod finished through one exact describe, and no other', async () => {
    const leases: { s: Scenario; operationId: string }[] = [];
    for (const project of ['watch-a', 'watch-b']) {
      const s = await setupCustomScenario(h, { project, run: 'run-watch', policyGenerations: [] });
      fake.objects.put(ciliumPolicyObject({ tenantId: 'acme', projectId: project, generation: 1 }));
      const res = await h.request('POST', `${s.base}/sandbox/provision`, {
        token: s.token,
        body: provisionBody(s),
      });
      expect(res.status).toBe(202);
      const lease = await waitForLease(h, s, (l) => l['state'] === 'Active', 30_000);
      leases.push({ s, operationId: String(lease['operationId']) });
    }
    const [finishing, other] = leases as [(typeof leases)[0], (typeof leases)[0]];
    const before = await describes(other.operationId);
    const claim = fake.objects
      .list({ apiVersion: EXT, kind: 'SandboxClaim' }, { namespace: NAMESPACE })
      .find((c) => c.metadata.labels?.['sandlot.dev/operation-id'] === finishing.operationId);
    expect(claim).toBeDefined();
    fake.controller.finishPod(claim!.metadata.name, 'Succeeded', NAMESPACE);

    // No pass runs in this test, and the lease is read from its row, not through an inspection
    // (which would describe it): only the watch can bring the observer to it.
    const deadline = Date.now() + 30_000;
    while ((await leaseState(finishing.operationId)) !== 'Released') {
      if (Date.now() > deadline) throw new Error('the finished lease was not Released within 30 s');
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    const { rows } = await h.db.query<{ state: string; receipt: { finished?: unknown } }>(
      `SELECT state, receipt FROM provider_attempts WHERE operation_id = $1 AND kind = 'describe'
        ORDER BY created_at DESC LIMIT 1`,
      [finishing.operationId],
    );
    expect(rows[0]).toMatchObject({ state: 'Succeeded', receipt: { finished: 'PodSucceeded' } });
    expect(await describes(other.operationId)).toBe(before);
    expect(await leaseState(other.operationId)).toBe('Active');
    // The feed watched the Sandboxes: at least one watch request reached the API server.
    expect(fake.requests.some((r) => r.verb === 'watch' && r.path.includes('/sandboxes'))).toBe(true);
  }, 120_000);
});
