// `node cli/sandlot.mjs audit` as an operator runs it: a child process with DATABASE_URL on this
// test's PostgreSQL schema. Exit 0 and a clean report on a healthy system, exit 1 with the finding's
// IDs once an orphan appears, exit 2 for a usage mistake.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditReport } from '../../actors/audit.ts';
import { insertSimulatedResource } from '../../store/simulated-resources.ts';
import { databaseUrlFor } from '../support/chaos-worker.ts';
import { runCli } from '../support/run-cli.ts';
import { isolatedPostgres, testDatabaseUrl, type IsolatedPostgres } from '../support/databases.ts';
import { buildHarness, type Harness } from '../support/harness.ts';
import { provisionBody, setupScenario, waitForLease } from '../support/sandbox-flow.ts';

describe('sandlot audit (the CLI)', () => {
  let pg: IsolatedPostgres;
  let h: Harness;
  let env: Record<string, string>;

  beforeAll(async () => {
    pg = await isolatedPostgres();
    h = await buildHarness(pg.open(), { workers: { callTimeoutMs: 2_000 } });
    // Production settings are required with DATABASE_URL; the audit calls none of these services.
    env = {
      DATABASE_URL: databaseUrlFor(testDatabaseUrl, pg.schema),
      SANDLOT_JWT_ISSUER: 'https://issuer.invalid',
      SANDLOT_JWKS_URL: 'http://127.0.0.1:9/jwks',
      SANDLOT_PROJECTS_URL: 'http://127.0.0.1:9/projects',
      SANDLOT_RUN_SELECTION_URL: 'http://127.0.0.1:9/run-selection',
      LOG_LEVEL: 'warn',
    };
    const s = await setupScenario(h);
    await h.request('POST', `${s.base}/sandbox/provision`, { token: s.token, body: provisionBody(s) });
    await waitForLease(h, s, (l) => l['state'] === 'Active');
  }, 60_000);

  afterAll(async () => {
    await h?.close();
    await pg?.drop();
  });

  it('exits 0 on a clean system (table and JSON), 1 on a finding, 2 on a usage mistake', async () => {
    const table = await runCli(['audit'], env);
    expect(table.stderr).toBe('');
    expect(table.code).toBe(0);
    expect(table.stdout).toContain('clean: no findings');

    const clean = await runCli(['audit', '--json'], env);
    expect(clean.code).toBe(0);
    const report = JSON.parse(clean.stdout) as AuditReport;
    expect(report).toMatchObject({ total: 0, inventory: 'inventory', callLogChecked: true });
    expect(report.checked).toMatchObject({ environments: 1, leases: 1, resources: 1 });

    await insertSimulatedResource(h.db, {
      resourceId: 'sim-stray-e2e',
      owner: {
        tenantId: 'acme',
        projectId: 'checkout',
        runId: 'run-gone',
        environmentId: 'env_gone',
        ownerHash: 'a'.repeat(40),
        lifecycleGeneration: 1,
        resourceGeneration: 1,
        providerFence: 9,
        operationId: 'op-gone',
      },
      workspace: {
        volumeId: 'vol-g',
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
    const found = await runCli(['audit', '--json'], env);
    expect(found.code).toBe(1);
    const dirty = JSON.parse(found.stdout) as AuditReport;
    expect(dirty.total).toBe(1);
    expect(dirty.findings.orphans.map((o) => o.resourceId)).toEqual(['sim-stray-e2e']);
    expect(found.stderr).toContain('sandlot audit: 1 finding\n');

    const usage = await runCli(['audit', '--jsn'], env);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('--json');
  }, 60_000);
});
