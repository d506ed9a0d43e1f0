// The E2 and E6 flows (HTTP → actor → worker → provider) with the sandbox-host provider: two
// reference hosts started here poll the mutual-TLS control listener, and every provider call is a
// signed assignment answered by a host-signed result. E2: provision to Active, not ready while the
// host-signed describe says started, ready once it says configured (the guest reported; the
// Workspace and network checks not applicable), release.
// E6: a lost provision answer is adopted by exact listing; a silent host is uncertain, never absent;
// a host that crashed after journaling its intent quarantines the Environment (no second effect)
// until an operator confirms the cleanup, after which the operation is assigned again.
import { readdir } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readCurrentLease } from '../../store/leases.ts';
import { isolatedPostgres, type IsolatedPostgres } from '../support/databases.ts';
import { buildHarness, type Harness } from '../support/harness.ts';
import { type FleetHost, type HostFleet, startHostFleet } from '../support/sandbox-host-fleet.ts';
import { json, provisionBody, setupScenario, waitForLease, type Scenario } from '../support/sandbox-flow.ts';
import { eventually, problemOf, setupCustomScenario, slug } from '../support/sandbox-scenarios.ts';

const CALL_TIMEOUT_MS = 3_000;

describe('sandbox lifecycle on the sandbox-host provider with two reference hosts', () => {
  let pg: IsolatedPostgres;
  let fleet: HostFleet;
  let h: Harness;

  beforeAll(async () => {
    pg = await isolatedPostgres();
    const db = pg.open();
    fleet = await startHostFleet({ db, hosts: 2 });
    h = await buildHarness(db, {
      sandboxProvider: fleet.provider,
      workers: { callTimeoutMs: CALL_TIMEOUT_MS, observeEveryMs: 200, reconcileEveryMs: 300 },
    });
  }, 60_000);
  afterAll(async () => {
    await h.close();
    await fleet.close();
    await pg.drop();
  });

  const records = async (host: FleetHost) =>
    (await readdir(host.sandboxesDir).catch(() => [])).filter((name) => name.endsWith('.json'));
  const allRecords = async () => (await Promise.all(fleet.hosts.map(records))).flat();
  const hostOf = (resourceId: unknown) =>
    fleet.hosts.find((host) => String(resourceId).startsWith(`${host.hostId}/`));

  async function provision(s: Scenario, key = 'prov-1') {
    const res = await h.request('POST', `${s.base}/sandbox/provision`, {
      token: s.token,
      body: provisionBody(s, key),
    });
    expect(res.status).toBe(202);
    return json<{ operationId: string }>(res);
  }

  async function release(s: Scenario, key: string, generation = 1) {
    const res = await h.request('POST', `${s.base}/release`, {
      token: s.token,
      body: { expectedLifecycleGeneration: generation, idempotencyKey: key },
    });
    expect(res.status).toBe(202);
  }

  it('provisions to Active on an enrolled host, is ready only once the host-signed describe says configured, and releases', async () => {
    const s = await setupScenario(h, { run: 'run-e2' });
    const operator = await h.token('acme', 'ops', { operator: true });
    const identity = await json<{ providerId: string; capabilities: string[] }>(
      await h.request('GET', '/admin/provider', { token: operator }),
    );
    expect(identity).toMatchObject({ providerId: 'sandbox-host', capabilities: ['host-signed-results'] });

    await provision(s);
    const lease = await waitForLease(h, s, (l) => l['state'] === 'Active', 30_000);
    const host = hostOf(lease['resourceId']);
    expect(host).toBeDefined();
    expect(await records(host!)).toHaveLength(1);

    const inspect = async () =>
      json<{
        readyForDispatch: boolean;
        phase: string | null;
        conditions: { type: string; status: string; reason: string }[];
      }>(await h.request('GET', `${s.base}/sandbox?networkPolicyGeneration=1`, { token: s.token }));
    const reasonsOf = (body: Awaited<ReturnType<typeof inspect>>) =>
      Object.fromEntries(body.conditions.map((c) => [c.type, [c.status, c.reason]]));
    // The sandbox is recorded and started, but its guest has not reported: not ready.
    const started = await inspect();
    expect(started.readyForDispatch).toBe(false);
    expect(started.phase).toBe('started');
    expect(reasonsOf(started)['HostConfigured']).toEqual(['False', 'NotConfigured']);

    await host!.configureGuest({ environmentId: s.environmentId, operationId: String(lease['operationId']) });
    const inspected = await eventually('ready for dispatch', async () => {
      const body = await inspect();
      return body.readyForDispatch ? body : undefined;
    });
    expect(inspected.phase).toBe('configured');
    const reasons = reasonsOf(inspected);
    expect(reasons['HostConfigured']).toEqual(['True', 'Configured']);
    expect(reasons['NetworkPolicyVerified']).toEqual(['True', 'NotApplicable']);
    expect(reasons['WorkspaceAttached']).toEqual(['True', 'NotApplicable']);

    await release(s, 'rel-e2');
    await waitForLease(h, s, (l) => l['state'] === 'Released', 30_000);
    expect(await allRecords()).toEqual([]);
  });

  it('refuses a run selection that requires VM isolation or PVC attachment through the six-field match', async () => {
    const s = await setupCustomScenario(h, {
      project: 'isolated-project',
      run: 'run-vm',
      policyGenerations: [],
      candidates: (provider) => [
        { ...provider, capabilities: ['pvc-attachment', 'vm-isolation'], exclusive: true },
      ],
    });
    const res = await h.request('POST', `${s.base}/sandbox/provision`, {
      token: s.token,
      body: provisionBody(s),
    });
    expect(res.status).toBe(409);
    expect(slug(await problemOf(res))).toBe('provider-selection-mismatch');
    expect(await allRecords()).toEqual([]);
  });

  it('adopts the sandbox of a provision whose answer was lost, by exact listing, with one record', async () => {
    const s = await setupScenario(h, { run: 'run-lost' });
    fleet.provider.loseNextResponse('provision');
    await provision(s);
    const lease = await waitForLease(h, s, (l) => l['state'] === 'Active', 30_000);
    expect(await records(hostOf(lease['resourceId'])!)).toHaveLength(1);
    await release(s, 'rel-lost');
    await waitForLease(h, s, (l) => l['state'] === 'Released', 30_000);
  });

  it('a silent host leaves the release uncertain, never absent; it completes once the host answers', async () => {
    const s = await setupScenario(h, { run: 'run-silent' });
    await provision(s);
    const lease = await waitForLease(h, s, (l) => l['state'] === 'Active', 30_000);
    const host = hostOf(lease['resourceId'])!;
    await host.stop();
    await release(s, 'rel-silent');
    // Several call deadlines pass: the lease is never taken as released while its host is silent.
    await new Promise((resolve) => setTimeout(resolve, 3 * CALL_TIMEOUT_MS));
    expect((await readCurrentLease(h.db, s.environmentId))?.state).not.toBe('Released');
    expect(await records(host)).toHaveLength(1);

    await host.start();
    await waitForLease(h, s, (l) => l['state'] === 'Released', 30_000);
    expect(await records(host)).toEqual([]);
  });

  it('a host crash after its intent quarantines the Environment until an operator cleanup, then reassigns', async () => {
    for (const host of fleet.hosts) host.crashAfterNextIntent('provision');
    const s = await setupScenario(h, { run: 'run-crash' });
    const before = fleet.hosts.map((host) => host.effects['provision'] ?? 0);
    const { operationId } = await provision(s);
    const crashed = await eventually('a host stopped by the crash', () =>
      Promise.resolve(fleet.hosts.find((host) => host.host?.health().stopped === true)),
    );
    for (const host of fleet.hosts) if (host !== crashed) host.crashAfterNextIntent('none');
    // Restarted over its journal: the intent without a result becomes a quarantine.
    await crashed.stop();
    await crashed.start();
    const quarantine = crashed.host?.quarantines[0];
    expect(quarantine?.operationId).toBe(`provision:${operationId}#1`);
    await new Promise((resolve) => setTimeout(resolve, 3 * CALL_TIMEOUT_MS));
    expect((await readCurrentLease(h.db, s.environmentId))?.state).not.toBe('Active');
    // No second effect while quarantined: the effect never ran at all.
    expect(fleet.hosts.map((host) => host.effects['provision'] ?? 0)).toEqual(before);

    await crashed.host?.confirmCleanup(quarantine!.operationId, 'ops@example.test');
    const lease = await waitForLease(h, s, (l) => l['state'] === 'Active', 30_000);
    expect(lease['operationId']).toBe(operationId);
    expect(hostOf(lease['resourceId'])).toBe(crashed);
    expect(await records(crashed)).toHaveLength(1);
    await release(s, 'rel-crash');
    await waitForLease(h, s, (l) => l['state'] === 'Released', 30_000);
  });
});
