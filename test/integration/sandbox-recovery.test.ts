// Recovery from uncertain provider outcomes. Invariant 3: an unresolved attempt blocks Environment
// release until an exact lookup resolves it. Invariant 5: a failed lookup (a 5xx on release) is
// never taken for absence: the lease waits in ReconciliationRequired with the resource still there.
import { describe, expect, it } from 'vitest';
import { readVolume } from '../../store/workspaces.ts';
import { backends } from '../support/databases.ts';
import type { Harness } from '../support/harness.ts';
import {
  json,
  provisionBody,
  setupScenario,
  waitForLease,
  waitForLifecycle,
  type Scenario,
} from '../support/sandbox-flow.ts';
import {
  environmentRows,
  inFreshHarness,
  mutableRows,
  problemOf,
  slug,
} from '../support/sandbox-scenarios.ts';

interface Lease {
  operationId: string;
  resourceGeneration: number;
  providerFence: number;
  state: string;
}

async function provisioned(h: Harness, s: Scenario): Promise<Lease> {
  const res = await h.request('POST', `${s.base}/sandbox/provision`, {
    token: s.token,
    body: provisionBody(s),
  });
  expect(res.status).toBe(202);
  return json<Lease>(res);
}

const liveResourcesOf = async (h: Harness, operationId: string) => h.provider.countResources({ operationId });

describe.each(backends)('recovery from uncertain provider outcomes (%s)', (backend) => {
  it('blocks release while a timed-out provision is unresolved, and recovers it by explicit reconcile', async () => {
    await inFreshHarness(
      backend,
      {
        // Only the explicit reconcile below may act: the periodic one is out of the way.
        workers: { callTimeoutMs: 300, reconcileEveryMs: 600_000 },
        provider: { faults: { script: [{ operation: 'provision', fault: 'timeout-after-apply' }] } },
      },
      async (h) => {
        const s = await setupScenario(h, { run: 'run-timeout' });
        const lease = await provisioned(h, s);

        await waitForLease(h, s, (l) => l['state'] === 'ReconciliationRequired');
        const stuck = await environmentRows(h.db, s.environmentId);
        const provision = stuck.attempts.find((a) => a.kind === 'provision')!;
        expect(provision.state).toBe('Unknown');
        expect(['timeout', 'cancelled']).toContain(provision.error?.code);
        // The provider did apply it: the resource exists although the call never answered.
        expect(await liveResourcesOf(h, lease.operationId)).toBe(1);

        const before = mutableRows(await environmentRows(h.db, s.environmentId));
        const refused = await h.request('POST', `${s.base}/release`, {
          token: s.token,
          body: { expectedLifecycleGeneration: 1, idempotencyKey: 'rel-1' },
        });
        expect(refused.status).toBe(409);
        const problem = await problemOf(refused);
        expect(slug(problem)).toBe('release-blocked');
        expect(problem['unresolvedAttempts']).toEqual([provision.attemptId]);
        expect(mutableRows(await environmentRows(h.db, s.environmentId))).toEqual(before);
        const lifecycle = await json<{ state: string; revision: number }>(
          await h.request('GET', `${s.base}/lifecycle`, { token: s.token }),
        );
        expect(lifecycle).toMatchObject({ state: 'Registered', revision: before.revision });

        const reconcile = await h.request('POST', `${s.base}/sandbox/reconcile`, {
          token: s.token,
          body: {
            operationId: lease.operationId,
            resourceGeneration: lease.resourceGeneration,
            providerFence: lease.providerFence,
          },
        });
        expect(reconcile.status).toBe(202);
        await waitForLease(h, s, (l) => l['state'] === 'Active');

        const recovered = await environmentRows(h.db, s.environmentId);
        const resolved = recovered.attempts.find((a) => a.attemptId === provision.attemptId)!;
        expect(resolved.state).toBe('Succeeded');
        expect(resolved.resolution).toBe('found by exact listOwned');
        expect(recovered.attempts.filter((a) => a.kind === 'listOwned').map((a) => a.state)).toEqual([
          'Succeeded',
        ]);
        expect(await liveResourcesOf(h, lease.operationId)).toBe(1);

        const release = await h.request('POST', `${s.base}/release`, {
          token: s.token,
          body: { expectedLifecycleGeneration: 1, idempotencyKey: 'rel-1' },
        });
        expect(release.status).toBe(202);
        await waitForLifecycle(h, s, 'Released');
        expect(await waitForLease(h, s, (l) => l['state'] === 'Released')).toMatchObject({ current: false });
        expect(await h.provider.countResources({})).toBe(0);
        const final = await environmentRows(h.db, s.environmentId);
        expect(final.attempts.filter((a) => ['Pending', 'Dispatched', 'Unknown'].includes(a.state))).toEqual(
          [],
        );
      },
    );
  });

  it('recovers a timed-out provision to Active on its own through the periodic reconciler', async () => {
    await inFreshHarness(
      backend,
      {
        workers: { callTimeoutMs: 300, reconcileEveryMs: 200 },
        provider: { faults: { script: [{ operation: 'provision', fault: 'timeout-after-apply' }] } },
      },
      async (h) => {
        const s = await setupScenario(h, { run: 'run-auto' });
        const lease = await provisioned(h, s);
        await waitForLease(h, s, (l) => l['state'] === 'Active');
        const rows = await environmentRows(h.db, s.environmentId);
        const provision = rows.attempts.find((a) => a.kind === 'provision')!;
        // It went through Unknown (the call timed out) and was settled by the exact lookup.
        expect(provision).toMatchObject({ state: 'Succeeded', resolution: 'found by exact listOwned' });
        expect(rows.attempts.some((a) => a.kind === 'listOwned' && a.state === 'Succeeded')).toBe(true);
        expect(await liveResourcesOf(h, lease.operationId)).toBe(1);
      },
    );
  });

  it('never takes a failed release lookup for absence: the lease waits in ReconciliationRequired', async () => {
    await inFreshHarness(
      backend,
      {
        workers: { reconcileEveryMs: 600_000 },
        provider: { faults: { script: [{ operation: 'release', call: 1, fault: 'server-error' }] } },
      },
      async (h) => {
        const s = await setupScenario(h, { run: 'run-5xx' });
        const lease = await provisioned(h, s);
        await waitForLease(h, s, (l) => l['state'] === 'Active');

        const release = await h.request('POST', `${s.base}/release`, {
          token: s.token,
          body: { expectedLifecycleGeneration: 1, idempotencyKey: 'rel-1' },
        });
        expect(release.status).toBe(202);
        const waiting = await waitForLease(
          h,
          s,
          (l) => l['state'] !== 'Active' && l['state'] !== 'Releasing',
        );
        expect(waiting['state']).toBe('ReconciliationRequired');

        const rows = await environmentRows(h.db, s.environmentId);
        expect(rows.lifecycleState).toBe('Releasing');
        expect(rows.leases).toMatchObject([{ state: 'ReconciliationRequired', hasReceipt: false }]);
        const failedRelease = rows.attempts.find((a) => a.kind === 'release')!;
        expect(failedRelease).toMatchObject({ state: 'Unknown', error: { code: 'server-error' } });
        expect(await liveResourcesOf(h, lease.operationId)).toBe(1);
        const volume = await h.db.query<{ state: string }>(
          'SELECT state FROM workspace_volumes WHERE volume_id = $1',
          [s.volume.volumeId],
        );
        expect(volume.rows[0]?.state).toBe('Attached');

        // An exact listOwned finds the resource still there, and the release is retried.
        const reconcile = await h.request('POST', `${s.base}/sandbox/reconcile`, {
          token: s.token,
          body: {
            operationId: lease.operationId,
            resourceGeneration: lease.resourceGeneration,
            providerFence: lease.providerFence,
          },
        });
        expect(reconcile.status).toBe(202);
        await waitForLifecycle(h, s, 'Released');
        await waitForLease(h, s, (l) => l['state'] === 'Released');
        expect(await h.provider.countResources({})).toBe(0);
        const final = await environmentRows(h.db, s.environmentId);
        expect(final.attempts.find((a) => a.attemptId === failedRelease.attemptId)).toMatchObject({
          state: 'Superseded',
          resolution: 'still present by exact listOwned; release retried',
        });
        expect(final.attempts.filter((a) => a.kind === 'release').map((a) => a.state)).toEqual([
          'Superseded',
          'Succeeded',
        ]);
      },
    );
  });
});

// Abandoning a lease whose older attempt is Unknown: that attempt already answered (inexactly) and
// never will again, so the release receipt alone cannot end the lease; an exact listOwned settles
// it. (This once left the lease in Releasing for good.)
describe('abandoning a lease that waits for reconciliation (postgres)', () => {
  const abandonThenRelease = async (h: Harness, s: Scenario, lease: Lease) => {
    const abandoned = await h.request('POST', `${s.base}/sandbox/abandon`, {
      token: s.token,
      body: {
        resourceGeneration: lease.resourceGeneration,
        providerFence: lease.providerFence,
        idempotencyKey: 'abandon-stuck',
      },
    });
    expect(abandoned.status).toBe(202);
    // The older attempt is Unknown: it will never answer, so the receipt alone cannot end the
    // lease; an exact listOwned must settle it (the reconciler is off here, so ask by hand).
    const settled = await waitForLease(
      h,
      s,
      (l) => l['state'] === 'ReconciliationRequired' || l['state'] === 'Released',
      3_000,
    );
    if (settled['state'] === 'ReconciliationRequired') {
      const reconcile = await h.request('POST', `${s.base}/sandbox/reconcile`, {
        token: s.token,
        body: {
          operationId: settled['operationId'],
          resourceGeneration: lease.resourceGeneration,
          providerFence: lease.providerFence,
        },
      });
      expect(reconcile.status).toBe(202);
    }
    await waitForLease(h, s, (l) => l['state'] === 'Released', 3_000);
    expect(await h.provider.countResources({})).toBe(0);
    // Released on exact proof, receipt or listOwned absence alike: the Workspace is free again.
    expect((await readVolume(h.db, s.volume.volumeId))?.state).toBe('Available');
  };

  it('releases the lease after a timed-out provision', async () => {
    await inFreshHarness(
      'postgres',
      {
        workers: { callTimeoutMs: 300, reconcileEveryMs: 600_000 },
        provider: { faults: { script: [{ operation: 'provision', fault: 'timeout-after-apply' }] } },
      },
      async (h) => {
        const s = await setupScenario(h, { run: 'run-stuck-provision' });
        const lease = await provisioned(h, s);
        await waitForLease(h, s, (l) => l['state'] === 'ReconciliationRequired');
        await abandonThenRelease(h, s, lease);
      },
    );
  });

  it('releases the lease after a release that answered 5xx', async () => {
    await inFreshHarness(
      'postgres',
      {
        workers: { reconcileEveryMs: 600_000 },
        provider: { faults: { script: [{ operation: 'release', call: 1, fault: 'server-error' }] } },
      },
      async (h) => {
        const s = await setupScenario(h, { run: 'run-stuck-release' });
        const lease = await provisioned(h, s);
        await waitForLease(h, s, (l) => l['state'] === 'Active');
        const release = await h.request('POST', `${s.base}/release`, {
          token: s.token,
          body: { expectedLifecycleGeneration: 1, idempotencyKey: 'rel-1' },
        });
        expect(release.status).toBe(202);
        await waitForLease(h, s, (l) => l['state'] === 'ReconciliationRequired');
        await abandonThenRelease(h, s, lease);
      },
    );
  });
});
