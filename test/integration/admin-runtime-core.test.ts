// The embedded RuntimeCore stand-in's admin routes: an operator reserves operations, saves their
// evidence, moves their state and registers Runtimes over HTTP; terms, evidence and registrations
// are immutable (identical repeat 200, different 409), a state moves only from the revision read and
// only along the allowed moves, and the embedded port then answers exactly what was registered.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddedRuntimeCore } from '../../actors/runtime-core/runtime-core-embedded.ts';
import type { RuntimeStepRef } from '../../actors/ports.ts';
import { actorOf } from '../support/build-test-commands.ts';
import { openBackend, type BackendHandle } from '../support/databases.ts';
import { buildHarness, type Harness } from '../support/harness.ts';
import { embeddedAndProductionApps } from '../support/admin-apps.ts';
import { evidenceFor, freshStep, suspendTerms } from '../contract/runtime-core-cases.ts';

const key = new Uint8Array(32).fill(7);
let handle: BackendHandle;
let h: Harness;
let operator: string;
let user: string;
let app: ReturnType<typeof embeddedAndProductionApps>['app'];
let production: ReturnType<typeof embeddedAndProductionApps>['production'];

beforeAll(async () => {
  handle = await openBackend('pglite');
  h = await buildHarness(handle.db, { key });
  ({ app, production } = embeddedAndProductionApps(handle.db, h, key));
  operator = await h.token('acme', 'ops', { operator: true });
  user = await h.token('acme', 'alice');
}, 120_000);
afterAll(async () => {
  await h.close();
  await handle.close();
});

const stepPath = (r: RuntimeStepRef) =>
  `/admin/tenants/${r.tenantId}/projects/${r.projectId}/runs/${r.runId}/core/runtime/steps/${r.stepId}/environments/${r.environmentId}`;

function send(method: string, path: string, body: unknown, token = operator, target = app) {
  return target.request(path, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

const problemType = async (res: Response) => ((await res.json()) as { type: string }).type;
const actor = actorOf('acme', 'alice', 'acme-alice-token');
const signal = () => AbortSignal.timeout(10_000);

describe('embedded RuntimeCore admin routes', () => {
  it('are for operators only, and absent outside embedded mode', async () => {
    const ref = freshStep();
    expect((await send('PUT', `${stepPath(ref)}/operations/op-1`, suspendTerms(), user)).status).toBe(403);
    const res = await send('PUT', `${stepPath(ref)}/operations/op-1`, suspendTerms(), operator, production);
    expect(res.status).toBe(404);
  });

  it('reserves an operation once, and keeps a step to one current operation', async () => {
    const ref = freshStep();
    const terms = suspendTerms();
    const path = `${stepPath(ref)}/operations/op-a-${ref.runId}`;
    expect((await send('PUT', path, terms)).status).toBe(201);
    expect((await send('PUT', path, terms)).status).toBe(200);
    const changed = await send('PUT', path, { ...terms, requireReleaseCurrent: false });
    expect(changed.status).toBe(409);
    expect(await problemType(changed)).toContain('core-runtime-operation-immutable');
    const other = await send('PUT', `${stepPath(ref)}/operations/op-b-${ref.runId}`, terms);
    expect(await problemType(other)).toContain('core-runtime-step-busy');
    expect((await send('PUT', path, { ...terms, extra: 1 })).status).toBe(400);
  });

  it('saves evidence once, moves state only from the revision read, and the port follows', async () => {
    const ref = freshStep();
    const terms = suspendTerms();
    const operationId = `op-${ref.runId}`;
    const path = `${stepPath(ref)}/operations/${operationId}`;
    await send('PUT', path, terms);

    const early = await send('POST', `${path}/state`, { fromRevision: 1, to: 'committed' });
    expect(await problemType(early)).toContain('core-runtime-move-not-allowed');
    expect((await send('POST', `${path}/state`, { fromRevision: 1, to: 'fenced' })).status).toBe(200);
    const stale = await send('POST', `${path}/state`, { fromRevision: 1, to: 'committed' });
    expect(await problemType(stale)).toContain('core-runtime-state-stale');
    const bare = await send('POST', `${path}/state`, { fromRevision: 2, to: 'committed' });
    expect(await problemType(bare)).toContain('core-runtime-no-evidence');

    const evidence = evidenceFor(terms);
    expect((await send('PUT', `${path}/saved-evidence`, evidence)).status).toBe(201);
    expect((await send('PUT', `${path}/saved-evidence`, evidence)).status).toBe(200);
    const other = await send('PUT', `${path}/saved-evidence`, { ...evidence, dataGeneration: 9 });
    expect(await problemType(other)).toContain('core-runtime-evidence-immutable');
    const moved = await send('POST', `${path}/state`, { fromRevision: 2, to: 'committed' });
    expect(await moved.json()).toEqual({ operationId, state: 'committed', stateRevision: 3 });

    const core = new EmbeddedRuntimeCore(handle.db);
    const operation = await core.currentRuntimeOperation(actor, ref, signal());
    expect(operation).toEqual({ ...terms, ref, operationId, state: 'committed', stateRevision: 3 });
    expect(await core.confirmSavedOperation(actor, operation!, evidence, signal())).toEqual({
      confirmed: true,
    });

    const elsewhere = `${stepPath(freshStep())}/operations/${operationId}/state`;
    expect((await send('POST', elsewhere, { fromRevision: 3, to: 'completed' })).status).toBe(404);
    expect((await send('POST', `${path}/state`, { fromRevision: 3, to: 'completed' })).status).toBe(200);
    expect(await core.currentRuntimeOperation(actor, ref, signal())).toBeNull();
  });

  it('registers Runtimes at exactly the next generation', async () => {
    const ref = freshStep();
    const first = { profileId: 'profile-1', sessionId: 'session-1', generation: 1 };
    const path = (id: string) => `${stepPath(ref)}/registrations/${id}`;
    expect((await send('PUT', path('reg-1'), first)).status).toBe(201);
    expect((await send('PUT', path('reg-1'), first)).status).toBe(200);
    const gap = await send('PUT', path('reg-3'), { ...first, sessionId: 'session-3', generation: 3 });
    expect(await problemType(gap)).toContain('core-runtime-generation-not-next');
    const second = { profileId: 'profile-1', sessionId: 'session-2', generation: 2 };
    expect((await send('PUT', path('reg-2'), second)).status).toBe(201);
    const changed = await send('PUT', path('reg-1'), { ...first, sessionId: 'session-x' });
    expect(await problemType(changed)).toContain('core-runtime-registration-immutable');

    const core = new EmbeddedRuntimeCore(handle.db);
    expect(await core.currentRuntimeRegistration(actor, ref, signal())).toEqual({
      ref,
      registrationId: 'reg-2',
      ...second,
    });
  });
});
