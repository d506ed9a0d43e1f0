// Admission before any provider is contacted: the run selection must name exactly one exclusive
// candidate equal to the configured provider in every field, the Workspace must be the exact
// Available generation, and the network policy generation must exist and be the project's newest.
// A refusal dispatches nothing. And the Workspace stays Attached for as long as the lease is current,
// becoming Available again only once the provider's release receipt is recorded.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends, openBackend, type BackendHandle } from '../support/databases.ts';
import { buildHarness, type Harness } from '../support/harness.ts';
import {
  json,
  provisionBody,
  setupScenario,
  waitForLease,
  waitForLifecycle,
  type Scenario,
} from '../support/sandbox-flow.ts';
import { SimulatedProvider } from '../../providers/simulated/simulated-provider.ts';
import { readVolume } from '../../store/workspaces.ts';
import {
  countingProvider,
  environmentRows,
  inFreshHarness,
  problemOf,
  provisionWith,
  setupCustomScenario,
  slug,
  sleep,
  startWorkersWith,
} from '../support/sandbox-scenarios.ts';

describe.each(backends)('sandbox admission (%s)', (backend) => {
  let handle: BackendHandle;
  let h: Harness;

  beforeAll(async () => {
    handle = await openBackend(backend);
    h = await buildHarness(handle.db, {
      workers: {},
      provider: { phaseDelaysMs: { imageReady: 5, started: 10 } },
    });
  });
  afterAll(async () => {
    await h.close();
    await handle.close();
  });

  /**
   * Nothing was dispatched for the Environment: no lease, attempt, outbox row or resource. There is
   * nothing to wait for: a worker is only ever handed an attempt whose row and outbox row the
   * request's own transaction wrote, and that transaction has ended (here, never began: admission
   * refuses first) before the response arrives. With no attempt and no outbox row committed, no
   * worker can be handed anything for this Environment, now or later.
   */
  async function expectNothingDispatched(s: Scenario) {
    const rows = await environmentRows(h.db, s.environmentId);
    expect(rows.revision).toBe(1);
    expect(rows.leases).toEqual([]);
    expect(rows.attempts).toEqual([]);
    expect(rows.outbox).toEqual([]);
    const resources = await h.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM simulated_resources WHERE owner->>'environmentId' = $1`,
      [s.environmentId],
    );
    expect(resources.rows[0]?.n).toBe(0);
    const volume = await h.db.query<{ state: string }>(
      'SELECT state FROM workspace_volumes WHERE volume_id = $1',
      [s.volume.volumeId],
    );
    expect(volume.rows[0]?.state).toBe('Available');
  }

  it('refuses a selection whose exclusive candidate differs in one field with 409 naming the field', async () => {
    const s = await setupCustomScenario(h, {
      project: 'sel-mismatch',
      run: 'run-revision',
      candidates: (provider) => [{ ...provider, optionsRevision: '2', exclusive: true }],
    });
    const res = await h.request('POST', `${s.base}/sandbox/provision`, {
      token: s.token,
      body: provisionBody(s),
    });
    expect(res.status).toBe(409);
    const problem = await problemOf(res);
    expect(slug(problem)).toBe('provider-selection-mismatch');
    expect(problem['mismatches']).toEqual([{ field: 'optionsRevision', selected: '2', configured: '1' }]);
    expect(problem.detail).toContain('optionsRevision');
    await expectNothingDispatched(s);
  });

  it('refuses a selection with two exclusive candidates with 422', async () => {
    const s = await setupCustomScenario(h, {
      project: 'sel-two',
      run: 'run-two',
      candidates: (provider) => [
        { ...provider, exclusive: true },
        { ...provider, adapterVersion: '9.9.9', exclusive: true },
      ],
    });
    const res = await h.request('POST', `${s.base}/sandbox/provision`, {
      token: s.token,
      body: provisionBody(s),
    });
    expect(res.status).toBe(422);
    expect(slug(await problemOf(res))).toBe('provider-selection-invalid');
    await expectNothingDispatched(s);
  });

  it('refuses a Workspace at another data generation with 409 workspace-unavailable', async () => {
    const s = await setupScenario(h, { project: 'ws-generation', run: 'run-ws' });
    for (const volume of [
      { ...s.volume, dataGeneration: s.volume.dataGeneration + 1 },
      { ...s.volume, resourceGeneration: s.volume.resourceGeneration + 1 },
      { ...s.volume, volumeId: 'vol_does_not_exist' },
    ]) {
      const res = await h.request('POST', `${s.base}/sandbox/provision`, {
        token: s.token,
        body: provisionWith(volume, 'prov-ws'),
      });
      expect(res.status).toBe(409);
      expect(slug(await problemOf(res))).toBe('workspace-unavailable');
    }
    await expectNothingDispatched(s);
  });

  it('refuses an unknown or superseded network policy generation with 409 network-policy-unverified', async () => {
    const s = await setupCustomScenario(h, {
      project: 'net-generation',
      run: 'run-net',
      policyGenerations: [1, 2],
    });
    for (const generation of [7, 1]) {
      const res = await h.request('POST', `${s.base}/sandbox/provision`, {
        token: s.token,
        body: provisionWith(s.volume, 'prov-net', generation),
      });
      expect(res.status, `generation ${generation}`).toBe(409);
      const problem = await problemOf(res);
      expect(slug(problem)).toBe('network-policy-unverified');
      expect(problem.detail).toContain(generation === 7 ? 'does not exist' : 'not current (newest is 2)');
    }
    await expectNothingDispatched(s);

    // The newest generation is admitted.
    const admitted = await h.request('POST', `${s.base}/sandbox/provision`, {
      token: s.token,
      body: provisionWith(s.volume, 'prov-net', 2),
    });
    expect(admitted.status).toBe(202);
    expect(await json(admitted)).toMatchObject({ networkPolicyGeneration: 2, state: 'Provisioning' });
  });
});

describe.each(backends)('the Workspace follows the lease (%s)', (backend) => {
  it('stays Attached while the lease is current and is Available only after the release receipt', async () => {
    await inFreshHarness(
      backend,
      {
        workers: {},
        // A slow release keeps the lease in Releasing long enough to be seen there.
        provider: { faults: { script: [{ operation: 'release', fault: 'latency', ms: 400 }] } },
      },
      async (h) => {
        const s = await setupScenario(h, { run: 'run-attach' });
        const res = await h.request('POST', `${s.base}/sandbox/provision`, {
          token: s.token,
          body: provisionBody(s),
        });
        expect(res.status).toBe(202);
        const { operationId } = await json<{ operationId: string }>(res);

        // One statement, one snapshot: the volume and the lease as of the same instant.
        const samples: { volume: string; lease: string; receipt: boolean }[] = [];
        const sample = async () => {
          const { rows } = await h.db.query<{ volume: string; lease: string; receipt: boolean }>(
            `SELECT (SELECT state FROM workspace_volumes WHERE volume_id = $1) AS volume,
                    (SELECT state FROM sandbox_leases WHERE operation_id = $2) AS lease,
                    (SELECT release_receipt IS NOT NULL FROM sandbox_leases WHERE operation_id = $2) AS receipt`,
            [s.volume.volumeId, operationId],
          );
          samples.push(rows[0]!);
          return rows[0]!;
        };
        let sampling = true;
        const sampler = (async () => {
          while (sampling) {
            await sample();
            await sleep(10);
          }
        })();

        try {
          await waitForLease(h, s, (l) => l['state'] === 'Active');
          const release = await h.request('POST', `${s.base}/release`, {
            token: s.token,
            body: { expectedLifecycleGeneration: 1, idempotencyKey: 'rel-1' },
          });
          expect(release.status).toBe(202);
          await waitForLifecycle(h, s, 'Released');
        } finally {
          sampling = false;
          await sampler;
        }
        const last = await sample();
        expect(last).toEqual({ volume: 'Available', lease: 'Released', receipt: true });

        const current = new Set(['Provisioning', 'Active', 'Releasing', 'ReconciliationRequired']);
        for (const taken of samples) {
          if (current.has(taken.lease))
            expect(taken, 'a current lease holds its volume').toMatchObject({ volume: 'Attached' });
          if (taken.volume === 'Available')
            expect(taken, 'the volume frees only with the receipt').toEqual({
              volume: 'Available',
              lease: 'Released',
              receipt: true,
            });
        }
        // The slow release was actually observed: Attached all through Releasing.
        expect(samples.some((x) => x.lease === 'Releasing' && x.volume === 'Attached')).toBe(true);
        expect(samples.some((x) => x.lease === 'Active' && x.volume === 'Attached')).toBe(true);
      },
    );
  });
});

describe('the network policy is verified again at dispatch', () => {
  it('a provision retried after reconciliation goes out only under a policy that is still current', async () => {
    await inFreshHarness(
      'postgres',
      {
        // Only the explicit reconcile below acts; the first provision's answer is a 503 (nothing made).
        workers: { callTimeoutMs: 500, reconcileEveryMs: 600_000 },
        provider: { faults: { script: [{ operation: 'provision', call: 1, fault: 'server-error' }] } },
      },
      async (h) => {
        const s = await setupScenario(h, { run: 'run-net-dispatch' });
        const { operationId } = await json<{ operationId: string }>(
          await h.request('POST', `${s.base}/sandbox/provision`, { token: s.token, body: provisionBody(s) }),
        );
        await waitForLease(h, s, (l) => l['state'] === 'ReconciliationRequired');

        // Meanwhile the project's policy moves on: generation 1 is no longer the one in force.
        const operator = await h.token('acme', 'ops', { operator: true });
        const published = await h.request('PUT', '/admin/tenants/acme/projects/checkout/network-policies/2', {
          token: operator,
          body: { policy: { egress: [] } },
        });
        expect(published.status).toBe(201);

        const reconciled = await h.request('POST', `${s.base}/sandbox/reconcile`, {
          token: s.token,
          body: { operationId, resourceGeneration: 1, providerFence: 1, networkPolicyGeneration: 1 },
        });
        expect(reconciled.status).toBe(202);
        // The generation the caller named is checked now, too: it is no longer the one in force.
        expect(await json(reconciled)).toMatchObject({ networkPolicy: { generation: 1, verified: false } });
        // The retry never reached the provider. That proves nothing about the first call, whose
        // answer was lost: it stays Unknown, the lease waits (visibly, with the refusal as its
        // reason) and keeps its Workspace. It used to be settled here and the lease Failed (E14).
        const waiting = await waitForLease(
          h,
          s,
          (l) =>
            l['state'] === 'ReconciliationRequired' &&
            (l['failure'] as { code?: string } | null)?.code === 'network-policy-unverified',
        );
        expect(waiting['current']).toBe(true);
        const rows = await environmentRows(h.db, s.environmentId);
        const provisions = rows.attempts.filter((a) => a.kind === 'provision');
        expect(provisions.map((a) => [a.state, a.error?.code])).toEqual([
          ['Unknown', 'server-error'],
          ['Failed', 'network-policy-unverified'],
        ]);
        expect(await h.provider.countResources({ operationId, includeDeleted: true })).toBe(0);
        const volume = await readVolume(h.db, s.volume.volumeId);
        expect(volume).toMatchObject({ state: 'Attached', attachedLease: 1 });
        const blocked = await h.request('POST', `${s.base}/release`, {
          token: s.token,
          body: { expectedLifecycleGeneration: 1, idempotencyKey: 'rel-net' },
        });
        expect(blocked.status).toBe(409);
      },
    );
  });
});

describe('the provider a lease was admitted for is frozen with it', () => {
  it('refuses a provision retry under a changed provider, recorded, without a call; release still works', async () => {
    await inFreshHarness(
      'postgres',
      {
        workers: false,
        provider: { faults: { script: [{ operation: 'provision', call: 1, fault: 'server-error' }] } },
      },
      async (h) => {
        const s = await setupScenario(h, { run: 'run-frozen' });
        const before = await startWorkersWith(h, h.provider, { reconcileEveryMs: 600_000 });
        const { operationId } = await json<{ operationId: string }>(
          await h.request('POST', `${s.base}/sandbox/provision`, { token: s.token, body: provisionBody(s) }),
        );
        await waitForLease(h, s, (l) => l['state'] === 'ReconciliationRequired');
        await before.close();

        // The workers are upgraded: same provider, another options revision.
        const upgraded = countingProvider(new SimulatedProvider({ db: h.db, optionsRevision: '2' }));
        const after = await startWorkersWith(h, upgraded, { reconcileEveryMs: 600_000 });
        try {
          const reconciled = await h.request('POST', `${s.base}/sandbox/reconcile`, {
            token: s.token,
            body: { operationId, resourceGeneration: 1, providerFence: 1 },
          });
          expect(reconciled.status).toBe(202);
          // Refused without a call: the first call (answered 503) stays Unknown, the lease waits.
          const failed = await waitForLease(
            h,
            s,
            (l) =>
              l['state'] === 'ReconciliationRequired' &&
              (l['failure'] as { code?: string } | null)?.code === 'provider-changed',
          );
          expect(failed['failure']).toMatchObject({ code: 'provider-changed' });
          expect(String((failed['failure'] as { message: string }).message)).toContain('options revision 1');
          // listOwned ran under the frozen snapshot; the provision retry never reached the provider.
          expect(upgraded.calls).toMatchObject({ listOwned: 1, provision: 0 });
          expect(await h.provider.countResources({ operationId, includeDeleted: true })).toBe(0);
        } finally {
          await after.close();
        }
      },
    );
  });

  it('releases an Active lease under the snapshot it froze, whatever the workers now run', async () => {
    await inFreshHarness('postgres', { workers: false }, async (h) => {
      const s = await setupScenario(h, { run: 'run-frozen-release' });
      const before = await startWorkersWith(h, h.provider, { reconcileEveryMs: 600_000 });
      const { operationId } = await json<{ operationId: string }>(
        await h.request('POST', `${s.base}/sandbox/provision`, { token: s.token, body: provisionBody(s) }),
      );
      await waitForLease(h, s, (l) => l['state'] === 'Active');
      await before.close();

      const upgraded = countingProvider(new SimulatedProvider({ db: h.db, optionsRevision: '2' }));
      const after = await startWorkersWith(h, upgraded, { reconcileEveryMs: 600_000 });
      try {
        const released = await h.request('POST', `${s.base}/release`, {
          token: s.token,
          body: { expectedLifecycleGeneration: 1, idempotencyKey: 'rel-frozen' },
        });
        expect(released.status).toBe(202);
        await waitForLifecycle(h, s, 'Released');
        expect(upgraded.calls.release).toBe(1);
        expect(await h.provider.countResources({ operationId })).toBe(0);
      } finally {
        await after.close();
      }
    });
  });
});
