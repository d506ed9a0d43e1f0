// Invariant 4: a stale fence never changes state, in PostgreSQL or at the provider. Abandon and
// reconcile naming an old (or unknown) resource generation or provider fence are 409 stale-fence and
// change nothing; a worker holding an attempt whose lease was abandoned resolves it Superseded
// without calling the provider. And abandon itself: fence first, then release, replayable by key.
import { describe, expect, it } from 'vitest';
import { runAttempt } from '../../workers/effect-processor.ts';
import { backends } from '../support/databases.ts';
import type { Harness } from '../support/harness.ts';
import { json, provisionBody, setupScenario, waitForLease, type Scenario } from '../support/sandbox-flow.ts';
import {
  attemptDepsOf,
  countingProvider,
  environmentRows,
  inFreshHarness,
  mutableRows,
  problemOf,
  provisionWith,
  slug,
} from '../support/sandbox-scenarios.ts';

interface Lease {
  operationId: string;
  resourceGeneration: number;
  providerFence: number;
  currentFencingGeneration: number;
  state: string;
  resourceId: string | null;
}

async function provision(h: Harness, s: Scenario, key: string): Promise<Lease> {
  const res = await h.request('POST', `${s.base}/sandbox/provision`, {
    token: s.token,
    body: provisionWith(s.volume, key),
  });
  expect(res.status).toBe(202);
  return json<Lease>(res);
}

const abandon = (h: Harness, s: Scenario, body: Record<string, unknown>) =>
  h.request('POST', `${s.base}/sandbox/abandon`, { token: s.token, body });

describe.each(backends)('fences (%s)', (backend) => {
  it('abandon of an Active lease bumps the fencing generation, releases the resource and replays by key', async () => {
    await inFreshHarness(backend, { workers: {} }, async (h) => {
      const s = await setupScenario(h, { run: 'run-abandon' });
      const lease = await provision(h, s, 'prov-1');
      const active = await waitForLease(h, s, (l) => l['state'] === 'Active');
      expect(active['currentFencingGeneration']).toBe(1);
      expect(await h.provider.countResources({ operationId: lease.operationId })).toBe(1);

      const body = { resourceGeneration: 1, providerFence: 1, idempotencyKey: 'abandon-1' };
      const res = await abandon(h, s, body);
      expect(res.status).toBe(202);
      const abandoned = await json<Lease>(res);
      expect(abandoned).toMatchObject({
        operationId: lease.operationId,
        state: 'Releasing',
        currentFencingGeneration: 2,
      });

      const released = await waitForLease(h, s, (l) => l['state'] === 'Released');
      expect(released).toMatchObject({ current: false, currentFencingGeneration: 2 });
      expect(await h.provider.countResources({ operationId: lease.operationId })).toBe(0);
      const rows = await environmentRows(h.db, s.environmentId);
      expect(rows.leases).toMatchObject([
        { state: 'Released', hasReceipt: true, currentFencingGeneration: 2 },
      ]);
      // The lifecycle is untouched: abandon retires the resource generation, not the Environment.
      expect(rows.lifecycleState).toBe('Registered');

      const replay = await abandon(h, s, body);
      expect(replay.status).toBe(202);
      expect(await json(replay)).toMatchObject({
        operationId: lease.operationId,
        state: 'Released',
        currentFencingGeneration: 2,
      });
      expect(mutableRows(await environmentRows(h.db, s.environmentId))).toEqual(mutableRows(rows));

      const otherKey = await abandon(h, s, { ...body, idempotencyKey: 'abandon-2' });
      expect(otherKey.status).toBe(409);
      expect(slug(await problemOf(otherKey))).toBe('lease-not-abandonable');
    });
  });

  it('refuses abandon and reconcile with an old or unknown fence as 409 stale-fence and changes nothing', async () => {
    await inFreshHarness(backend, { workers: {} }, async (h) => {
      const s = await setupScenario(h, { run: 'run-stale' });
      // Generation 1, abandoned and released; generation 2 is current.
      const first = await provision(h, s, 'prov-1');
      await waitForLease(h, s, (l) => l['state'] === 'Active');
      expect(
        (await abandon(h, s, { resourceGeneration: 1, providerFence: 1, idempotencyKey: 'ab-1' })).status,
      ).toBe(202);
      await waitForLease(h, s, (l) => l['state'] === 'Released');
      const second = await provision(h, s, 'prov-2');
      expect(second).toMatchObject({ resourceGeneration: 2, providerFence: 2 });
      await waitForLease(h, s, (l) => l['state'] === 'Active' && l['resourceGeneration'] === 2);

      const before = mutableRows(await environmentRows(h.db, s.environmentId));
      const resourcesBefore = await h.provider.countResources({ includeDeleted: true });
      const stale = [
        { resourceGeneration: 1, providerFence: 1 },
        { resourceGeneration: 2, providerFence: 1 },
        { resourceGeneration: 1, providerFence: 2 },
        { resourceGeneration: 3, providerFence: 3 },
      ];
      for (const fences of stale) {
        const res = await abandon(h, s, { ...fences, idempotencyKey: 'ab-stale' });
        expect(res.status, `abandon ${JSON.stringify(fences)}`).toBe(409);
        const problem = await problemOf(res);
        expect(slug(problem)).toBe('stale-fence');
        expect(problem['current']).toEqual({ resourceGeneration: 2, providerFence: 2 });

        const reconcile = await h.request('POST', `${s.base}/sandbox/reconcile`, {
          token: s.token,
          body: { operationId: second.operationId, ...fences },
        });
        expect(reconcile.status, `reconcile ${JSON.stringify(fences)}`).toBe(409);
        expect(slug(await problemOf(reconcile))).toBe('stale-fence');
      }
      // The old operation named with the current lease's fences is just as stale.
      const crossed = await h.request('POST', `${s.base}/sandbox/reconcile`, {
        token: s.token,
        body: { operationId: first.operationId, resourceGeneration: 2, providerFence: 2 },
      });
      expect(crossed.status).toBe(409);
      expect(slug(await problemOf(crossed))).toBe('stale-fence');

      expect(mutableRows(await environmentRows(h.db, s.environmentId))).toEqual(before);
      expect(await h.provider.countResources({ includeDeleted: true })).toBe(resourcesBefore);
      expect(await h.provider.countResources({})).toBe(1);
    });
  });

  it('a worker holding an attempt of an abandoned lease resolves it Superseded without calling the provider', async () => {
    await inFreshHarness(backend, { workers: false }, async (h) => {
      const s = await setupScenario(h, { run: 'run-superseded' });
      const res = await h.request('POST', `${s.base}/sandbox/provision`, {
        token: s.token,
        body: provisionBody(s),
      });
      expect(res.status).toBe(202);
      const lease = await json<Lease>(res);
      const pending = await environmentRows(h.db, s.environmentId);
      expect(pending.attempts.map((a) => [a.kind, a.state])).toEqual([['provision', 'Pending']]);
      const provisionAttempt = pending.attempts[0]!.attemptId;

      // Abandon moves the fence on while the provision attempt is still waiting for a worker.
      const abandoned = await abandon(h, s, {
        resourceGeneration: 1,
        providerFence: 1,
        idempotencyKey: 'ab-1',
      });
      expect(abandoned.status).toBe(202);
      expect(await json(abandoned)).toMatchObject({ state: 'Releasing', currentFencingGeneration: 2 });

      const provider = countingProvider(h.provider);
      const deps = attemptDepsOf(h, provider);
      await runAttempt(deps, provisionAttempt, new AbortController().signal);
      expect(provider.calls).toEqual({ provision: 0, describe: 0, listOwned: 0, renew: 0, release: 0 });
      const superseded = await environmentRows(h.db, s.environmentId);
      expect(superseded.attempts.find((a) => a.attemptId === provisionAttempt)).toMatchObject({
        state: 'Superseded',
        resolution: 'lease moved on before dispatch',
      });
      expect(superseded.leases).toMatchObject([{ state: 'Releasing', currentFencingGeneration: 2 }]);
      expect(await h.provider.countResources({ includeDeleted: true })).toBe(0);

      // The release opened by the abandon runs under the new fence and finds nothing to release.
      const release = superseded.attempts.find((a) => a.kind === 'release')!;
      expect(release.state).toBe('Pending');
      await runAttempt(deps, release.attemptId, new AbortController().signal);
      expect(provider.calls.provision).toBe(0);
      expect(provider.calls.release).toBe(0);
      expect(provider.calls.listOwned).toBe(1);
      const done = await environmentRows(h.db, s.environmentId);
      expect(done.leases).toMatchObject([
        { operationId: lease.operationId, state: 'Released', hasReceipt: true, currentFencingGeneration: 2 },
      ]);
      expect(done.attempts.map((a) => [a.kind, a.state])).toEqual([
        ['provision', 'Superseded'],
        ['release', 'Succeeded'],
      ]);
      const volume = await h.db.query<{ state: string }>(
        'SELECT state FROM workspace_volumes WHERE volume_id = $1',
        [s.volume.volumeId],
      );
      expect(volume.rows[0]?.state).toBe('Available');

      // Redelivering the superseded attempt later is a no-op, still without a call.
      await runAttempt(deps, provisionAttempt, new AbortController().signal);
      expect(provider.calls.provision).toBe(0);
      expect(mutableRows(await environmentRows(h.db, s.environmentId))).toEqual(mutableRows(done));
    });
  });
});
