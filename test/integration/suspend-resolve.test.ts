// POST /internal/runtime/suspend/resolve through the real HTTP app on PostgreSQL, embedded mode: an
// Environment with an Active lease and its Workspace attached, Core's suspend operation and Runtime
// registration registered in the embedded RuntimeCore stand-in (one step per case, since a step has
// one current operation and its terms never change). The resolve answers the exact flush request,
// refuses every mismatch with a stable code, answers no-store always, and writes nothing.
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RuntimeOperation, RuntimeStepRef } from '../../actors/ports.ts';
import {
  EmbeddedRuntimeCore,
  moveRuntimeOperation,
  registerRuntimeOperation,
  registerRuntimeRegistration,
} from '../../actors/runtime-core/runtime-core-embedded.ts';
import type { RuntimeOperationTerms } from '../../actors/runtime-core/runtime-operation.ts';
import { SuspendService } from '../../actors/suspend/resolve.ts';
import { createApp } from '../../http/app.ts';
import { createTokenVerifier } from '../../http/auth/verify.ts';
import { createLogger } from '../../lib/logger.ts';
import { readCurrentLease, type LeaseRow } from '../../store/leases.ts';
import { readStorageBinding } from '../../store/workspace-bindings.ts';
import { readVolume, type VolumeRow } from '../../store/workspaces.ts';
import { actorOf } from '../support/build-test-commands.ts';
import { openBackend, type BackendHandle } from '../support/databases.ts';
import { audience, buildHarness, issuer, seedProject, type Harness } from '../support/harness.ts';
import { provisionBody, setupScenario, waitForLease, type Scenario } from '../support/sandbox-flow.ts';

const key = new Uint8Array(32).fill(11);
const path = '/internal/runtime/suspend/resolve';
const run = 'run-suspend';
let handle: BackendHandle;
let h: Harness;
let s: Scenario;
let app: ReturnType<typeof createApp>;
let token: string;
let lease: LeaseRow;
let volume: VolumeRow;
let steps = 0;

beforeAll(async () => {
  handle = await openBackend('postgres');
  h = await buildHarness(handle.db, {
    key,
    workers: {},
    provider: { phaseDelaysMs: { imageReady: 10, started: 30 } },
  });
  s = await setupScenario(h, { run });
  const provisioned = await h.request('POST', `${s.base}/sandbox/provision`, {
    token: s.token,
    body: provisionBody(s),
  });
  expect(provisioned.status).toBe(202);
  await waitForLease(h, s, (l) => l['state'] === 'Active');
  // Nothing else writes from here on: the resolve's own writes (none) are all that could change rows.
  await h.workers?.close();
  lease = (await readCurrentLease(h.db, s.environmentId))!;
  volume = (await readVolume(h.db, s.volume.volumeId))!;
  expect(volume).toMatchObject({ state: 'Attached', attachedLease: lease.resourceGeneration });
  // The harness composes no RuntimeCore (suspend answers 503 there); this app asks the stand-in.
  app = createApp({
    db: h.db,
    services: {
      ...h.services,
      suspend: new SuspendService({
        db: h.db,
        authority: h.authority,
        selections: h.selections,
        runtimeCore: new EmbeddedRuntimeCore(h.db),
      }),
    },
    verifier: createTokenVerifier({ kind: 'hs256', key, issuer, audience }),
    logger: createLogger({ level: 'silent' }),
    provider: h.provider.identity,
    embedded: true,
  });
  token = s.token;
}, 120_000);
afterAll(async () => {
  await h.provider.close();
  await handle.close();
});

function post(body: unknown, bearer: string | null = token, target = app) {
  return target.request(path, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(bearer === null ? {} : { authorization: `Bearer ${bearer}` }),
    },
    body: JSON.stringify(body),
  });
}

const stepRef = (stepId: string): RuntimeStepRef => ({
  tenantId: 'acme',
  projectId: 'checkout',
  runId: run,
  stepId,
  environmentId: s.environmentId,
});

const termsFor = (change: Partial<RuntimeOperationTerms> = {}): RuntimeOperationTerms => ({
  kind: 'suspend',
  placement: {
    leaseOperationId: lease.operationId,
    resourceGeneration: lease.resourceGeneration,
    providerFence: lease.providerFence,
  },
  workspace: { volumeId: volume.volumeId, transitionRevision: volume.revision },
  requireReleaseCurrent: true,
  ...change,
});

/** The Host session proof of a step's registration (registration IDs are unique across steps). */
const proofFor = (operation: RuntimeOperation) => ({
  registrationId: `reg-${operation.ref.stepId}`,
  sessionId: 'session-1',
  generation: 1,
});
const coreActor = actorOf('acme', 'alice', 'acme-alice-token');

/** A fresh step with Core's suspend operation (and registration unless told not to); answers it as held. */
async function coreHolds(
  change: Partial<RuntimeOperationTerms> = {},
  { registered = true } = {},
): Promise<RuntimeOperation> {
  const ref = stepRef(`agent-${++steps}`);
  const operationId = `op-suspend-${steps}`;
  expect(await registerRuntimeOperation(h.db, { ref, operationId, terms: termsFor(change) }, 'test')).toBe(
    'created',
  );
  if (registered) {
    expect(
      await registerRuntimeRegistration(
        h.db,
        {
          ref,
          registrationId: `reg-${ref.stepId}`,
          sessionId: 'session-1',
          generation: 1,
          profileId: 'profile-1',
        },
        'test',
      ),
    ).toBe('created');
  }
  const held = await new EmbeddedRuntimeCore(h.db).currentRuntimeOperation(
    coreActor,
    ref,
    AbortSignal.timeout(5_000),
  );
  return held!;
}

async function rows() {
  const read = async (sql: string) => (await h.db.query(sql, [s.environmentId])).rows;
  return JSON.stringify([
    await read('SELECT * FROM environments WHERE environment_id = $1'),
    await read('SELECT * FROM sandbox_leases WHERE environment_id = $1 ORDER BY resource_generation'),
    await read('SELECT * FROM workspace_volumes WHERE environment_id = $1'),
    await read(
      `SELECT b.* FROM workspace_storage_bindings b JOIN workspace_volumes v USING (volume_id)
        WHERE v.environment_id = $1`,
    ),
  ]);
}

async function refused(res: Response, status: number, code: string) {
  expect(res.headers.get('cache-control')).toBe('no-store');
  expect(res.headers.get('content-type')).toBe('application/problem+json');
  const body = (await res.json()) as { type: string; status: number; detail?: string };
  expect({ status: res.status, type: body.type }).toEqual({ status, type: `urn:sandlot:problem:${code}` });
  return body;
}

describe('POST /internal/runtime/suspend/resolve', () => {
  it('answers the exact Storage resource, provider binding and next data generation; a replay answers the same', async () => {
    const before = await rows();
    const operation = await coreHolds();
    const session = proofFor(operation);
    const res = await post({ operation, session });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const storage = (await readStorageBinding(h.db, volume.volumeId))!;
    const answer = await res.json();
    expect(answer).toEqual({
      operationId: operation.operationId,
      stateRevision: 1,
      storage: {
        volumeId: volume.volumeId,
        resourceGeneration: volume.resourceGeneration,
        providerId: storage.selection.providerId,
        pvc: { namespace: storage.pvcNamespace, name: storage.pvcName, uid: storage.pvcUid },
      },
      providerBinding: {
        providerId: h.provider.identity.providerId,
        resourceId: lease.resource!.resourceId,
        leaseOperationId: lease.operationId,
        lifecycleGeneration: lease.lifecycleGeneration,
        resourceGeneration: lease.resourceGeneration,
        providerFence: lease.providerFence,
      },
      transitionRevision: volume.revision,
      dataGeneration: volume.dataGeneration,
      nextDataGeneration: volume.dataGeneration + 1,
    });
    const text = JSON.stringify(answer);
    expect(text).not.toContain('acme-alice-token');
    expect(text).not.toContain(token);

    const replay = await post({ operation, session });
    expect(replay.status).toBe(200);
    expect(await replay.json()).toEqual(answer);
    expect(await rows()).toBe(before);
  });

  it('refuses any field beyond the operation and the session proof (no Workspace evidence), changing nothing', async () => {
    const before = await rows();
    const operation = await coreHolds();
    const session = proofFor(operation);
    const receipt = { flushReceipt: { dataGeneration: 9, treeSha256: 'a'.repeat(64) } };
    for (const body of [
      { operation, session, ...receipt },
      { operation: { ...operation, ...receipt }, session },
      { operation, session: { ...session, dataGeneration: 2 } },
      { operation },
      { session },
      { operation: { ...operation, state: 'sleeping' }, session },
    ]) {
      const body400 = await refused(await post(body), 400, 'invalid-request');
      expect(body400.detail).toBeDefined();
    }
    expect(await rows()).toBe(before);
  });

  it('refuses an operation Core no longer holds as Reserved, or holds otherwise than offered', async () => {
    const before = await rows();
    const fenced = await coreHolds();
    expect(await moveRuntimeOperation(h.db, fenced.ref, fenced.operationId, 1, 'fenced')).toMatchObject({
      result: 'moved',
    });
    // Offered as it was (Reserved) or as Core holds it now (Fenced): resolve is for Reserved only.
    await refused(
      await post({ operation: fenced, session: proofFor(fenced) }),
      409,
      'suspend-operation-state',
    );
    await refused(
      await post({ operation: { ...fenced, state: 'fenced', stateRevision: 2 }, session: proofFor(fenced) }),
      409,
      'suspend-operation-state',
    );

    const held = await coreHolds();
    for (const changed of [
      { ...held, stateRevision: 2 },
      { ...held, requireReleaseCurrent: false },
      {
        ...held,
        workspace: { ...held.workspace, transitionRevision: held.workspace.transitionRevision + 1 },
      },
    ]) {
      await refused(
        await post({ operation: changed, session: proofFor(changed) }),
        409,
        'suspend-operation-changed',
      );
    }
    await refused(
      await post({ operation: { ...held, operationId: 'op-other' }, session: proofFor(held) }),
      409,
      'suspend-operation-not-current',
    );
    await refused(
      await post({ operation: { ...held, ref: stepRef('agent-none') }, session: proofFor(held) }),
      409,
      'suspend-operation-not-current',
    );
    const resume = await coreHolds({ kind: 'resume' });
    await refused(
      await post({ operation: resume, session: proofFor(resume) }),
      409,
      'suspend-operation-not-current',
    );
    expect(await rows()).toBe(before);
  });

  it("refuses a session proof that is not Core's current registration, or no registration", async () => {
    const operation = await coreHolds();
    const session = proofFor(operation);
    for (const proof of [
      { ...session, registrationId: 'reg-2' },
      { ...session, sessionId: 'session-2' },
      { ...session, generation: 2 },
    ]) {
      await refused(await post({ operation, session: proof }), 409, 'runtime-session-mismatch');
    }
    const unregistered = await coreHolds({}, { registered: false });
    await refused(
      await post({ operation: unregistered, session: proofFor(unregistered) }),
      409,
      'runtime-registration-missing',
    );
  });

  it('refuses another placement, a volume not attached to it, and a moved transition revision', async () => {
    const before = await rows();
    const placement = termsFor().placement;
    for (const other of [
      { ...placement, leaseOperationId: 'op_another_lease' },
      { ...placement, resourceGeneration: placement.resourceGeneration + 1 },
      { ...placement, providerFence: placement.providerFence + 1 },
    ]) {
      const operation = await coreHolds({ placement: other });
      const session = proofFor(operation);
      await refused(await post({ operation, session }), 409, 'suspend-placement-mismatch');
    }
    const elsewhere = await coreHolds({ workspace: { volumeId: 'vol_elsewhere', transitionRevision: 1 } });
    await refused(
      await post({ operation: elsewhere, session: proofFor(elsewhere) }),
      409,
      'workspace-not-attached',
    );

    // The volume moved on since Core reserved its operation (and one that names a revision not yet reached).
    expect(volume.revision).toBeGreaterThan(1);
    for (const transitionRevision of [volume.revision - 1, volume.revision + 1]) {
      const stale = await coreHolds({ workspace: { volumeId: volume.volumeId, transitionRevision } });
      const body = await refused(
        await post({ operation: stale, session: proofFor(stale) }),
        409,
        'workspace-transition-stale',
      );
      expect(body).toMatchObject({ code: 'workspace-transition-stale' });
    }
    expect(await rows()).toBe(before);
  });

  it("answers another tenant's or run's step as not found, and a caller without authority 403", async () => {
    const operation = await coreHolds();
    const session = proofFor(operation);
    await seedProject(h, { tenant: 'globex', project: 'checkout', run, subject: 'carol' });
    await refused(
      await post({ operation, session }, await h.token('globex', 'carol')),
      404,
      'environment-not-found',
    );
    const otherRun = { ...operation, ref: { ...operation.ref, runId: 'run-other' } };
    await refused(
      await post({ operation: otherRun, session: proofFor(otherRun) }),
      404,
      'environment-not-found',
    );
    await refused(await post({ operation, session }, await h.token('acme', 'mallory')), 403, 'forbidden');
  });

  it('refuses a request without a bearer, or with an expired one', async () => {
    const operation = await coreHolds();
    const session = proofFor(operation);
    await refused(await post({ operation, session }, null), 401, 'unauthenticated');
    const now = Math.floor(Date.now() / 1000);
    const expired = await new SignJWT({ sub: 'alice', tenant: 'acme' })
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer(issuer)
      .setAudience(audience)
      .setIssuedAt(now - 7200)
      .setExpirationTime(now - 3600)
      .sign(key);
    await refused(await post({ operation, session }, expired), 401, 'unauthenticated');
  });

  it('answers 503 runtime-core-unavailable where no Core is configured', async () => {
    const operation = await coreHolds();
    const session = proofFor(operation);
    const res = await h.request('POST', path, { token, body: { operation, session } });
    await refused(res, 503, 'runtime-core-unavailable');
  });
});
