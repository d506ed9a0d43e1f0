// Invariant 1: at most one current lease per Environment. The machine refuses a second provision
// while a lease is current, the partial unique index refuses a second current row even to a writer
// that bypasses the machine, and concurrent provisions under different keys produce one lease.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertLease } from '../../store/leases.ts';
import { backends, openBackend, type BackendHandle } from '../support/databases.ts';
import { buildHarness, type Harness } from '../support/harness.ts';
import { json, provisionBody, setupScenario, waitForLease } from '../support/sandbox-flow.ts';
import {
  createVolume,
  environmentRows,
  mutableRows,
  problemOf,
  provisionWith,
  slug,
} from '../support/sandbox-scenarios.ts';

describe.each(backends)('one current lease per Environment (%s)', (backend) => {
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

  it('refuses a second provision under another key with 409 lease-conflict and writes nothing', async () => {
    const s = await setupScenario(h, { run: 'run-second' });
    const first = await h.request('POST', `${s.base}/sandbox/provision`, {
      token: s.token,
      body: provisionBody(s, 'prov-1'),
    });
    expect(first.status).toBe(202);
    await waitForLease(h, s, (l) => l['state'] === 'Active');

    // A second, Available volume: the Workspace check passes, so only the lease rule can refuse.
    const other = await createVolume(h, s, 'ws-2');
    const before = mutableRows(await environmentRows(h.db, s.environmentId));
    const second = await h.request('POST', `${s.base}/sandbox/provision`, {
      token: s.token,
      body: provisionWith(other, 'prov-2'),
    });
    expect(second.status).toBe(409);
    const problem = await problemOf(second);
    expect(slug(problem)).toBe('lease-conflict');

    const after = mutableRows(await environmentRows(h.db, s.environmentId));
    expect(after).toEqual(before);
    expect(after.leases).toHaveLength(1);
    expect(after.attempts.filter((a) => a.kind === 'provision')).toHaveLength(1);
    const volume = await h.db.query<{ state: string }>(
      'SELECT state FROM workspace_volumes WHERE volume_id = $1',
      [other.volumeId],
    );
    expect(volume.rows[0]?.state).toBe('Available');
  });

  it('rejects a second current lease row written past the machine (sandbox_leases_one_current)', async () => {
    const s = await setupScenario(h, { run: 'run-index' });
    const first = await h.request('POST', `${s.base}/sandbox/provision`, {
      token: s.token,
      body: provisionBody(s, 'prov-1'),
    });
    expect(first.status).toBe(202);
    const lease = await json<{ operationId: string }>(first);
    const row = (
      await h.db.query<Record<string, unknown>>('SELECT * FROM sandbox_leases WHERE operation_id = $1', [
        lease.operationId,
      ])
    ).rows[0]!;

    const direct = insertLease(h.db, {
      environmentId: s.environmentId,
      resourceGeneration: 99,
      operationId: 'op_directly_inserted_second_current',
      lifecycleGeneration: 1,
      providerFence: 99,
      currentFencingGeneration: 1,
      idempotencyKey: 'direct',
      runSelection: row['run_selection'] as Record<string, unknown>,
      providerIdentity: row['provider_identity'] as Record<string, unknown>,
      providerOptions: row['provider_options'] as Record<string, unknown>,
      recoveryRequest: {},
      requestedBy: null,
      expiresAt: null,
      workspace: row['workspace'] as never,
      networkPolicyGeneration: 1,
      state: 'Provisioning',
      resource: null,
      releaseReceipt: null,
      failure: null,
      revision: 1,
    });
    await expect(direct).rejects.toThrow(/sandbox_leases_one_current/);

    // Every current state holds the slot, not only Provisioning.
    for (const state of ['Active', 'Releasing', 'ReconciliationRequired']) {
      await expect(
        h.db.query(
          `INSERT INTO sandbox_leases (environment_id, resource_generation, operation_id, lifecycle_generation,
             provider_fence, current_fencing_generation, state, idempotency_key, run_selection, provider_identity,
             provider_options, recovery_request, workspace, network_policy_generation, revision)
           SELECT environment_id, 98, 'op_direct_' || $2, lifecycle_generation, 98, 1, $2, 'direct-' || $2,
                  run_selection, provider_identity, provider_options, recovery_request, workspace,
                  network_policy_generation, revision
             FROM sandbox_leases WHERE operation_id = $1`,
          [lease.operationId, state],
        ),
      ).rejects.toThrow(/sandbox_leases_one_current/);
    }
    // A terminal row does not take the slot: old generations stay stored beside the current one.
    await h.db.query(
      `INSERT INTO sandbox_leases (environment_id, resource_generation, operation_id, lifecycle_generation,
         provider_fence, current_fencing_generation, state, idempotency_key, run_selection, provider_identity,
         provider_options, recovery_request, workspace, network_policy_generation, revision)
       SELECT environment_id, 97, 'op_direct_released', lifecycle_generation, 97, 1, 'Released', 'direct-released',
              run_selection, provider_identity, provider_options, recovery_request, workspace,
              network_policy_generation, revision
         FROM sandbox_leases WHERE operation_id = $1`,
      [lease.operationId],
    );
    const current = await h.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM sandbox_leases WHERE environment_id = $1
          AND state IN ('Provisioning', 'Active', 'Releasing', 'ReconciliationRequired')`,
      [s.environmentId],
    );
    expect(current.rows[0]?.n).toBe(1);
  });

  it('grants exactly one lease to concurrent provisions under different keys', async () => {
    const n = 8;
    const s = await setupScenario(h, { run: 'run-race' });
    const volumes = [s.volume];
    for (let i = 2; i <= n; i++) volumes.push(await createVolume(h, s, `ws-${i}`));

    const answers = await Promise.all(
      volumes.map((volume, i) =>
        h.request('POST', `${s.base}/sandbox/provision`, {
          token: s.token,
          body: provisionWith(volume, `race-${i}`),
        }),
      ),
    );
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((status) => status === 202)).toHaveLength(1);
    expect(statuses.filter((status) => status === 409)).toHaveLength(n - 1);
    for (const answer of answers.filter((a) => a.status === 409)) {
      expect(slug(await problemOf(answer))).toBe('lease-conflict');
    }
    const winner = await json<{ operationId: string; workspace: { volumeId: string } }>(
      answers.find((a) => a.status === 202)!,
    );

    const rows = await environmentRows(h.db, s.environmentId);
    expect(rows.leases.map((l) => l.operationId)).toEqual([winner.operationId]);
    expect(rows.attempts.filter((a) => a.kind === 'provision')).toHaveLength(1);
    expect(rows.outbox).toHaveLength(1);
    const attached = await h.db.query<{ volumeId: string }>(
      `SELECT volume_id AS "volumeId" FROM workspace_volumes WHERE environment_id = $1 AND state = 'Attached'`,
      [s.environmentId],
    );
    expect(attached.rows.map((r) => r.volumeId)).toEqual([winner.workspace.volumeId]);

    await waitForLease(h, s, (l) => l['state'] === 'Active');
    const owned = await h.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM simulated_resources WHERE owner->>'environmentId' = $1`,
      [s.environmentId],
    );
    expect(owned.rows[0]?.n).toBe(1);
  });
});
