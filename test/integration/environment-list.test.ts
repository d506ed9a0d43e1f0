// Finding Environments: the project and run lists page newest first through an opaque cursor,
// filter on what the writer projected with the snapshot (lifecycle, sandbox state, unresolved
// attempts, cleanups, updated-since), show only the caller's tenant, and refuse bad input with 400.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { backends } from '../support/databases.ts';
import { seedProject, type Harness } from '../support/harness.ts';
import { json, provisionBody, setupScenario, waitForLease, type Scenario } from '../support/sandbox-flow.ts';
import { inFreshHarness, problemOf } from '../support/sandbox-scenarios.ts';

interface Summary {
  environmentId: string;
  runId: string;
  idempotencyKey: string;
  state: string;
  sandboxState: string | null;
  unresolvedAttempts: number;
  pendingCleanups: number;
  createdAt: string;
}
interface Page {
  environments: Summary[];
  nextCursor: string | null;
}

const projectList = '/api/projects/checkout/environments';
const runList = (run: string) => `/api/projects/checkout/runs/${run}/environments`;

async function page(h: Harness, token: string, path: string): Promise<Page> {
  const res = await h.request('GET', path, { token });
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  expect(res.headers.get('cache-control')).toBe('no-store');
  return json<Page>(res);
}

async function register(h: Harness, token: string, run: string, key: string): Promise<string> {
  const res = await h.request('POST', runList(run), { token, body: { idempotencyKey: key } });
  expect(res.status).toBe(201);
  return (await json<{ environmentId: string }>(res)).environmentId;
}

const ids = (p: Page) => p.environments.map((e) => e.environmentId);

describe.each(backends)('Environment list and search (%s)', (backend) => {
  it('pages, filters and scopes the list', async () => {
    await inFreshHarness(
      backend,
      {
        workers: { callTimeoutMs: 300, reconcileEveryMs: 600_000 },
        provider: { faults: { script: [{ operation: 'provision', call: 1, fault: 'timeout-after-apply' }] } },
      },
      async (h) => {
        // a-0: its provision timed out after it applied, so its attempt stays Unknown.
        const stuck = await setupScenario(h, { run: 'run-a', key: 'a-0' });
        const provision = (s: Scenario, key: string) =>
          h.request('POST', `${s.base}/sandbox/provision`, { token: s.token, body: provisionBody(s, key) });
        expect((await provision(stuck, 'p-0')).status).toBe(202);
        await waitForLease(h, stuck, (l) => l['state'] === 'ReconciliationRequired');

        const token = stuck.token;
        const a1 = await register(h, token, 'run-a', 'a-1');
        const active: Scenario = {
          ...stuck,
          environmentId: a1,
          base: `${runList('run-a')}/${a1}`,
          volume: await json<Scenario['volume']>(
            await h.request('POST', `${runList('run-a')}/${a1}/workspace-volumes`, {
              token,
              body: { idempotencyKey: 'ws-1' },
            }),
          ),
        };
        expect((await provision(active, 'p-1')).status).toBe(202);
        await waitForLease(h, active, (l) => l['state'] === 'Active');

        const a2 = await register(h, token, 'run-a', 'a-2');
        const released = await h.request('POST', `${runList('run-a')}/${a2}/release`, {
          token,
          body: { expectedLifecycleGeneration: 1, idempotencyKey: 'rel-1' },
        });
        expect(released.status).toBe(200);

        await seedProject(h, { tenant: 'acme', project: 'checkout', run: 'run-b', subject: 'alice' });
        const b0 = await register(h, token, 'run-b', 'b-0');
        const b1 = await register(h, token, 'run-b', 'b-1');
        // Another tenant's Environment under the same project and run names is never listed.
        await seedProject(h, { tenant: 'globex', project: 'checkout', run: 'run-a', subject: 'bob' });
        const bob = await h.token('globex', 'bob');
        const theirs = await register(h, bob, 'run-a', 'a-0');

        const all = await page(h, token, projectList);
        expect(ids(all)).toEqual([b1, b0, a2, a1, stuck.environmentId]);
        expect(all.nextCursor).toBeNull();
        expect(all.environments.find((e) => e.environmentId === stuck.environmentId)).toMatchObject({
          runId: 'run-a',
          idempotencyKey: 'a-0',
          state: 'Registered',
          sandboxState: 'ReconciliationRequired',
          unresolvedAttempts: 1,
          pendingCleanups: 0,
        });
        expect(all.environments.find((e) => e.environmentId === a2)).toMatchObject({
          state: 'Released',
          sandboxState: 'NoLease',
        });
        expect(JSON.stringify(all)).not.toContain('providerOptions');
        expect(ids(await page(h, bob, projectList))).toEqual([theirs]);

        // Pages of two: every Environment once, in the same order, and the last page says so.
        const seen: string[] = [];
        let cursor: string | null = null;
        let pages = 0;
        do {
          const next: Page = await page(
            h,
            token,
            `${projectList}?limit=2${cursor === null ? '' : `&cursor=${cursor}`}`,
          );
          seen.push(...ids(next));
          cursor = next.nextCursor;
          pages++;
        } while (cursor !== null);
        expect(pages).toBe(3);
        expect(seen).toEqual(ids(all));

        expect(ids(await page(h, token, runList('run-b')))).toEqual([b1, b0]);
        expect(ids(await page(h, token, `${projectList}?hasUnresolvedAttempts=true`))).toEqual([
          stuck.environmentId,
        ]);
        expect(ids(await page(h, token, `${projectList}?hasUnresolvedAttempts=false`))).toEqual([
          b1,
          b0,
          a2,
          a1,
        ]);
        expect(ids(await page(h, token, `${projectList}?sandboxState=Active`))).toEqual([a1]);
        expect(ids(await page(h, token, `${runList('run-a')}?lifecycleState=Released`))).toEqual([a2]);
        expect(ids(await page(h, token, `${projectList}?hasPendingCleanups=true`))).toEqual([]);
        const past = new Date(Date.now() - 3_600_000).toISOString();
        expect(ids(await page(h, token, `${projectList}?updatedSince=${past}`))).toHaveLength(5);
        const future = new Date(Date.now() + 3_600_000).toISOString();
        expect(ids(await page(h, token, `${projectList}?updatedSince=${future}`))).toEqual([]);

        // A cursor belongs to the query it was given for.
        const runPage = await page(h, token, `${runList('run-a')}?limit=1`);
        const reused = await h.request('GET', `${projectList}?limit=1&cursor=${runPage.nextCursor}`, {
          token,
        });
        expect(reused.status).toBe(400);
        expect(await problemOf(reused)).toMatchObject({ type: 'urn:sandlot:problem:invalid-cursor' });
        const theirCursor = await h.request(
          'GET',
          `${runList('run-a')}?limit=1&cursor=${runPage.nextCursor}`,
          {
            token: bob,
          },
        );
        expect(theirCursor.status).toBe(400);

        // Migration 0031's backfill derives the same columns from stored snapshots.
        const sql = readFileSync(
          new URL('../../migrations/0031_environment_listing.sql', import.meta.url),
          'utf8',
        );
        const backfill = /UPDATE environments[\s\S]*?;\n/.exec(sql)?.[0];
        expect(backfill).toBeDefined();
        const listed = `SELECT environment_id, sandbox_state, lease_expires_at, unresolved_attempts, open_cleanups
                          FROM environments ORDER BY environment_id`;
        const written = (await h.db.query(listed)).rows;
        await h.db.query(
          `UPDATE environments SET sandbox_state = NULL, lease_expires_at = NULL, unresolved_attempts = 0, open_cleanups = 0`,
        );
        await h.db.query(backfill!);
        expect((await h.db.query(listed)).rows).toEqual(written);
      },
    );
  });

  it('refuses bad filters and callers without ReadProjects', async () => {
    await inFreshHarness(backend, {}, async (h) => {
      const s = await setupScenario(h, { run: 'run-a', key: 'a-0' });
      for (const query of [
        'limit=0',
        'limit=201',
        'limit=1e1',
        'sandboxState=Sleeping',
        'lifecycleState=registered',
        'hasUnresolvedAttempts=yes',
        'updatedSince=yesterday',
        'cursor=not%20a%20cursor',
        `cursor=${Buffer.from('[1,"x","1","env_x"]').toString('base64url')}`,
        'offset=10',
      ]) {
        const res = await h.request('GET', `${projectList}?${query}`, { token: s.token });
        expect(res.status, query).toBe(400);
        expect(res.headers.get('content-type')).toBe('application/problem+json');
      }
      await seedProject(h, {
        tenant: 'acme',
        project: 'checkout',
        run: 'run-a',
        subject: 'eve',
        permissions: [],
      });
      const eve = await h.token('acme', 'eve');
      const refused = await h.request('GET', projectList, { token: eve });
      expect(refused.status).toBe(403);
      expect(await problemOf(refused)).toMatchObject({ type: 'urn:sandlot:problem:forbidden' });
    });
  });
});
