// Invariant 2: no provider call without a durable attempt written before it. Every resource the
// simulated provider holds has a provision attempt created (and dispatched) before the resource
// was; at the instant the provider is contacted the attempt is already committed as Dispatched; and
// with no workers running, a provision leaves only the durable intent: a Pending attempt and an
// outbox row, with nothing at the provider until a worker picks the row up.
import { describe, expect, it } from 'vitest';
import { listSimulatedResources } from '../../store/simulated-resources.ts';
import { backends } from '../support/databases.ts';
import { json, provisionBody, setupScenario, waitForLease } from '../support/sandbox-flow.ts';
import {
  countingProvider,
  environmentRows,
  eventually,
  inFreshHarness,
  sleep,
  startWorkersWith,
} from '../support/sandbox-scenarios.ts';

describe.each(backends)('a provider call always follows its durable attempt (%s)', (backend) => {
  it('every simulated resource has a provision attempt created and dispatched before it', async () => {
    await inFreshHarness(backend, { workers: false }, async (h) => {
      // What the database holds for the operation at the instant the provider is called.
      const seen: { operationId: string; states: string[] }[] = [];
      const probe = countingProvider(h.provider, async (operation, request) => {
        if (operation !== 'provision') return;
        const operationId = (request as { owner: { operationId: string } }).owner.operationId;
        const { rows } = await h.db.query<{ state: string }>(
          `SELECT state FROM provider_attempts WHERE operation_id = $1 AND kind = 'provision'`,
          [operationId],
        );
        seen.push({ operationId, states: rows.map((r) => r.state) });
      });
      const workers = await startWorkersWith(h, probe);
      try {
        const operations: string[] = [];
        for (const run of ['run-a', 'run-b', 'run-c']) {
          const s = await setupScenario(h, { project: `p-${run}`, run });
          const res = await h.request('POST', `${s.base}/sandbox/provision`, {
            token: s.token,
            body: provisionBody(s),
          });
          expect(res.status).toBe(202);
          operations.push((await json<{ operationId: string }>(res)).operationId);
          await waitForLease(h, s, (l) => l['state'] === 'Active');
        }

        expect(probe.calls.provision).toBe(3);
        expect(seen.map((s) => s.operationId).sort()).toEqual([...operations].sort());
        for (const call of seen) expect(call.states).toEqual(['Dispatched']);

        const resources = await listSimulatedResources(h.db, { includeDeleted: true });
        expect(resources).toHaveLength(3);
        for (const resource of resources) {
          const { rows } = await h.db.query<{ createdAt: Date; dispatchedAt: Date | null; state: string }>(
            `SELECT created_at AS "createdAt", dispatched_at AS "dispatchedAt", state FROM provider_attempts
              WHERE operation_id = $1 AND kind = 'provision'`,
            [resource.owner.operationId],
          );
          expect(rows, `provision attempt of ${resource.resourceId}`).toHaveLength(1);
          const attempt = rows[0]!;
          expect(attempt.state).toBe('Succeeded');
          expect(new Date(attempt.createdAt).getTime()).toBeLessThanOrEqual(resource.createdAtMs);
          expect(attempt.dispatchedAt).not.toBeNull();
          expect(new Date(attempt.dispatchedAt!).getTime()).toBeLessThanOrEqual(resource.createdAtMs);
          expect(new Date(attempt.createdAt).getTime()).toBeLessThanOrEqual(
            new Date(attempt.dispatchedAt!).getTime(),
          );
        }
      } finally {
        await workers.close();
      }
    });
  });

  it('with workers stopped, provision leaves a Pending attempt and an outbox row and nothing at the provider', async () => {
    await inFreshHarness(backend, { workers: false }, async (h) => {
      const s = await setupScenario(h, { run: 'run-stopped' });
      const res = await h.request('POST', `${s.base}/sandbox/provision`, {
        token: s.token,
        body: provisionBody(s),
      });
      expect(res.status).toBe(202);
      expect(await json(res)).toMatchObject({ state: 'Provisioning', current: true });

      await sleep(300);
      const rows = await environmentRows(h.db, s.environmentId);
      expect(rows.leases.map((l) => l.state)).toEqual(['Provisioning']);
      expect(rows.attempts.map((a) => [a.kind, a.state])).toEqual([['provision', 'Pending']]);
      expect(rows.attempts[0]?.dispatchedAt).toBeNull();
      expect(rows.outbox).toEqual([{ attemptId: rows.attempts[0]!.attemptId, acknowledged: false }]);
      expect(await h.provider.countResources({ includeDeleted: true })).toBe(0);

      // The durable intent is enough: a worker that starts later finds the row and completes it.
      const probe = countingProvider(h.provider);
      const workers = await startWorkersWith(h, probe);
      try {
        await waitForLease(h, s, (l) => l['state'] === 'Active');
        expect(probe.calls.provision).toBe(1);
        const after = await environmentRows(h.db, s.environmentId);
        expect(after.attempts.find((a) => a.kind === 'provision')?.state).toBe('Succeeded');
        await eventually('outbox acknowledged', async () =>
          (await environmentRows(h.db, s.environmentId)).outbox.every((o) => o.acknowledged)
            ? true
            : undefined,
        );
        expect(await h.provider.countResources({})).toBe(1);
      } finally {
        await workers.close();
      }
    });
  });
});
