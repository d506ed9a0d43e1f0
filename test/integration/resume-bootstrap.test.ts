// Resume bootstrap through the real HTTP app on PostgreSQL, embedded mode: after a real suspend,
// prepare and verify, Core's phase-4 request starts the Runtime on the new Host with a server-issued
// attempt and the configuration Events acknowledged. Replays answer the saved receipt only while the
// Host holds that session; a fresh Missing after an acknowledged activation is an explicit state
// loss, the only way to a replacement attempt (under a newer registration); an unreachable Host
// leaves the attempt unresolved and the same request delivers the same attempt again; an
// unresolved attempt blocks a later lifecycle advance.
import { createHash } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NATIVE_CACHE_PATH, type EmbeddedAgentHost } from '../../actors/agenthost/embedded.ts';
import { attemptIdentityOf } from '../../actors/resume/bootstrap-requests.ts';
import { insertAttempt, readAttempts } from '../../store/resume-bootstrap-attempts.ts';
import { readVerifiedFlush } from '../../store/workspace-flushes.ts';
import type { Harness } from '../support/harness.ts';
import {
  CONFIGURATION_TEXT,
  coreStartsRuntime,
  preparedAndVerified,
  prepareResume,
  suspended,
  type Suspended,
} from '../support/resume-flow.ts';
import { openSuspendBackend, stepRefOf, type SuspendBackend } from '../support/suspend-flow.ts';
import { moveRuntimeOperation } from '../../actors/runtime-core/runtime-core-embedded.ts';

let h: Harness;
let host: EmbeddedAgentHost;
let runs = 0;
let backend: SuspendBackend;

beforeAll(async () => {
  backend = await openSuspendBackend();
  ({ h, host } = backend);
}, 120_000);
afterAll(() => backend.close());

interface Outcome {
  outcome: 'Activated' | 'StateLost';
  attempt: {
    attemptId: string;
    attemptSeq: number;
    bootstrapId: string;
    consumeId: string;
    exchangeId: string;
    state: string;
    deliveries: number;
    registrationId: string;
  };
  receipt?: {
    attemptId: string;
    registrationId: string;
    configurationSha256: string;
    recovery: { mode: string; cacheSha256?: string } & Record<string, unknown>;
  };
  receiptSha256: string;
  loss?: { sessionState: string; revokeRegistrationId: string };
}

const bootstrap = (s: Suspended, body: Record<string, unknown>) =>
  h.request('POST', '/internal/runtime/resume/bootstrap', { token: s.sandbox.s.token, body });

const typeOf = async (res: Response) => ((await res.json()) as { type: string }).type;

/** A sandbox suspended, resumed, verified, and Core at phase 4 with registration generation 2. */
async function atPhaseFour(): Promise<{ s: Suspended; body: Record<string, unknown> }> {
  const s = await suspended(h, host, `run-boot-${++runs}`);
  const restored = await preparedAndVerified(h, s);
  return { s, body: await coreStartsRuntime(h, s, restored) };
}

describe('resume bootstrap', () => {
  it('starts the Runtime with a server-issued attempt and the acknowledged configuration; a replay answers the same receipt', async () => {
    const { s, body } = await atPhaseFour();
    const res = await bootstrap(s, body);
    if (res.status !== 200) throw new Error(await res.text());
    expect(res.headers.get('cache-control')).toBe('no-store');
    const first = (await res.json()) as Outcome;
    const identity = attemptIdentityOf(s.resume.operationId, 1);
    expect(first.outcome).toBe('Activated');
    expect(first.attempt).toMatchObject({ ...identity, state: 'Activated', deliveries: 1 });
    expect(
      new Set([identity.attemptId, identity.bootstrapId, identity.consumeId, identity.exchangeId]).size,
    ).toBe(4);
    const sha = createHash('sha256').update(CONFIGURATION_TEXT).digest('hex');
    expect(first.receipt).toMatchObject({
      attemptId: identity.attemptId,
      registrationId: (body['registration'] as { registrationId: string }).registrationId,
      configurationSha256: sha,
      // The Host restored the native cache the suspend's verified flush wrote.
      recovery: { mode: 'NativeCache' },
    });
    expect(JSON.stringify(first)).not.toContain(CONFIGURATION_TEXT.trim());

    // A lost response: the same request answers the saved receipt, the Host asked about its
    // session again but not activated a second time.
    const again = (await (await bootstrap(s, body)).json()) as Outcome;
    expect(again).toEqual(first);
    const rows = await readAttempts(h.db, s.resume.operationId);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ state: 'Activated', deliveries: 1 });
    // Naming the issued attempt is the same; naming another is refused.
    expect(await (await bootstrap(s, { ...body, attemptId: identity.attemptId })).json()).toEqual(first);
    const other = await bootstrap(s, { ...body, attemptId: `rba_${'0'.repeat(32)}` });
    expect(other.status).toBe(409);
    expect(await typeOf(other)).toBe('urn:sandlot:problem:resume-attempt-unknown');

    // A saved receipt alone answers nothing: once Core abandoned the resume, the replay is refused.
    const operation = body['operation'] as { operationId: string; stateRevision: number };
    await moveRuntimeOperation(
      h.db,
      stepRefOf(s.sandbox),
      operation.operationId,
      operation.stateRevision,
      'abandoned',
    );
    const abandoned = await bootstrap(s, body);
    expect(abandoned.status).toBe(409);
    expect(await typeOf(abandoned)).toBe('urn:sandlot:problem:suspend-operation-not-current');
  });

  it('issues a replacement attempt to a newer registration only once the acknowledged session is Missing', async () => {
    const { s, body } = await atPhaseFour();
    const first = (await (await bootstrap(s, body)).json()) as Outcome;

    // While the Host holds the session, a newer registration gets no replacement attempt.
    const restored = body['restoredWorkspace'] as Parameters<typeof coreStartsRuntime>[2];
    const newer = await coreStartsRuntime(h, s, restored, 3);
    const refused = await bootstrap(s, newer);
    expect(refused.status).toBe(409);
    expect(await typeOf(refused)).toBe('urn:sandlot:problem:resume-attempt-not-replaceable');

    // The Host restarts and forgets its session: the loss is saved, then attempt 2 is issued.
    await host.loseSession((restored as { lease: { operationId: string } }).lease.operationId);
    const replaced = await bootstrap(s, newer);
    if (replaced.status !== 200) throw new Error(await replaced.text());
    expect(((await replaced.json()) as Outcome).attempt).toMatchObject({
      ...attemptIdentityOf(s.resume.operationId, 2),
      state: 'Activated',
    });
    const rows = await readAttempts(h.db, s.resume.operationId);
    expect(rows.map((r) => [r.attemptId, r.state])).toEqual([
      [first.attempt.attemptId, 'StateLost'],
      [attemptIdentityOf(s.resume.operationId, 2).attemptId, 'Activated'],
    ]);
    // The revoked registration's request is refused before any Host call.
    const stale = await bootstrap(s, body);
    expect(stale.status).toBe(409);
    expect(await typeOf(stale)).toBe('urn:sandlot:problem:resume-registration-mismatch');
  });

  it('reports the state loss on the registration that was acknowledged, then replaces it under a newer registration', async () => {
    const { s, body } = await atPhaseFour();
    const first = (await (await bootstrap(s, body)).json()) as Outcome;
    const lease = body['restoredWorkspace'] as { lease: { operationId: string } };
    await host.loseSession(lease.lease.operationId);

    const lost = await bootstrap(s, body);
    expect(lost.status).toBe(200);
    const outcome = (await lost.json()) as Outcome;
    expect(outcome).toMatchObject({
      outcome: 'StateLost',
      attempt: { attemptId: first.attempt.attemptId, state: 'StateLost' },
      receiptSha256: first.receiptSha256,
      loss: { sessionState: 'Missing', revokeRegistrationId: first.attempt.registrationId },
    });
    // Replayed, the loss is answered as saved.
    expect(((await (await bootstrap(s, body)).json()) as Outcome).outcome).toBe('StateLost');

    // Core revokes that registration (a newer one) and asks again: attempt 2, distinct identities.
    const restored = body['restoredWorkspace'] as Parameters<typeof coreStartsRuntime>[2];
    const replacement = await bootstrap(s, await coreStartsRuntime(h, s, restored, 3));
    if (replacement.status !== 200) throw new Error(await replacement.text());
    const second = (await replacement.json()) as Outcome;
    expect(second.outcome).toBe('Activated');
    expect(second.attempt).toMatchObject(attemptIdentityOf(s.resume.operationId, 2));
    expect(second.attempt.attemptId).not.toBe(first.attempt.attemptId);
    const rows = await readAttempts(h.db, s.resume.operationId);
    expect(rows.map((r) => [r.attemptSeq, r.state])).toEqual([
      [1, 'StateLost'],
      [2, 'Activated'],
    ]);
  });

  it('keeps an attempt unresolved when the Host cannot be asked, and delivers the same attempt again', async () => {
    const { s, body } = await atPhaseFour();
    host.dropNextCall();
    const down = await bootstrap(s, body);
    expect(down.status).toBe(503);
    const [open] = await readAttempts(h.db, s.resume.operationId);
    expect(open).toMatchObject({ state: 'Delivering', deliveries: 1 });
    expect(typeof open?.evidence?.['unavailable']).toBe('string');

    const res = await bootstrap(s, body);
    if (res.status !== 200) throw new Error(await res.text());
    const outcome = (await res.json()) as Outcome;
    expect(outcome.attempt).toMatchObject({ attemptId: open?.attemptId, state: 'Activated', deliveries: 2 });
  });

  it('accepts a journal rebuild only with the journal boundary the verified flush saved', async () => {
    const { s, body } = await atPhaseFour();
    // The restored Workspace lost its native cache: the Host rebuilds from the saved journal.
    await rm(join(await host.workspaceDirectory(s.sandbox.volume.volumeId), NATIVE_CACHE_PATH));
    const flushed = await readVerifiedFlush(h.db, s.manifest.workspace.volumeId, s.flush.transitionRevision);
    const saved = flushed?.receipt as {
      cache: { cacheSha256: string };
      journal: { checkpointId: string; upperPosition: number; journalSha256: string };
    };
    expect(saved.journal.upperPosition).toBe(1);

    // A Host reporting another boundary (a later journal, another checkpoint or digest, another
    // source cache) is not believed: its receipt stays evidence of a Delivering attempt.
    const recovery = (r: Record<string, unknown>) => r['recovery'] as Record<string, unknown>;
    for (const change of [
      { upperPosition: saved.journal.upperPosition + 1 },
      { checkpointId: 'ckpt_' + 'f'.repeat(32) },
      { journalSha256: 'e'.repeat(64) },
      { sourceCacheSha256: 'd'.repeat(64) },
    ]) {
      host.tamperNextAnswer((r) => ({ ...r, recovery: { ...recovery(r), ...change } }));
      const wrong = await bootstrap(s, body);
      expect(wrong.status).toBe(409);
      expect(await typeOf(wrong)).toBe('urn:sandlot:problem:resume-recovery-evidence-mismatch');
      const [open] = await readAttempts(h.db, s.resume.operationId);
      expect(open?.state).toBe('Delivering');
      expect(open?.evidence?.['unsavedReceipt']).toBeDefined();
    }

    // The Host's own answer names exactly the flush's boundary and the current attempt.
    const res = await bootstrap(s, body);
    if (res.status !== 200) throw new Error(await res.text());
    const outcome = (await res.json()) as Outcome;
    expect(outcome.outcome).toBe('Activated');
    expect(outcome.receipt?.recovery).toEqual({
      mode: 'JournalRebuild',
      nativeCache: 'PendingUntilAuthorizedTurn',
      sourceCacheSha256: saved.cache.cacheSha256,
      checkpointId: saved.journal.checkpointId,
      upperPosition: saved.journal.upperPosition,
      journalSha256: saved.journal.journalSha256,
      attemptId: outcome.attempt.attemptId,
    });
    // A replay checks the saved receipt against the same boundary again.
    expect(await (await bootstrap(s, body)).json()).toEqual(outcome);
  });

  it('refuses a journal rebuild when the verified flush saved no journal boundary', async () => {
    const { s, body } = await atPhaseFour();
    await rm(join(await host.workspaceDirectory(s.sandbox.volume.volumeId), NATIVE_CACHE_PATH));
    // A flush recorded before flushes saved the journal boundary: nothing to check a rebuild against.
    await h.db.query(
      `UPDATE workspace_flushes SET receipt = receipt - 'journal'
        WHERE volume_id = $1 AND transition_revision = $2 AND state = 'Verified'`,
      [s.manifest.workspace.volumeId, s.flush.transitionRevision],
    );
    const res = await bootstrap(s, body);
    expect(res.status).toBe(409);
    expect(await typeOf(res)).toBe('urn:sandlot:problem:resume-journal-evidence-missing');
    const [open] = await readAttempts(h.db, s.resume.operationId);
    expect(open?.state).toBe('Delivering');
    // Asked again, still refused: missing evidence never becomes readiness.
    const again = await bootstrap(s, body);
    expect(await typeOf(again)).toBe('urn:sandlot:problem:resume-journal-evidence-missing');
    expect((await readAttempts(h.db, s.resume.operationId))[0]?.state).toBe('Delivering');
  });

  it('refuses before any attempt: another registration, an uncommitted resume, no configuration, no acknowledgment', async () => {
    const s = await suspended(h, host, `run-boot-${++runs}`);
    const restored = await preparedAndVerified(h, s);
    // Still Fenced: Core has not advanced its execution fence.
    const fenced = await bootstrap(s, {
      ...s.request,
      restoredWorkspace: restored,
      phase: 4,
      registration: {
        registrationId: 'reg-x',
        profileId: 'profile-1',
        sessionId: 'session-1',
        generation: 2,
      },
    });
    expect(fenced.status).toBe(409);
    expect(await typeOf(fenced)).toBe('urn:sandlot:problem:suspend-operation-state');

    const body = await coreStartsRuntime(h, s, restored);
    const registration = body['registration'] as Record<string, unknown>;
    const otherRegistration = await bootstrap(s, {
      ...body,
      registration: { ...registration, generation: 1 },
    });
    expect(otherRegistration.status).toBe(409);
    expect(await typeOf(otherRegistration)).toBe('urn:sandlot:problem:resume-registration-mismatch');

    const manifest = body['manifest'] as Record<string, unknown>;
    const noAck = await bootstrap(s, { ...body, manifest: { ...manifest, configuration: null } });
    expect(noAck.status).toBe(422);

    const wrongPhase = await bootstrap(s, { ...body, phase: 3 });
    expect(wrongPhase.status).toBe(400);
    const callerConfiguration = await bootstrap(s, { ...body, configuration: 'override' });
    expect(callerConfiguration.status).toBe(400);
    expect(await readAttempts(h.db, s.resume.operationId)).toHaveLength(0);
  });

  it('a resume whose Environment has an unresolved bootstrap attempt cannot advance its lifecycle', async () => {
    const s = await suspended(h, host, `run-boot-${++runs}`);
    await insertAttempt(h.db, {
      ...attemptIdentityOf('op-earlier', 1),
      environmentId: s.sandbox.s.environmentId,
      resumeOperationId: 'op-earlier',
      registrationId: 'reg-earlier',
      registrationGeneration: 1,
      leaseOperationId: s.sandbox.lease.operationId,
      request: {},
      requestSha256: 'e'.repeat(64),
    });
    const res = await prepareResume(h, s);
    expect(res.status).toBe(409);
    expect(await typeOf(res)).toBe('urn:sandlot:problem:resume-attempt-unresolved');
    const env = await h.db.query<{ lifecycle_generation: number }>(
      'SELECT lifecycle_generation FROM environments WHERE environment_id = $1',
      [s.sandbox.s.environmentId],
    );
    expect(env.rows[0]?.lifecycle_generation).toBe(s.manifest.source.lifecycleGeneration);
  });
});
