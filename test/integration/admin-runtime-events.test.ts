// The embedded RuntimeEvents stand-in's admin route: an operator stores a session event's protected
// material as raw octet-stream bytes and gets the acknowledgment naming it; a material is immutable
// (the same bytes 200, other bytes 409), bad input is a 4xx problem that stores nothing, and the
// embedded port then answers exactly those bytes once the step's current registration carries the
// session. The route's own log line carries neither the private object reference nor the bytes.
import { createHash } from 'node:crypto';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerRuntimeRegistration } from '../../actors/runtime-core/runtime-core-embedded.ts';
import type { RuntimeStepRef } from '../../actors/runtime-core/runtime-operation.ts';
import { MAX_PROTECTED_MATERIAL_BYTES } from '../../actors/runtime-events/material.ts';
import { EmbeddedRuntimeEvents } from '../../actors/runtime-events/runtime-events-embedded.ts';
import { createApp } from '../../http/app.ts';
import { createTokenVerifier } from '../../http/auth/verify.ts';
import { embeddedAndProductionApps } from '../support/admin-apps.ts';
import { actorOf } from '../support/build-test-commands.ts';
import { openBackend, type BackendHandle } from '../support/databases.ts';
import { audience, buildHarness, issuer, type Harness } from '../support/harness.ts';
import { freshStep, registrationFor } from '../contract/runtime-core-cases.ts';
import { configurationBytes } from '../contract/runtime-events-cases.ts';

const key = new Uint8Array(32).fill(7);
const logLines: string[] = [];
let handle: BackendHandle;
let h: Harness;
let operator: string;
let user: string;
let app: ReturnType<typeof embeddedAndProductionApps>['app'];
let production: ReturnType<typeof embeddedAndProductionApps>['production'];

beforeAll(async () => {
  handle = await openBackend('pglite');
  h = await buildHarness(handle.db, { key });
  ({ production } = embeddedAndProductionApps(handle.db, h, key));
  // The embedded app again, with a logger whose lines the test reads.
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logLines.push(chunk.toString('utf8'));
      done();
    },
  });
  app = createApp({
    db: handle.db,
    services: h.services,
    verifier: createTokenVerifier({ kind: 'hs256', key, issuer, audience }),
    logger: pino({ level: 'info' }, sink),
    provider: h.provider.identity,
    embedded: true,
  });
  operator = await h.token('acme', 'ops', { operator: true });
  user = await h.token('acme', 'alice');
}, 120_000);
afterAll(async () => {
  await h.close();
  await handle.close();
});

const materialPath = (r: RuntimeStepRef, objectReference = 'obj:config-1') =>
  `/admin/tenants/${r.tenantId}/projects/${r.projectId}/runs/${r.runId}/core/runtime/steps/${r.stepId}` +
  `/environments/${r.environmentId}/sessions/session-1/events/evt-1/protected-material/${encodeURIComponent(objectReference)}`;

function put(
  path: string,
  body: Uint8Array,
  { token = operator, target = app, type = 'application/octet-stream' } = {},
) {
  return target.request(path, {
    method: 'PUT',
    headers: { authorization: `Bearer ${token}`, 'content-type': type },
    body,
  });
}

const problemType = async (res: Response) => ((await res.json()) as { type: string }).type;
const actor = actorOf('acme', 'alice', 'acme-alice-token');
const signal = () => AbortSignal.timeout(10_000);
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

describe('embedded RuntimeEvents admin route', () => {
  it('is for operators only, and absent outside embedded mode', async () => {
    const path = materialPath(freshStep());
    expect((await put(path, configurationBytes(), { token: user })).status).toBe(403);
    expect((await put(path, configurationBytes(), { target: production })).status).toBe(404);
  });

  it('stores a material once and answers the acknowledgment naming it', async () => {
    const ref = freshStep();
    const bytes = configurationBytes();
    const created = await put(materialPath(ref), bytes);
    expect(created.status).toBe(201);
    const acknowledgment = {
      sessionId: 'session-1',
      eventId: 'evt-1',
      objectReference: 'obj:config-1',
      sha256: sha256(bytes),
      length: bytes.length,
    };
    expect(await created.json()).toEqual(acknowledgment);
    const again = await put(materialPath(ref), bytes);
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual(acknowledgment);
    const other = await put(materialPath(ref), configurationBytes());
    expect(other.status).toBe(409);
    expect(await problemType(other)).toContain('events-material-immutable');
  });

  it('refuses bad input with a problem and stores nothing', async () => {
    const ref = freshStep();
    const bytes = configurationBytes();
    const refusals: [Response, number][] = [
      [await put(materialPath(ref), bytes, { type: 'application/json' }), 415],
      [await put(materialPath(ref), new Uint8Array(0)), 400],
      [await put(materialPath(ref), new Uint8Array(MAX_PROTECTED_MATERIAL_BYTES + 1)), 413],
      [await put(materialPath(ref, 'obj/../other'), bytes), 400],
      [await put(materialPath(ref, '-starts-with-a-dash'), bytes), 400],
      [await put(materialPath({ ...ref, environmentId: 'env_short' }), bytes), 400],
    ];
    for (const [res, status] of refusals) {
      expect(res.status).toBe(status);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    }
    // Nothing was stored: the first valid write is a creation.
    expect((await put(materialPath(ref), bytes)).status).toBe(201);
  });

  it('accepts exactly the largest material', async () => {
    const bytes = new Uint8Array(MAX_PROTECTED_MATERIAL_BYTES).fill(0x61);
    const res = await put(materialPath(freshStep()), bytes);
    expect(res.status).toBe(201);
    expect(await res.json()).toMatchObject({ length: MAX_PROTECTED_MATERIAL_BYTES, sha256: sha256(bytes) });
  });

  it('the embedded port answers the stored bytes once the session is currently registered', async () => {
    const ref = freshStep();
    const bytes = configurationBytes();
    const res = await put(materialPath(ref, 'obj:private-7'), bytes);
    const acknowledgment = (await res.json()) as Parameters<
      EmbeddedRuntimeEvents['readProtectedMaterial']
    >[2];
    const events = new EmbeddedRuntimeEvents(handle.db);
    expect(await events.readProtectedMaterial(actor, ref, acknowledgment, signal())).toBeNull();
    expect(await registerRuntimeRegistration(handle.db, registrationFor(ref, 1), 'test')).toBe('created');
    const material = await events.readProtectedMaterial(actor, ref, acknowledgment, signal());
    expect(Buffer.from(material!.bytes).equals(Buffer.from(bytes))).toBe(true);
    // The route's own line carries neither the private object reference nor the bytes (the access
    // line logs the request path, which an operator wrote, as for every route).
    const stored = logLines.filter(
      (line) => line.includes('events protected material stored') && line.includes(sha256(bytes)),
    );
    expect(stored).toHaveLength(1);
    expect(stored[0]).not.toContain('private-7');
    expect(logLines.join('')).not.toContain(Buffer.from(bytes).toString('utf8'));
  });
});
