// The v1 placement projection: the exact current, Active, unexpired lease, read under the owner
// lock with the authority callback in the middle; a lease that changes between the reads, an
// expired one, a token without the exact run binding, or another project's token gets nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Caller, Permission, ProjectsAuthority } from '../../actors/ports.ts';
import type { Queryable } from '../../store/db.ts';
import { GrantsAuthority } from '../../store/grants.ts';
import { isolatedPostgres, type IsolatedPostgres } from '../support/databases.ts';
import { buildHarness, seedProject, type Harness } from '../support/harness.ts';
import { json, provisionBody, setupScenario, waitForLease, type Scenario } from '../support/sandbox-flow.ts';
import { eventually } from '../support/sandbox-scenarios.ts';

/** The grants table, with a hook that runs when authority is asked inside a transaction. */
class HookedAuthority implements ProjectsAuthority {
  hook: (() => Promise<void>) | null = null;
  constructor(private readonly inner: ProjectsAuthority) {}
  async permissions(caller: Caller, projectId: string, via?: Queryable): Promise<ReadonlySet<Permission>> {
    const hook = this.hook;
    if (via !== undefined && hook !== null) {
      this.hook = null;
      await hook();
    }
    return this.inner.permissions(caller, projectId, via);
  }
}

describe('placement projection', () => {
  let pg: IsolatedPostgres;
  let h: Harness;
  let authority: HookedAuthority;

  beforeAll(async () => {
    pg = await isolatedPostgres();
    const db = pg.open();
    authority = new HookedAuthority(new GrantsAuthority(db));
    h = await buildHarness(db, {
      authority,
      workers: {},
      provider: { phaseDelaysMs: { imageReady: 5, started: 10 } },
    });
  });
  afterAll(async () => {
    await h.close();
    await pg.drop();
  });

  async function activeScenario(run: string): Promise<Scenario> {
    const s = await setupScenario(h, { run });
    const provisioned = await h.request('POST', `${s.base}/sandbox/provision`, {
      token: s.token,
      body: provisionBody(s),
    });
    expect(provisioned.status).toBe(202);
    await waitForLease(h, s, (l) => l['state'] === 'Active');
    return s;
  }

  const runToken = (run: string, project = 'checkout') =>
    h.token('acme', 'alice', { runBinding: { projectId: project, runId: run } });

  it('answers the exact current Active lease with its fences, placement and provider pin, and nothing secret', async () => {
    const s = await activeScenario('run-public');
    // Observation may still write the Active lease (a later describe fills placement and bumps its
    // revision), so compare against a lease that did not change across the read.
    const { res, body, lease } = await eventually(
      'a placement read between two equal lease reads',
      async () => {
        const before = await waitForLease(h, s, () => true);
        const res = await h.request('GET', `${s.base}/sandbox/v1/placement`, { token: s.token });
        const body = await json<Record<string, unknown>>(res);
        const lease = await waitForLease(h, s, () => true);
        return before['revision'] === lease['revision'] ? { res, body, lease } : undefined;
      },
    );
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(body).toMatchObject({
      version: 'v1',
      tenantId: 'acme',
      projectId: 'checkout',
      runId: 'run-public',
      environmentId: s.environmentId,
      lifecycleGeneration: 1,
      operationId: lease['operationId'],
      resourceGeneration: 1,
      providerFence: 1,
      currentFencingGeneration: 1,
      lease: { state: 'Active', current: true, expiresAt: null, revision: lease['revision'] },
      resource: { resourceId: lease['resourceId'], placement: lease['placement'] },
      providerPin: {
        providerId: 'simulated',
        resourceId: lease['resourceId'],
        resourceGeneration: 1,
        optionsRevision: '1',
      },
    });
    const text = JSON.stringify(body);
    for (const secret of [
      'providerOptions',
      'recoveryRequest',
      'releaseReceipt',
      'runSelection',
      'phaseDelaysMs',
    ]) {
      expect(text).not.toContain(secret);
    }
  });

  it('answers 204 when the Environment has no lease', async () => {
    const s = await setupScenario(h, { run: 'run-empty' });
    const res = await h.request('GET', `${s.base}/sandbox/v1/placement`, { token: s.token });
    expect(res.status).toBe(204);
    expect(res.headers.get('cache-control')).toBe('no-store');
  });

  it('returns nothing when a concurrent write changes the lease between the first read and the re-read', async () => {
    const s = await activeScenario('run-cas');
    const writer = pg.open(1);
    authority.hook = async () => {
      // Another writer's compare-and-swap lands while the callback runs.
      await writer.query(
        `UPDATE sandbox_leases SET revision = revision + 1, updated_at = now()
          WHERE environment_id = $1 AND state = 'Active'`,
        [s.environmentId],
      );
    };
    const res = await h.request('GET', `${s.base}/sandbox/v1/placement`, { token: s.token });
    expect(authority.hook).toBeNull();
    expect(res.status).toBe(409);
    const problem = await json<Record<string, unknown>>(res);
    expect(problem['type']).toBe('urn:sandlot:problem:placement-changed');
    expect(JSON.stringify(problem)).not.toContain('resourceId');
    // Asked again, the changed lease is the snapshot, and it is projected.
    const again = await h.request('GET', `${s.base}/sandbox/v1/placement`, { token: s.token });
    expect(again.status).toBe(200);
  });

  it('returns nothing when the authority callback fails', async () => {
    const s = await activeScenario('run-callback');
    authority.hook = () => Promise.reject(new Error('authority unavailable'));
    const res = await h.request('GET', `${s.base}/sandbox/v1/placement`, { token: s.token });
    expect(res.status).toBeGreaterThanOrEqual(500);
    expect(await res.text()).not.toContain('"resource"');
  });

  it('the internal route needs a token bound to exactly this project and run, and ReadRunSelection', async () => {
    const s = await activeScenario('run-internal');
    const internal = `${s.base}/sandbox/v1/internal/placement`;
    const bound = await h.request('GET', internal, { token: await runToken('run-internal') });
    expect(bound.status).toBe(200);
    expect(bound.headers.get('cache-control')).toBe('no-store');
    expect(await json(bound)).toMatchObject({ runId: 'run-internal', environmentId: s.environmentId });

    const unbound = await h.request('GET', internal, { token: s.token });
    expect(unbound.status).toBe(403);
    expect((await json(unbound))['type']).toBe('urn:sandlot:problem:run-binding-required');

    const otherRun = await h.request('GET', internal, { token: await runToken('run-elsewhere') });
    expect(otherRun.status).toBe(403);

    // A token bound to another project (where its subject has every grant) is refused here.
    await seedProject(h, { tenant: 'acme', project: 'billing', run: 'run-internal', subject: 'alice' });
    const otherProject = await h.request('GET', internal, {
      token: await runToken('run-internal', 'billing'),
    });
    expect(otherProject.status).toBe(403);
  });
});

describe('placement of an expiring lease', () => {
  let pg: IsolatedPostgres;
  let h: Harness;

  beforeAll(async () => {
    pg = await isolatedPostgres();
    h = await buildHarness(pg.open(), {
      leaseTtlMs: 1_200,
      workers: { reconcileEveryMs: 100 },
      provider: { phaseDelaysMs: { imageReady: 5, started: 10 } },
    });
  });
  afterAll(async () => {
    await h.close();
    await pg.drop();
  });

  it('an expired lease is refused on both routes', async () => {
    const s = await setupScenario(h, { run: 'run-expiring' });
    await h.request('POST', `${s.base}/sandbox/provision`, { token: s.token, body: provisionBody(s) });
    await waitForLease(h, s, (l) => l['state'] === 'Active');
    const live = await h.request('GET', `${s.base}/sandbox/v1/placement`, { token: s.token });
    expect(live.status).toBe(200);
    expect((await json<{ lease: { expiresAt: string | null } }>(live)).lease.expiresAt).not.toBeNull();
    const runToken = await h.token('acme', 'alice', {
      runBinding: { projectId: 'checkout', runId: 'run-expiring' },
    });
    await eventually('the lease to expire', async () => {
      const res = await h.request('GET', `${s.base}/sandbox/v1/placement`, { token: s.token });
      return res.status === 409 ? res : undefined;
    });
    for (const [path, token] of [
      ['placement', s.token],
      ['internal/placement', runToken],
    ] as const) {
      const res = await h.request('GET', `${s.base}/sandbox/v1/${path}`, { token });
      expect(res.status).toBe(409);
      expect((await json(res))['type']).toBe('urn:sandlot:problem:lease-expired');
    }
  });
});
