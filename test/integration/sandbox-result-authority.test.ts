// A provider result is a fact about the cluster and is always recorded, but a lease becomes
// dispatchable only under the provisioning subject's fresh authority and the run's pinned
// selection, checked as the result is committed. Otherwise the lease is parked: not ready, not
// revived by reconciliation, and released only by a caller who holds authority now.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readAttemptsOfOperation } from '../../store/attempts.ts';
import { leasesNeedingReconciliation } from '../../store/leases.ts';
import type { WorkerHost } from '../../workers/host.ts';
import { isolatedPostgres, type IsolatedPostgres } from '../support/databases.ts';
import { buildHarness, seedProject, type Harness } from '../support/harness.ts';
import {
  json,
  provisionBody,
  setupScenario,
  waitForLease,
  waitForLifecycle,
} from '../support/sandbox-flow.ts';
import { startWorkersWith } from '../support/sandbox-scenarios.ts';

describe('provider results under fresh authority', () => {
  let pg: IsolatedPostgres;
  let h: Harness;
  let workers: WorkerHost | undefined;

  beforeEach(async () => {
    pg = await isolatedPostgres();
    // The first provision and release calls take 600 ms: long enough to revoke a grant while one
    // is in flight.
    h = await buildHarness(pg.open(), {
      workers: false,
      provider: {
        faults: {
          script: [
            { operation: 'provision', call: 1, fault: 'latency', ms: 600 },
            { operation: 'release', call: 1, fault: 'latency', ms: 600 },
          ],
        },
      },
    });
  });
  afterEach(async () => {
    await workers?.close();
    workers = undefined;
    await h.close();
    await pg.drop();
  });

  it('parks a lease whose provisioner lost WriteProjects while the call was in flight', async () => {
    const s = await setupScenario(h);
    await seedProject(h, { tenant: 'acme', project: 'checkout', run: 'run-1', subject: 'bob' });
    const bob = await h.token('acme', 'bob');
    workers = await startWorkersWith(h, h.provider, { reconcileEveryMs: 100 });
    const { operationId } = await json<{ operationId: string }>(
      await h.request('POST', `${s.base}/sandbox/provision`, { token: s.token, body: provisionBody(s) }),
    );
    // Alice loses WriteProjects before the provider answers.
    const operator = await h.token('acme', 'ops', { operator: true });
    const revoked = await h.request('PUT', '/admin/tenants/acme/projects/checkout/grants/alice', {
      token: operator,
      body: { permissions: ['ReadProjects', 'ReadRunSelection'] },
    });
    expect(revoked.status).toBe(200);

    const asBob = { ...s, token: bob };
    const parked = await waitForLease(h, asBob, (l) => l['state'] === 'ReconciliationRequired');
    expect(parked['failure']).toMatchObject({ code: 'authority-lapsed' });
    expect(String((parked['failure'] as { message: string }).message)).toContain('WriteProjects');
    // The result is recorded all the same: the attempt succeeded and the lease holds its resource.
    const [provision] = await readAttemptsOfOperation(h.db, operationId);
    expect(provision).toMatchObject({ kind: 'provision', state: 'Succeeded' });
    expect(parked['resourceId']).toEqual(expect.any(String));
    expect(await h.provider.countResources({ operationId })).toBe(1);

    // Never ready, and neither the reconciler nor a reconcile call revives it.
    const inspected = await json<{ readyForDispatch: boolean }>(
      await h.request('GET', `${s.base}/sandbox?networkPolicyGeneration=1`, { token: bob }),
    );
    expect(inspected.readyForDispatch).toBe(false);
    const reconcile = await h.request('POST', `${s.base}/sandbox/reconcile`, {
      token: bob,
      body: { operationId, resourceGeneration: 1, providerFence: 1 },
    });
    expect(reconcile.status).toBe(200);
    // The reconciler leaves it alone: it is not among the leases it asks to reconcile.
    expect(await leasesNeedingReconciliation(h.db, 10)).toEqual([]);
    await new Promise((r) => setTimeout(r, 400));
    expect(await json(await h.request('GET', `${s.base}/sandbox`, { token: bob }))).toMatchObject({
      lease: { state: 'ReconciliationRequired' },
    });

    // Alice cannot release it now; Bob, who holds authority, can, and the resource goes.
    const refused = await h.request('POST', `${s.base}/release`, {
      token: s.token,
      body: { expectedLifecycleGeneration: 1, idempotencyKey: 'rel-alice' },
    });
    expect(refused.status).toBe(403);
    const released = await h.request('POST', `${s.base}/release`, {
      token: bob,
      body: { expectedLifecycleGeneration: 1, idempotencyKey: 'rel-bob' },
    });
    expect(released.status).toBe(202);
    await waitForLifecycle(h, asBob, 'Released');
    expect(await h.provider.countResources({ operationId })).toBe(0);
  });

  it('parks a release whose requester lost WriteProjects while the call was in flight', async () => {
    const s = await setupScenario(h);
    await seedProject(h, { tenant: 'acme', project: 'checkout', run: 'run-1', subject: 'bob' });
    const bob = await h.token('acme', 'bob');
    const asBob = { ...s, token: bob };
    workers = await startWorkersWith(h, h.provider, { reconcileEveryMs: 100 });
    const { operationId } = await json<{ operationId: string }>(
      await h.request('POST', `${s.base}/sandbox/provision`, { token: s.token, body: provisionBody(s) }),
    );
    await waitForLease(h, s, (l) => l['state'] === 'Active');
    // Alice asks for the release, then loses WriteProjects before the provider answers it.
    const asked = await h.request('POST', `${s.base}/release`, {
      token: s.token,
      body: { expectedLifecycleGeneration: 1, idempotencyKey: 'rel-alice' },
    });
    expect(asked.status).toBe(202);
    const operator = await h.token('acme', 'ops', { operator: true });
    const revoked = await h.request('PUT', '/admin/tenants/acme/projects/checkout/grants/alice', {
      token: operator,
      body: { permissions: ['ReadProjects', 'ReadRunSelection'] },
    });
    expect(revoked.status).toBe(200);

    // The release happened (the resource is gone, its receipt recorded), but the final commit
    // found Alice's authority lapsed: the lease is parked and the Environment is not Released.
    const parked = await waitForLease(h, asBob, (l) => l['state'] === 'ReconciliationRequired');
    expect(parked['failure']).toMatchObject({ code: 'authority-lapsed' });
    expect(String((parked['failure'] as { message: string }).message)).toContain('alice');
    expect(await h.provider.countResources({ operationId })).toBe(0);
    const attempts = await readAttemptsOfOperation(h.db, operationId);
    expect(attempts.find((a) => a.kind === 'release')).toMatchObject({ state: 'Succeeded' });
    expect(await leasesNeedingReconciliation(h.db, 10)).toEqual([]);
    const lifecycle = await json<{ state: string }>(
      await h.request('GET', `${s.base}/lifecycle`, { token: bob }),
    );
    expect(lifecycle.state).toBe('Releasing');

    // Bob, who holds authority now, releases it again (his own key): Released.
    const released = await h.request('POST', `${s.base}/release`, {
      token: bob,
      body: { expectedLifecycleGeneration: 1, idempotencyKey: 'rel-bob' },
    });
    expect(released.status).toBe(202);
    await waitForLifecycle(h, asBob, 'Released');
    expect(await h.provider.countResources({ operationId })).toBe(0);
  });

  it('parks an Active lease whose observation finds the provisioner lost WriteProjects', async () => {
    // The sandbox starts 1.5 s after its creation: an observation after that changes its phase.
    await h.close();
    h = await buildHarness(pg.open(), {
      workers: false,
      provider: { phaseDelaysMs: { imageReady: 1_000, started: 1_500 } },
    });
    const s = await setupScenario(h);
    await seedProject(h, { tenant: 'acme', project: 'checkout', run: 'run-1', subject: 'bob' });
    const bob = await h.token('acme', 'bob');
    const asBob = { ...s, token: bob };
    workers = await startWorkersWith(h, h.provider, { reconcileEveryMs: 100 });
    const { operationId } = await json<{ operationId: string }>(
      await h.request('POST', `${s.base}/sandbox/provision`, { token: s.token, body: provisionBody(s) }),
    );
    const active = await waitForLease(h, s, (l) => l['state'] === 'Active');
    expect(active['phase']).not.toBe('started');
    const operator = await h.token('acme', 'ops', { operator: true });
    const revoked = await h.request('PUT', '/admin/tenants/acme/projects/checkout/grants/alice', {
      token: operator,
      body: { permissions: ['ReadProjects', 'ReadRunSelection'] },
    });
    expect(revoked.status).toBe(200);

    // Bob's inspections describe the sandbox until its phase moves on; that observation is
    // recorded, but committed under Alice's lapsed authority it parks the lease.
    const parked = await waitForLease(h, asBob, (l) => l['state'] !== 'Active');
    expect(parked['state']).toBe('ReconciliationRequired');
    expect(parked['phase']).not.toBe(active['phase']);
    expect(parked['failure']).toMatchObject({ code: 'authority-lapsed' });
    expect(await leasesNeedingReconciliation(h.db, 10)).toEqual([]);
    expect(await h.provider.countResources({ operationId })).toBe(1);
  });

  it('makes the lease Active when the provisioner still holds its authority', async () => {
    const s = await setupScenario(h);
    workers = await startWorkersWith(h, h.provider, { reconcileEveryMs: 100 });
    await h.request('POST', `${s.base}/sandbox/provision`, { token: s.token, body: provisionBody(s) });
    const active = await waitForLease(h, s, (l) => l['state'] === 'Active');
    expect(active['failure']).toBeNull();
  });
});
