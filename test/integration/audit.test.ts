// `sandlot audit` over a real PostgreSQL schema and the simulated provider: a clean lifecycle audits
// clean, and each breach the audit exists for (an orphan, two current leases, a journal gap, a
// tampered journal state, a provider call with no attempt) is found with its IDs; an overdue
// Dispatched attempt is listed as expected-unresolved, never as a finding.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runAudit, type AuditReport } from '../../actors/audit.ts';
import { insertSimulatedCall } from '../../store/simulated-calls.ts';
import { insertSimulatedResource } from '../../store/simulated-resources.ts';
import { isolatedPostgres, type IsolatedPostgres } from '../support/databases.ts';
import { buildHarness, type Harness } from '../support/harness.ts';
import { json, provisionBody, setupScenario, waitForLease, type Scenario } from '../support/sandbox-flow.ts';

let pg: IsolatedPostgres;
let h: Harness;

beforeEach(async () => {
  pg = await isolatedPostgres();
  h = await buildHarness(pg.open(), { workers: { callTimeoutMs: 2_000 } });
});

afterEach(async () => {
  await h.close();
  await pg.drop();
});

const audit = (): Promise<AuditReport> => runAudit({ db: h.db, provider: h.provider, callLog: true });

/** Register → workspace → provision → Active, optionally → release → Released. */
async function lifecycle(options: { release: boolean; run?: string }): Promise<Scenario> {
  const s = await setupScenario(h, { run: options.run ?? 'run-1' });
  const res = await h.request('POST', `${s.base}/sandbox/provision`, {
    token: s.token,
    body: provisionBody(s),
  });
  expect(res.status).toBe(202);
  await waitForLease(h, s, (l) => l['state'] === 'Active');
  if (options.release) {
    const release = await h.request('POST', `${s.base}/release`, {
      token: s.token,
      body: { expectedLifecycleGeneration: 1, idempotencyKey: 'rel-1' },
    });
    expect(release.status).toBe(202);
    await waitForLease(h, s, (l) => l['state'] === 'Released');
  }
  return s;
}

describe('sandlot audit', () => {
  it('finds nothing after a clean lifecycle, with the call log and the inventory checked', async () => {
    const released = await lifecycle({ release: true });
    await lifecycle({ release: false, run: 'run-2' });
    const report = await audit();
    expect(report.findings).toEqual({
      multipleCurrentLeases: [],
      orphans: [],
      uncoveredTerminal: [],
      journalGaps: [],
      disallowedTransitions: [],
      callsWithoutAttempt: [],
      workspaceConflicts: [],
    });
    expect(report.total).toBe(0);
    expect(report).toMatchObject({ inventory: 'inventory', callLogChecked: true, provider: 'simulated' });
    expect(report.checked.environments).toBe(2);
    expect(report.checked.resources).toBe(1);
    expect(report.checked.journalRows).toBeGreaterThan(4);
    // Every call the lifecycle made was logged (provision ×2, the release's listOwned and release).
    const { rows } = await h.db.query<{ operation: string }>(
      'SELECT operation FROM simulated_provider_calls ORDER BY call_id',
    );
    expect(rows.map((r) => r.operation)).toEqual(
      expect.arrayContaining(['provision', 'listOwned', 'release']),
    );
    expect(released.environmentId).toMatch(/^env_/);
  });

  it('finds a provider resource no lease or cleanup record accounts for (an orphan)', async () => {
    await lifecycle({ release: false });
    const owner = {
      tenantId: 'acme',
      projectId: 'checkout',
      runId: 'run-x',
      environmentId: 'env_nobody',
      ownerHash: 'f'.repeat(40),
      lifecycleGeneration: 1,
      resourceGeneration: 1,
      providerFence: 7,
      operationId: 'op-orphan',
    };
    await insertSimulatedResource(h.db, {
      resourceId: 'sim-orphan',
      owner,
      workspace: {
        volumeId: 'vol-x',
        resourceGeneration: 1,
        dataGeneration: 1,
        mountPath: '/w',
        readOnly: false,
      },
      networkPolicyGeneration: 1,
      options: { namespace: 'simulated' },
      createdAtMs: Date.now(),
      expiresAtMs: null,
    });
    const report = await audit();
    expect(report.counts.orphans).toBe(1);
    expect(report.findings.orphans).toEqual([
      {
        resourceId: 'sim-orphan',
        environmentId: 'env_nobody',
        operationId: 'op-orphan',
        ownerHash: owner.ownerHash,
        providerFence: 7,
      },
    ]);
    expect(report.total).toBe(1);
  });

  it('finds a live resource of a released lease that no cleanup record covers', async () => {
    const s = await lifecycle({ release: true });
    // The provider "forgets" the release: the resource is live again, and nothing records it.
    await h.db.query('UPDATE simulated_resources SET deleted = false, deleted_at_ms = NULL');
    const report = await audit();
    expect(report.findings.uncoveredTerminal).toEqual([
      expect.objectContaining({
        environmentId: s.environmentId,
        leaseState: 'Released',
        resourceGeneration: 1,
      }),
    ]);
    expect(report.counts.orphans).toBe(0);
  });

  it('finds an Environment with two current leases (the one-current index dropped first)', async () => {
    const s = await lifecycle({ release: false });
    // The partial unique index forbids a second current row, so this test's schema loses it first.
    await h.db.query('DROP INDEX sandbox_leases_one_current');
    await h.db.query(
      `INSERT INTO sandbox_leases
       SELECT (jsonb_populate_record(NULL::sandbox_leases, to_jsonb(l) || jsonb_build_object(
                'resource_generation', 2, 'operation_id', l.operation_id || '-copy',
                'idempotency_key', l.idempotency_key || '-copy', 'provider_fence', l.provider_fence + 1,
                'state', 'Provisioning'))).*
         FROM sandbox_leases l WHERE environment_id = $1`,
      [s.environmentId],
    );
    const report = await audit();
    expect(report.findings.multipleCurrentLeases).toEqual([
      { environmentId: s.environmentId, resourceGenerations: [1, 2], states: ['Active', 'Provisioning'] },
    ]);
    expect(report.total).toBe(1);
  });

  it('finds a journal gap (a middle row deleted)', async () => {
    const s = await lifecycle({ release: false });
    await h.db.query('DELETE FROM environment_journal WHERE environment_id = $1 AND revision = 2', [
      s.environmentId,
    ]);
    const report = await audit();
    expect(report.findings.journalGaps).toEqual([
      expect.objectContaining({ environmentId: s.environmentId, missing: [2], extra: [] }),
    ]);
    expect(report.counts.disallowedTransitions).toBe(0);
    expect(report.total).toBe(1);
  });

  it('finds a tampered to_state as a transition the machine would not make', async () => {
    const s = await lifecycle({ release: false });
    await h.db.query(
      `UPDATE environment_journal SET to_state = jsonb_set(to_state, '{lifecycle}', '"Released"')
        WHERE environment_id = $1 AND revision = 2`,
      [s.environmentId],
    );
    const report = await audit();
    expect(report.findings.disallowedTransitions).toHaveLength(1);
    const [found] = report.findings.disallowedTransitions;
    expect(found).toMatchObject({ environmentId: s.environmentId, revision: 2 });
    expect((found?.journaled as { lifecycle: string }).lifecycle).toBe('Released');
    expect((found?.replayed as { lifecycle: string }).lifecycle).not.toBe('Released');
    expect(report.counts.journalGaps).toBe(0);
  });

  it('finds a provider call with no attempt written before it', async () => {
    const s = await lifecycle({ release: false });
    await insertSimulatedCall(h.db, {
      operation: 'provision',
      operationId: 'op-unattempted',
      ownerHash: 'e'.repeat(40),
      providerFence: 3,
    });
    // A call of a real operation, but before its attempt existed.
    const lease = await json<{ lease: { operationId: string } }>(
      await h.request('GET', `${s.base}/sandbox`, { token: s.token }),
    );
    await h.db.query(
      `INSERT INTO simulated_provider_calls (operation, operation_id, called_at)
       VALUES ('describe', $1, now() - interval '1 hour')`,
      [lease.lease.operationId],
    );
    const report = await audit();
    expect(report.findings.callsWithoutAttempt.map((c) => [c.operation, c.operationId])).toEqual([
      ['provision', 'op-unattempted'],
      ['describe', lease.lease.operationId],
    ]);
    expect(report.total).toBe(2);
  });

  it('lists an overdue Dispatched attempt as expected-unresolved, not as a finding', async () => {
    await h.close();
    h = await buildHarness(h.db, { migrated: true, workers: false });
    const s = await setupScenario(h);
    const res = await h.request('POST', `${s.base}/sandbox/provision`, {
      token: s.token,
      body: provisionBody(s),
    });
    expect(res.status).toBe(202);
    const { rows } = await h.db.query<{ attemptId: string }>(
      `UPDATE provider_attempts SET state = 'Dispatched', dispatched_at = now() - interval '5 minutes',
              deadline_at = now() - interval '4 minutes', dispatch_count = 1
        WHERE environment_id = $1 AND kind = 'provision' RETURNING attempt_id AS "attemptId"`,
      [s.environmentId],
    );
    const report = await audit();
    expect(report.total).toBe(0);
    expect(report.expectedUnresolved.attempts).toEqual([
      expect.objectContaining({
        attemptId: rows[0]?.attemptId,
        environmentId: s.environmentId,
        kind: 'provision',
        state: 'Dispatched',
      }),
    ]);
    expect(report.expectedUnresolved.attempts[0]?.ageMs).toBeGreaterThanOrEqual(4 * 60_000 - 1_000);
    expect(report.expectedUnresolved.cleanupClaims).toEqual([]);
  });
});
