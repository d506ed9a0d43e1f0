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

  it('a renewed lease stays projected and ready past its first expiry; the key names one renewal', async () => {
    const s = await setupScenario(h, { run: 'run-renew' });
    const { operationId } = await json<{ operationId: string }>(
      await h.request('POST', `${s.base}/sandbox/provision`, { token: s.token, body: provisionBody(s) }),
    );
    const active = await waitForLease(h, s, (l) => l['state'] === 'Active');
    const firstExpiry = Date.parse(String(active['expiresAt']));
    const renew = (key: string, fences = { expectedResourceGeneration: 1, providerFence: 1 }) =>
      h.request('POST', `${s.base}/sandbox/renew`, {
        token: s.token,
        body: { ...fences, idempotencyKey: key },
      });

    // Renewed late in its term, so the new expiry is well past the first one.
    await new Promise((r) => setTimeout(r, Math.max(0, firstExpiry - Date.now() - 600)));
    const renewed = await renew('renew-1');
    expect(renewed.status).toBe(200);
    expect(renewed.headers.get('cache-control')).toBe('no-store');
    const body = await json<{ lease: Record<string, unknown>; renewal: Record<string, unknown> }>(renewed);
    expect(body.renewal).toMatchObject({ idempotencyKey: 'renew-1', state: 'Succeeded' });
    const secondExpiry = Date.parse(String(body.lease['expiresAt']));
    expect(secondExpiry).toBeGreaterThan(firstExpiry);
    expect(body.lease['expiresAt']).toBe(body.renewal['expiresAt']);
    // The provider's term moved with it, by a renew attempt written before the call.
    const attempts = await json<{ attempts: { kind: string; state: string }[] }>(
      await h.request('GET', `${s.base}/sandbox/v1/operations/${operationId}/provider-attempts`, {
        token: s.token,
      }),
    );
    expect(attempts.attempts.filter((a) => a.kind === 'renew').map((a) => a.state)).toEqual(['Succeeded']);
    expect(await h.provider.recordedExpiry(String(body.lease['resourceId']))).toBe(body.renewal['expiresAt']);

    // The same key again: the same renewal, no second call.
    const replay = await renew('renew-1');
    expect(replay.status).toBe(200);
    expect((await json<{ renewal: unknown }>(replay)).renewal).toEqual(body.renewal);
    // Stale fences change nothing.
    const stale = await renew('renew-stale', { expectedResourceGeneration: 2, providerFence: 1 });
    expect(stale.status).toBe(409);

    // Past the first expiry it is still projected and ready; the reconciler did not fence it.
    await new Promise((r) => setTimeout(r, Math.max(0, firstExpiry - Date.now()) + 200));
    expect(Date.now()).toBeLessThan(secondExpiry);
    const placement = await h.request('GET', `${s.base}/sandbox/v1/placement`, { token: s.token });
    expect(placement.status).toBe(200);
    const inspected = await json<{ readyForDispatch: boolean; lease: Record<string, unknown> }>(
      await h.request('GET', `${s.base}/sandbox?networkPolicyGeneration=1`, { token: s.token }),
    );
    expect(inspected.readyForDispatch).toBe(true);
    expect(inspected.lease).toMatchObject({ expired: false, currentFencingGeneration: 1 });

    // Not renewed again, it expires at its new expiry: fenced, and an expired lease is not renewed.
    await eventually('the renewed lease to expire', async () => {
      const seen = await json<{ lease: Record<string, unknown> }>(
        await h.request('GET', `${s.base}/sandbox`, { token: s.token }),
      );
      return seen.lease['expired'] === true ? seen : undefined;
    });
    const late = await renew('renew-late', { expectedResourceGeneration: 1, providerFence: 1 });
    expect(late.status).toBe(409);
    expect((await json(late))['type']).toBe('urn:sandlot:problem:lease-expired');
    expect(await h.provider.countResources({ operationId })).toBe(1);
  });
});
