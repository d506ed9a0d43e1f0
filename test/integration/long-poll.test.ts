// Long-poll reads: `?wait=` on the lifecycle and sandbox reads answers as soon as the Environment's
// revision passes the one the caller saw, even when another process made the commit (two harnesses,
// two pools, one PostgreSQL schema: the shared revision read), at the deadline otherwise; refuses a wait over
// 30 s; and rechecks authority after the wait.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../store/migrate.ts';
import { migrateSimulated } from '../../providers/simulated/migrate.ts';
import { backends, isolatedPostgres, openBackend, type IsolatedPostgres } from '../support/databases.ts';
import { buildHarness, seedProject, type Harness } from '../support/harness.ts';

const tenant = 'acme';
const project = 'checkout';
const run = 'run-1';
const base = `/api/projects/${project}/runs/${run}/environments`;

async function timed(work: Promise<Response>): Promise<{ res: Response; ms: number }> {
  const started = Date.now();
  const res = await work;
  return { res, ms: Date.now() - started };
}

describe('long-poll across processes (postgres)', () => {
  let iso: IsolatedPostgres;
  let one: Harness;
  let two: Harness;
  let alice: string;

  beforeAll(async () => {
    iso = await isolatedPostgres();
    const key = randomBytes(32);
    const a = iso.open();
    await migrate(a);
    await migrateSimulated(a);
    one = await buildHarness(a, { key, migrated: true, workers: false });
    two = await buildHarness(iso.open(), { key, migrated: true, workers: false });
    await seedProject(one, { tenant, project, run, subject: 'alice' });
    alice = await one.token(tenant, 'alice');
  });
  afterAll(async () => {
    await one.close();
    await two.close();
    await iso.drop();
  });

  const register = async (key: string) => {
    const res = await one.request('POST', base, { token: alice, body: { idempotencyKey: key } });
    return (await res.json()) as { environmentId: string; revision: number };
  };

  it("answers a waiting read as soon as another process's commit lands", async () => {
    const env = await register('lp-wake');
    const waiting = timed(
      one.request('GET', `${base}/${env.environmentId}/lifecycle?wait=20s`, { token: alice }),
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    const released = await two.request('POST', `${base}/${env.environmentId}/release`, {
      token: alice,
      body: { expectedLifecycleGeneration: 1, idempotencyKey: 'lp-release' },
    });
    expect(released.status).toBe(200);
    const { res, ms } = await waiting;
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(await res.json()).toMatchObject({ state: 'Released', revision: env.revision + 1 });
    expect(ms).toBeGreaterThanOrEqual(250);
    expect(ms).toBeLessThan(5_000);
  });

  it('answers at the deadline when nothing changes, and at once when `after` is already passed', async () => {
    const env = await register('lp-deadline');
    const path = `${base}/${env.environmentId}/lifecycle`;
    const idle = await timed(one.request('GET', `${path}?wait=1s`, { token: alice }));
    expect(idle.res.status).toBe(200);
    expect(await idle.res.json()).toMatchObject({ revision: env.revision });
    expect(idle.ms).toBeGreaterThanOrEqual(950);
    expect(idle.ms).toBeLessThan(3_000);
    const passed = await timed(one.request('GET', `${path}?wait=10s&after=0`, { token: alice }));
    expect(passed.res.status).toBe(200);
    expect(passed.ms).toBeLessThan(1_000);
  });

  it('refuses a wait over 30 s or not a duration with 400', async () => {
    const env = await register('lp-bounds');
    for (const query of ['wait=31s', 'wait=30001ms', 'wait=soon', 'wait=5s&after=-1']) {
      const lifecycle = await one.request('GET', `${base}/${env.environmentId}/lifecycle?${query}`, {
        token: alice,
      });
      expect(lifecycle.status, query).toBe(400);
      const sandbox = await one.request('GET', `${base}/${env.environmentId}/sandbox?${query}`, {
        token: alice,
      });
      expect(sandbox.status, query).toBe(400);
    }
  });

  it('waits before the inspection, which then runs once (no lease: 404 after the wait)', async () => {
    const env = await register('lp-inspect');
    const { res, ms } = await timed(
      one.request('GET', `${base}/${env.environmentId}/sandbox?wait=1s`, { token: alice }),
    );
    expect(res.status).toBe(404);
    expect(ms).toBeGreaterThanOrEqual(950);
  });

  it('answers 403 to a caller whose permission was withdrawn during the wait', async () => {
    await seedProject(one, { tenant, project, run, subject: 'bob' });
    const bob = await one.token(tenant, 'bob');
    const env = await register('lp-revoked');
    const waiting = one.request('GET', `${base}/${env.environmentId}/lifecycle?wait=2s`, { token: bob });
    await new Promise((resolve) => setTimeout(resolve, 300));
    await seedProject(two, { tenant, project, run, subject: 'bob', permissions: ['WriteProjects'] });
    expect((await waiting).status).toBe(403);
  });
});

describe.each(backends)('long-poll in one process (%s)', (backend) => {
  it('wakes on a commit of this process', async () => {
    const handle = await openBackend(backend);
    const h = await buildHarness(handle.db, { workers: false });
    try {
      await seedProject(h, { tenant, project, run, subject: 'alice' });
      const token = await h.token(tenant, 'alice');
      const res = await h.request('POST', base, { token, body: { idempotencyKey: 'lp-local' } });
      const env = (await res.json()) as { environmentId: string; revision: number };
      const waiting = timed(h.request('GET', `${base}/${env.environmentId}/lifecycle?wait=20s`, { token }));
      await new Promise((resolve) => setTimeout(resolve, 200));
      await h.request('POST', `${base}/${env.environmentId}/release`, {
        token,
        body: { expectedLifecycleGeneration: 1, idempotencyKey: 'lp-local-release' },
      });
      const { res: answer, ms } = await waiting;
      expect(await answer.json()).toMatchObject({ revision: env.revision + 1 });
      expect(ms).toBeLessThan(5_000);
    } finally {
      await h.close();
      await handle.close();
    }
  });
});
