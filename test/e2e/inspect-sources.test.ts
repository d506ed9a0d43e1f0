// Every journal row names where its event came from (migration 0010, CommitContext.source at each
// call site): an API request (`http`), the attempt runner (`worker`), the observer, a provider
// report and the reconciler. One Environment is driven through all five in one process (the
// harness: the real runtime, workers, observer and reconciler on PostgreSQL), and its commit
// listener hears the same source as the journal records, revision for revision.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordReport } from '../../actors/sandbox/provider-reports.ts';
import type { CommitNotice } from '../../actors/runtime.ts';
import { readCurrentLease } from '../../store/leases.ts';
import { readJournal } from '../../store/journal.ts';
import { isolatedPostgres, type IsolatedPostgres } from '../support/databases.ts';
import { buildHarness, type Harness } from '../support/harness.ts';
import { json, provisionBody, setupScenario } from '../support/sandbox-flow.ts';

async function until(what: string, probe: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('journal sources', () => {
  let pg: IsolatedPostgres;
  let h: Harness;
  const heard: CommitNotice[] = [];

  beforeAll(async () => {
    pg = await isolatedPostgres();
    // A short lease (the reconciler expires it) and a busy observer (it describes the Active lease):
    // every pass, not only as a resync behind the change feed.
    h = await buildHarness(pg.open(), {
      workers: { observeEveryMs: 100, followChanges: false },
      leaseTtlMs: 4_000,
    });
    h.runtime.onCommitted((notice) => heard.push(notice));
  });
  afterAll(async () => {
    await h?.close();
    await pg?.drop();
  });

  it('records http, worker, observer, provider and reconciler, as the commit listener hears them', async () => {
    const s = await setupScenario(h);
    const provisioned = await h.request('POST', `${s.base}/sandbox/provision`, {
      token: s.token,
      body: provisionBody(s),
    });
    expect(provisioned.status).toBe(202);
    const sourcesNow = async () => new Set((await readJournal(h.db, s.environmentId)).map((r) => r.source));
    await until('the observer to describe the Active lease', async () =>
      (await sourcesNow()).has('observer'),
    );

    const lease = await readCurrentLease(h.db, s.environmentId);
    expect(lease?.state).toBe('Active');
    const { record } = await recordReport(
      { db: h.db, runtime: h.runtime },
      {
        providerId: 'simulated',
        reportId: `report-${s.environmentId}`,
        environmentId: s.environmentId,
        operationId: lease?.operationId ?? '',
        resourceGeneration: lease?.resourceGeneration ?? 0,
        providerFence: lease?.providerFence ?? 0,
        resourceId: lease?.resource?.resourceId ?? '',
        kind: 'terminated',
        observedAt: new Date().toISOString(),
      },
      new Date(),
    );
    expect(record.outcome).toBe('applied');
    await until('the reconciler to expire the lease', async () => (await sourcesNow()).has('reconciler'));

    const journal = await readJournal(h.db, s.environmentId);
    const of = (type: string) => journal.filter((r) => r.eventType === type).map((r) => r.source);
    expect(of('xstate.init')).toEqual(['http']);
    expect(of('sandbox.provision')).toEqual(['http']);
    expect(of('provider.succeeded')[0]).toBe('worker');
    expect(of('sandbox.observed')).toContain('worker');
    expect(of('sandbox.describe')).toEqual(expect.arrayContaining(['observer', 'provider']));
    expect(of('sandbox.expire')).toEqual(['reconciler']);
    expect(journal.every((r) => r.source !== null)).toBe(true);

    // The listener heard each committed revision with the source the journal keeps (later commits,
    // say the reconciler's after expiry, may follow: compare what both have).
    const committed = () =>
      heard.filter(
        (n): n is Extract<CommitNotice, { outcome: 'committed' }> =>
          n.outcome === 'committed' && n.environmentId === s.environmentId,
      );
    await until('the listener to hear every journaled revision', () =>
      Promise.resolve(committed().length >= journal.length),
    );
    expect(
      committed()
        .slice(0, journal.length)
        .map((n) => [n.revision, n.event.type, n.source]),
    ).toEqual(journal.map((r) => [r.revision, r.eventType, r.source]));

    // And the journal route shows it.
    const route = await json<{ entries: { revision: number; source: string }[] }>(
      await h.request('GET', `${s.base}/journal`, { token: s.token }),
    );
    expect(route.entries.slice(0, journal.length).map((e) => e.source)).toEqual(journal.map((r) => r.source));
  }, 60_000);
});
