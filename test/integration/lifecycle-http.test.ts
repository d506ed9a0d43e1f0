import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readJournal } from '../../store/journal.ts';
import { backends, openBackend, type BackendHandle } from '../support/databases.ts';
import { buildHarness, seedProject, type Harness } from '../support/harness.ts';

const tenant = 'acme';
const project = 'checkout';
const run = 'run-1';
const base = `/api/projects/${project}/runs/${run}/environments`;

describe.each(backends)('Environment lifecycle over HTTP (%s)', (backend) => {
  let handle: BackendHandle;
  let h: Harness;
  let alice: string;

  beforeAll(async () => {
    handle = await openBackend(backend);
    h = await buildHarness(handle.db);
    await seedProject(h, { tenant, project, run, subject: 'alice' });
    alice = await h.token(tenant, 'alice');
  });
  afterAll(() => handle.close());

  const register = (key: string, token = alice, path = base) =>
    h.request('POST', path, { token, body: { idempotencyKey: key } });

  it('registers once and answers a replay with 200 and the same body', async () => {
    const first = await register('k-replay');
    expect(first.status).toBe(201);
    const body = (await first.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      tenantId: tenant,
      projectId: project,
      runId: run,
      lifecycleGeneration: 1,
      state: 'Registered',
      revision: 1,
    });
    expect(body['environmentId']).toMatch(/^env_[a-z2-7]{32}$/);

    const second = await register('k-replay');
    expect(second.status).toBe(200);
    expect(await second.json()).toEqual(body);
    const { rows } = await h.db.query(
      `SELECT count(*)::int AS n FROM environments WHERE idempotency_key = 'k-replay'`,
    );
    expect(rows[0]).toEqual({ n: 1 });
  });

  it('gives different keys different Environments', async () => {
    const a = (await (await register('k-a')).json()) as { environmentId: string };
    const b = (await (await register('k-b')).json()) as { environmentId: string };
    expect(a.environmentId).not.toBe(b.environmentId);
  });

  it('reads the lifecycle with no-store', async () => {
    const { environmentId } = (await (await register('k-read')).json()) as { environmentId: string };
    const res = await h.request('GET', `${base}/${environmentId}/lifecycle`, { token: alice });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(await res.json()).toMatchObject({ environmentId, state: 'Registered', lifecycleGeneration: 1 });
  });

  it('refuses a release with a wrong generation with 409 and changes nothing', async () => {
    const { environmentId } = (await (await register('k-wrong-gen')).json()) as { environmentId: string };
    const res = await h.request('POST', `${base}/${environmentId}/release`, {
      token: alice,
      body: { expectedLifecycleGeneration: 2, idempotencyKey: 'r1' },
    });
    expect(res.status).toBe(409);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(await res.json()).toMatchObject({
      type: 'urn:sandlot:problem:lifecycle-generation-mismatch',
      currentLifecycleGeneration: 1,
    });
    const read = (await (
      await h.request('GET', `${base}/${environmentId}/lifecycle`, { token: alice })
    ).json()) as object;
    expect(read).toMatchObject({ state: 'Registered', revision: 1 });
    expect(await readJournal(h.db, environmentId)).toHaveLength(1);
  });

  it('releases, and answers a release replay with the same body', async () => {
    const { environmentId } = (await (await register('k-release')).json()) as { environmentId: string };
    const release = () =>
      h.request('POST', `${base}/${environmentId}/release`, {
        token: alice,
        body: { expectedLifecycleGeneration: 1, idempotencyKey: 'release-1' },
      });
    const first = await release();
    expect(first.status).toBe(200);
    const body = await first.json();
    expect(body).toMatchObject({ state: 'Released', revision: 2, lifecycleGeneration: 1 });
    const second = await release();
    expect(second.status).toBe(200);
    expect(await second.json()).toEqual(body);

    const other = await h.request('POST', `${base}/${environmentId}/release`, {
      token: alice,
      body: { expectedLifecycleGeneration: 1, idempotencyKey: 'release-2' },
    });
    expect(other.status).toBe(409);
    expect(await other.json()).toMatchObject({ type: 'urn:sandlot:problem:release-conflict' });
    const journal = await readJournal(h.db, environmentId);
    expect(journal.map((j) => [j.revision, j.eventType, j.toState])).toEqual([
      [
        1,
        'xstate.init',
        {
          lifecycle: 'Registered',
          sandbox: 'NoLease',
          cleanup: 'Clean',
          commands: 'Open',
          workspace: 'Steady',
        },
      ],
      [
        2,
        'environment.release',
        {
          lifecycle: 'Released',
          sandbox: 'NoLease',
          cleanup: 'Clean',
          commands: 'Open',
          workspace: 'Steady',
        },
      ],
    ]);
  });

  it('needs a run selection to register', async () => {
    const res = await register('k', alice, `/api/projects/${project}/runs/no-selection/environments`);
    expect(res.status).toBe(409);
    expect(await res.json()).toMatchObject({ type: 'urn:sandlot:problem:run-selection-missing' });
  });

  it.each([
    ['an unknown field', { idempotencyKey: 'x', tenantId: 'evil' }],
    ['a missing key', {}],
    ['an empty key', { idempotencyKey: '' }],
    ['a non-string key', { idempotencyKey: 7 }],
    ['not JSON', '{"idempotencyKey":'],
  ])('rejects a registration body with %s as a 400 problem and stores nothing', async (_name, body) => {
    const before = await h.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM environments`);
    const res = await h.request('POST', base, { token: alice, body });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    const problem = (await res.json()) as { type: string; detail: string };
    expect(problem.type).toMatch(/^urn:sandlot:problem:(invalid-request|malformed-request)$/);
    const after = await h.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM environments`);
    expect(after.rows[0]).toEqual(before.rows[0]);
  });

  it('rejects a release body with extra fields or a non-positive generation', async () => {
    const { environmentId } = (await (await register('k-bad-release')).json()) as { environmentId: string };
    for (const body of [
      { expectedLifecycleGeneration: 1, idempotencyKey: 'r', targetState: 'Registered' },
      { expectedLifecycleGeneration: 0, idempotencyKey: 'r' },
      { expectedLifecycleGeneration: 1.5, idempotencyKey: 'r' },
    ]) {
      const res = await h.request('POST', `${base}/${environmentId}/release`, { token: alice, body });
      expect(res.status).toBe(400);
    }
    const read = (await (
      await h.request('GET', `${base}/${environmentId}/lifecycle`, { token: alice })
    ).json()) as object;
    expect(read).toMatchObject({ state: 'Registered', revision: 1 });
  });

  it('answers an unknown Environment ID with 404', async () => {
    const res = await h.request('GET', `${base}/env_${'a'.repeat(32)}/lifecycle`, { token: alice });
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ type: 'urn:sandlot:problem:environment-not-found' });
  });
});
