// Lease expiry (SANDLOT_LEASE_TTL_MS): past its expiry a lease is never ready, and reconciliation
// fences it first (its current fencing generation moves, so no holder of the old one can write).
// Expiry releases nothing: lease age is no proof that a run ended; only release or abandon ends it.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isolatedPostgres, type IsolatedPostgres } from '../support/databases.ts';
import { buildHarness, type Harness } from '../support/harness.ts';
import {
  json,
  provisionBody,
  setupScenario,
  waitForLease,
  waitForLifecycle,
} from '../support/sandbox-flow.ts';
import { eventually } from '../support/sandbox-scenarios.ts';

const TTL_MS = 1_500;

describe('lease expiry', () => {
  let pg: IsolatedPostgres;
  let h: Harness;

  beforeEach(async () => {
    pg = await isolatedPostgres();
    h = await buildHarness(pg.open(), { leaseTtlMs: TTL_MS, workers: { reconcileEveryMs: 100 } });
  });
  afterEach(async () => {
    await h.close();
    await pg.drop();
  });

  it('fences an expired lease first, never calls it ready again, and releases it only on request', async () => {
    const s = await setupScenario(h);
    const reservedAt = Date.now();
    const { operationId } = await json<{ operationId: string }>(
      await h.request('POST', `${s.base}/sandbox/provision`, { token: s.token, body: provisionBody(s) }),
    );
    const inspect = async () =>
      json<{ readyForDispatch: boolean; lease: Record<string, unknown> }>(
        await h.request('GET', `${s.base}/sandbox?networkPolicyGeneration=1`, { token: s.token }),
      );
    await waitForLease(h, s, (l) => l['state'] === 'Active');
    const before = await eventually('the lease to be ready', async () => {
      const seen = await inspect();
      return seen.readyForDispatch ? seen : undefined;
    });
    const expiresAt = Date.parse(String(before.lease['expiresAt']));
    expect(expiresAt - reservedAt).toBeGreaterThanOrEqual(TTL_MS - 50);
    expect(before.lease).toMatchObject({ expired: false, currentFencingGeneration: 1 });

    // Past its expiry: the reconciler fences it; it stays Active, its resource untouched.
    const fenced = await eventually('the expired lease to be fenced', async () => {
      const seen = await inspect();
      return seen.lease['expired'] === true ? seen : undefined;
    });
    expect(fenced.readyForDispatch).toBe(false);
    expect(fenced.lease).toMatchObject({ state: 'Active', currentFencingGeneration: 2, current: true });
    expect(await h.provider.countResources({ operationId })).toBe(1);

    // An explicit release ends it.
    const released = await h.request('POST', `${s.base}/release`, {
      token: s.token,
      body: { expectedLifecycleGeneration: 1, idempotencyKey: 'rel-expired' },
    });
    expect(released.status).toBe(202);
    await waitForLifecycle(h, s, 'Released');
    expect(await h.provider.countResources({ operationId })).toBe(0);
  });
});
