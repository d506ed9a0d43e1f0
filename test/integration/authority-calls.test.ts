// How often each route asks the Projects authority and the run-selection service, counted at the
// ports: no more than the seed's rule needs. A read asks before it reads and again after (2
// Projects calls); a write asks before and again inside the commit transaction, the run selection
// with it (2 Projects calls, 1 selection call, plus 1 selection call before when the write needs
// the selection itself: register and provision). A commit a read makes (the describe an inspection
// opens) rechecks inside its transaction too. And the rule still holds at every one of those calls:
// a caller who loses the permission at any of them gets 403 and changes nothing.
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type {
  Caller,
  Permission,
  ProjectsAuthority,
  RunSelection,
  RunSelectionSource,
} from '../../actors/ports.ts';
import type { Queryable } from '../../store/db.ts';
import { GrantsAuthority } from '../../store/grants.ts';
import { TableRunSelections } from '../../store/run-selections.ts';
import { startWorkers, type WorkerHost } from '../../workers/host.ts';
import { isolatedPostgres, type IsolatedPostgres } from '../support/databases.ts';
import { buildHarness, type Harness } from '../support/harness.ts';
import { json, provisionBody, setupScenario, waitForLease, type Scenario } from '../support/sandbox-flow.ts';

/** The grants table, counted; from call `denyFrom` on (counted since `arm`) it grants nothing. */
class CountingAuthority implements ProjectsAuthority {
  calls = 0;
  denyFrom: number | null = null;
  constructor(private readonly inner: ProjectsAuthority) {}

  arm(denyFrom: number | null = null): void {
    this.calls = 0;
    this.denyFrom = denyFrom;
  }

  async permissions(caller: Caller, projectId: string, via?: Queryable): Promise<ReadonlySet<Permission>> {
    const call = this.calls;
    this.calls += 1;
    if (this.denyFrom !== null && call >= this.denyFrom) return new Set();
    return this.inner.permissions(caller, projectId, via);
  }
}

class CountingSelections implements RunSelectionSource {
  calls = 0;
  constructor(private readonly inner: RunSelectionSource) {}

  get(tenantId: string, projectId: string, runId: string, via?: Queryable): Promise<RunSelection | null> {
    this.calls += 1;
    return this.inner.get(tenantId, projectId, runId, via);
  }
}

interface Counted {
  status: number;
  projects: number;
  selection: number;
}

describe('authority calls per route', () => {
  let pg: IsolatedPostgres;
  let h: Harness;
  let workers: WorkerHost;
  let authority: CountingAuthority;
  let selections: CountingSelections;
  let s: Scenario;
  let operationId: string;

  const rowCounts = async () =>
    (
      await h.db.query<Record<string, number>>(
        `SELECT (SELECT count(*)::int FROM environments) AS environments,
                (SELECT count(*)::int FROM environment_journal) AS journal,
                (SELECT count(*)::int FROM outbox) AS outbox,
                (SELECT count(*)::int FROM sandbox_leases) AS leases,
                (SELECT count(*)::int FROM workspace_volumes) AS volumes,
                (SELECT coalesce(sum(revision), 0)::int FROM environments) AS revisions`,
      )
    ).rows[0];

  /** One request, with the calls it made to each service. */
  const counted = async (method: string, path: string, body?: unknown): Promise<Counted> => {
    authority.arm();
    selections.calls = 0;
    const res = await h.request(method, path, { token: s.token, ...(body === undefined ? {} : { body }) });
    await res.arrayBuffer();
    return { status: res.status, projects: authority.calls, selection: selections.calls };
  };

  /**
   * The same request with the permission lost at each of its Projects calls in turn: 403, and
   * nothing changed by a commit that did not hold the permission (`committedFrom`: from this call
   * on, a commit made under the permission — an inspection's describe — stays, as it did).
   */
  const losesAtEveryCall = async (
    method: string,
    path: string,
    calls: number,
    body: () => unknown,
    committedFrom = calls,
  ) => {
    for (let denyFrom = 0; denyFrom < calls; denyFrom += 1) {
      const before = await rowCounts();
      authority.arm(denyFrom);
      const b = body();
      const res = await h.request(method, path, { token: s.token, ...(b === undefined ? {} : { body: b }) });
      authority.arm();
      expect({ denyFrom, status: res.status }).toEqual({ denyFrom, status: 403 });
      expect(await json(res)).toMatchObject({ type: 'urn:sandlot:problem:forbidden' });
      if (denyFrom < committedFrom) expect(await rowCounts()).toEqual(before);
    }
  };

  beforeAll(async () => {
    pg = await isolatedPostgres();
    const db = pg.open();
    authority = new CountingAuthority(new GrantsAuthority(db));
    selections = new CountingSelections(new TableRunSelections(db));
    h = await buildHarness(db, { authority, selections, workers: false });
    // Workers ask uncounted ports: only what the API's routes ask is counted here.
    workers = await startWorkers(
      {
        db,
        runtime: h.runtime,
        provider: h.provider,
        logger: pino({ level: 'silent' }),
        networkPolicies: h.networkPolicies,
        authority: new GrantsAuthority(db),
        selections: new TableRunSelections(db),
      },
      { reconcileEveryMs: 200, republishAfterMs: 500, relayPollMs: 50, callTimeoutMs: 2_000 },
    );
    s = await setupScenario(h);
  });
  afterAll(async () => {
    await workers?.close();
    await h?.close();
    await pg?.drop();
  });

  const envs = '/api/projects/checkout/runs/run-1/environments';
  const read = { projects: 2, selection: 0 };
  const write = { projects: 2, selection: 1 };
  const writeWithSelection = { projects: 2, selection: 2 };

  it('asks twice per read and twice per write (once inside the commit), with the selection at commit', async () => {
    expect(await counted('POST', envs, { idempotencyKey: 'count-1' })).toEqual({
      status: 201,
      ...writeWithSelection,
    });
    expect(await counted('POST', envs, { idempotencyKey: 'count-1' })).toEqual({
      status: 200,
      ...writeWithSelection,
    });
    expect(await counted('POST', `${s.base}/workspace-volumes`, { idempotencyKey: 'ws-2' })).toEqual({
      status: 201,
      projects: 2,
      selection: 0,
    });
    expect(await counted('POST', `${s.base}/sandbox/provision`, provisionBody(s))).toEqual({
      status: 202,
      ...writeWithSelection,
    });
    // A replay answers what it read, between two checks.
    expect(await counted('POST', `${s.base}/sandbox/provision`, provisionBody(s))).toEqual({
      status: 202,
      ...read,
    });
    const lease = await waitForLease(h, s, (l) => l['state'] === 'Active');
    operationId = lease['operationId'] as string;

    // An inspection opens a describe: that commit rechecks inside its transaction, and the
    // closing check after the last read asks for authority and the selection again.
    expect(await counted('GET', `${s.base}/sandbox?networkPolicyGeneration=1`)).toEqual({
      status: 200,
      projects: 3,
      selection: 2,
    });
    expect(await counted('GET', `${s.base}/lifecycle`)).toEqual({ status: 200, ...read });
    expect(await counted('GET', `${s.base}/journal`)).toEqual({ status: 200, ...read });
    expect(await counted('GET', `${s.base}/sandbox/v1/operations/${operationId}/provider-attempts`)).toEqual({
      status: 200,
      ...read,
    });
    expect(await counted('GET', `${s.base}/sandbox/v1/late-resource-cleanups`)).toEqual({
      status: 200,
      ...read,
    });
    expect(
      await counted('POST', `${s.base}/sandbox/abandon`, {
        idempotencyKey: 'abandon-1',
        resourceGeneration: 1,
        providerFence: 1,
      }),
    ).toEqual({ status: 202, ...write });
    await waitForLease(h, s, (l) => l['state'] === 'Released');
    expect(
      await counted('POST', `${envs}/${s.environmentId}/release`, {
        expectedLifecycleGeneration: 1,
        idempotencyKey: 'release-1',
      }),
    ).toEqual({ status: 200, ...write });
  });

  it('answers 403 and changes nothing when the permission is lost at any call of a route', async () => {
    await setupScenario(h, { run: 'run-2', key: 'env-2' });
    const other = await setupScenario(h, { run: 'run-2', key: 'env-3' });
    s = other;
    await losesAtEveryCall('POST', '/api/projects/checkout/runs/run-2/environments', 2, () => ({
      idempotencyKey: 'lost-1',
    }));
    await losesAtEveryCall('POST', `${s.base}/workspace-volumes`, 2, () => ({ idempotencyKey: 'ws-lost' }));
    await losesAtEveryCall('POST', `${s.base}/sandbox/provision`, 2, () => provisionBody(s, 'prov-lost'));
    await losesAtEveryCall('GET', `${s.base}/lifecycle`, 2, () => undefined);
    // An Active lease, so that the inspection's describe commit is reached as well.
    expect((await counted('POST', `${s.base}/sandbox/provision`, provisionBody(s))).status).toBe(202);
    const lease = await waitForLease(h, s, (l) => l['state'] === 'Active');
    // Lost at the describe's in-transaction recheck: no describe is opened. Lost after it: the
    // describe stays committed (it was authorized when it committed), and nothing is answered.
    await losesAtEveryCall('GET', `${s.base}/sandbox?networkPolicyGeneration=1`, 3, () => undefined, 2);
    await losesAtEveryCall(
      'GET',
      `${s.base}/sandbox/v1/operations/${lease['operationId'] as string}/provider-attempts`,
      2,
      () => undefined,
    );
    await losesAtEveryCall('POST', `${s.base}/sandbox/abandon`, 2, () => ({
      idempotencyKey: 'abandon-lost',
      resourceGeneration: 1,
      providerFence: 1,
    }));
    await losesAtEveryCall('POST', `${s.base}/release`, 2, () => ({
      expectedLifecycleGeneration: 1,
      idempotencyKey: 'release-lost',
    }));
  });
});
