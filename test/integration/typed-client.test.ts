// The typed client for TypeScript callers (http/typed-client/): its types are the OpenAPI document
// (the committed api.ts is what the generator writes from the document the server answers now),
// and its calls reach the routes those types name, with parameters, bodies and answers as declared.
import { readdir, readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSandlotClient, expandPath } from '../../http/typed-client/client.ts';
import { generateApiModules, GENERATED_DIR, type OpenApiDocument } from '../../http/typed-client/generate.ts';
import { openBackend, type BackendHandle } from '../support/databases.ts';
import { buildHarness, seedProject, type Harness } from '../support/harness.ts';

describe('the typed client', () => {
  let handle: BackendHandle;
  let h: Harness;

  beforeAll(async () => {
    handle = await openBackend('pglite');
    h = await buildHarness(handle.db);
    await seedProject(h, { tenant: 't1', project: 'p1', run: 'r1', subject: 'alice' });
  });
  afterAll(() => handle.close());

  it('is generated from the document the server answers (run `npm run openapi-client` when stale)', async () => {
    const doc = (await (await h.request('GET', '/openapi.json')).json()) as OpenApiDocument;
    const root = new URL('../../http/typed-client/', import.meta.url);
    const fresh = generateApiModules(doc);
    // Exactly the generated modules, no stale one of a tag that is gone.
    const committedModules = (await readdir(new URL(`${GENERATED_DIR}/`, root))).map(
      (f) => `${GENERATED_DIR}/${f}`,
    );
    expect(committedModules.sort()).toEqual([...fresh.keys()].filter((f) => f !== 'api.ts').sort());
    for (const [file, text] of fresh) expect(await readFile(new URL(file, root), 'utf8'), file).toBe(text);
  });

  it('registers, lists and refuses through the declared routes, answers narrowed by status', async () => {
    const client = createSandlotClient({
      baseUrl: 'http://127.0.0.1:8080',
      token: await h.token('t1', 'alice'),
      fetch: h.fetch,
    });
    const registered = await client.call('post', '/api/projects/{projectId}/runs/{runId}/environments', {
      path: { projectId: 'p1', runId: 'r1' },
      body: { idempotencyKey: 'typed-1' },
    });
    expect(registered.status).toBe(201);
    if (registered.status !== 201) return;
    const { environmentId } = registered.body;

    const listed = await client.call('get', '/api/projects/{projectId}/environments', {
      path: { projectId: 'p1' },
      query: { lifecycleState: 'Registered', limit: 10 },
    });
    expect(listed.status).toBe(200);
    if (listed.status !== 200) return;
    expect(listed.body.environments.map((e) => e.environmentId)).toEqual([environmentId]);
    expect(listed.headers.get('cache-control')).toMatch(/no-store/);

    // A refusal is the declared problem, typed as such.
    const refused = await client.call('get', '/api/projects/{projectId}/environments', {
      path: { projectId: 'p1' },
      query: { limit: 0 },
    });
    expect(refused.status).toBe(400);
    if (refused.status === 400) {
      expect(refused.body.status).toBe(400);
      expect(typeof refused.body.title).toBe('string');
    }

    const anonymous = await client.call('get', '/api/projects/{projectId}/environments', {
      path: { projectId: 'p1' },
      token: 'not-a-token',
    });
    expect(anonymous.status).toBe(401);
  });

  it('encodes path parameters and names a missing one', () => {
    expect(expandPath('/api/projects/{projectId}/runs/{runId}', { projectId: 'a b', runId: 'r/1' })).toBe(
      '/api/projects/a%20b/runs/r%2F1',
    );
    expect(() => expandPath('/api/projects/{projectId}', {})).toThrow('path parameter projectId is missing');
  });
});
