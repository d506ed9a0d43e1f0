import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backends, openBackend, type BackendHandle } from '../support/databases.ts';
import { audience, buildHarness, issuer, seedProject, type Harness } from '../support/harness.ts';

const base = '/api/projects/checkout/runs/run-1/environments';

describe.each(backends)('authentication and authority (%s)', (backend) => {
  let handle: BackendHandle;
  let h: Harness;
  const key = new Uint8Array(32).fill(3);
  let alice: string;
  let environmentId: string;

  beforeAll(async () => {
    handle = await openBackend(backend);
    h = await buildHarness(handle.db, { key });
    await seedProject(h, { tenant: 'acme', project: 'checkout', run: 'run-1', subject: 'alice' });
    // Another tenant using the same project and run names, with full grants of its own.
    await seedProject(h, { tenant: 'globex', project: 'checkout', run: 'run-1', subject: 'carol' });
    alice = await h.token('acme', 'alice');
    const res = await h.request('POST', base, { token: alice, body: { idempotencyKey: 'k' } });
    environmentId = ((await res.json()) as { environmentId: string }).environmentId;
  });
  afterAll(() => handle.close());

  const read = (token?: string) =>
    h.request('GET', `${base}/${environmentId}/lifecycle`, token === undefined ? {} : { token });

  it.each([
    ['no token', () => Promise.resolve(undefined)],
    [
      'an expired token',
      async () =>
        new SignJWT({ tenant: 'acme' })
          .setProtectedHeader({ alg: 'HS256' })
          .setSubject('alice')
          .setIssuer(issuer)
          .setAudience(audience)
          .setIssuedAt(1_700_000_000)
          .setExpirationTime(1_700_000_600)
          .sign(key),
    ],
    ['a wrong-audience token', async () => h.token('acme', 'alice', { audience: 'someone-else' })],
    [
      'a token signed with another key',
      async () =>
        new SignJWT({ tenant: 'acme' })
          .setProtectedHeader({ alg: 'HS256' })
          .setSubject('alice')
          .setIssuer(issuer)
          .setAudience(audience)
          .setExpirationTime('10m')
          .sign(new Uint8Array(32).fill(4)),
    ],
  ])('answers %s with 401 problem+json', async (_name, mint) => {
    const res = await read(await mint());
    expect(res.status).toBe(401);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect(await res.json()).toMatchObject({ type: 'urn:sandlot:problem:unauthenticated' });
  });

  it('answers a caller without a grant in its own tenant with 403', async () => {
    const bob = await h.token('acme', 'bob');
    const res = await read(bob);
    expect(res.status).toBe(403);
    expect(await res.json()).toMatchObject({ type: 'urn:sandlot:problem:forbidden' });
    const register = await h.request('POST', base, { token: bob, body: { idempotencyKey: 'bob' } });
    expect(register.status).toBe(403);
  });

  it("answers another tenant's Environment with 404, for reads and releases", async () => {
    const carol = await h.token('globex', 'carol');
    expect((await read(carol)).status).toBe(404);
    const release = await h.request('POST', `${base}/${environmentId}/release`, {
      token: carol,
      body: { expectedLifecycleGeneration: 1, idempotencyKey: 'steal' },
    });
    expect(release.status).toBe(404);
    expect((await read(alice)).status).toBe(200);
  });

  it('lets ReadProjects read but not register or release', async () => {
    const operator = await h.token('acme', 'ops', { operator: true });
    await h.request('PUT', '/admin/tenants/acme/projects/checkout/grants/reader', {
      token: operator,
      body: { permissions: ['ReadProjects'] },
    });
    const reader = await h.token('acme', 'reader');
    expect((await read(reader)).status).toBe(200);
    expect((await h.request('POST', base, { token: reader, body: { idempotencyKey: 'r' } })).status).toBe(
      403,
    );
    const release = await h.request('POST', `${base}/${environmentId}/release`, {
      token: reader,
      body: { expectedLifecycleGeneration: 1, idempotencyKey: 'r' },
    });
    expect(release.status).toBe(403);
  });

  it('applies a grant revoked between two requests on the next one', async () => {
    const operator = await h.token('acme', 'ops', { operator: true });
    await h.request('PUT', '/admin/tenants/acme/projects/checkout/grants/dave', {
      token: operator,
      body: { permissions: ['ReadProjects'] },
    });
    const dave = await h.token('acme', 'dave');
    expect((await read(dave)).status).toBe(200);
    const revoke = await h.request('PUT', '/admin/tenants/acme/projects/checkout/grants/dave', {
      token: operator,
      body: { permissions: [] },
    });
    expect(revoke.status).toBe(200);
    expect((await read(dave)).status).toBe(403);
  });

  it('keeps admin routes for operator tokens', async () => {
    const res = await h.request('GET', '/admin/provider', { token: alice });
    expect(res.status).toBe(403);
    expect(await res.json()).toMatchObject({ type: 'urn:sandlot:problem:operator-required' });
    expect((await h.request('GET', '/admin/provider')).status).toBe(401);
  });

  it('keeps a run selection immutable: identical rewrite 200, different 409', async () => {
    const operator = await h.token('acme', 'ops', { operator: true });
    const provider = (await (
      await h.request('GET', '/admin/provider', { token: operator })
    ).json()) as object;
    const path = '/admin/tenants/acme/projects/checkout/runs/run-9/selection';
    const put = (candidate: object) =>
      h.request('PUT', path, { token: operator, body: { candidates: [candidate] } });
    expect((await put({ ...provider, exclusive: true })).status).toBe(201);
    expect((await put({ ...provider, exclusive: true })).status).toBe(200);
    const different = await put({ ...provider, optionsRevision: '2', exclusive: true });
    expect(different.status).toBe(409);
    expect(await different.json()).toMatchObject({ type: 'urn:sandlot:problem:run-selection-immutable' });
    const extra = await put({ ...provider, exclusive: true, secret: 'x' });
    expect(extra.status).toBe(400);
  });
});
