// The AgentHost resume activation contract (activate and session state): one suite, run against
// every implementation of the port. Each case takes a fresh started lease whose Host keeps a real
// Workspace tree on disk and asks through the port only; the embedded Host behind it gives the
// levers (a lost session, a tampered answer, a dropped or stalled call) and the table to count.
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentHostActivationRefusedError } from '../../actors/agenthost/activation.ts';
import { NATIVE_CACHE_PATH } from '../../actors/agenthost/embedded.ts';
import { AgentHostUnavailableError } from '../../actors/agenthost/flush.ts';
import type { AgentHostActivationRequest, AgentHostWorkspaceBinding } from '../../actors/ports.ts';
import type { Queryable } from '../../store/db.ts';
import { rejection } from '../support/rejection.ts';
import { startedLease, type AgentHostWorkspaceSubject } from './agenthost-workspace-cases.ts';

export type AgentHostActivationSubject = AgentHostWorkspaceSubject;

const signal = () => AbortSignal.timeout(10_000);
/** A credential-looking marker inside the configuration: it must never reach an error or a row. */
const SECRET = 'sk-live-configuration-secret-6f1c';

/** One attempt of one resume operation, with configuration bytes and their SHA-256. */
export function activationRequest(
  over: Partial<AgentHostActivationRequest> = {},
): AgentHostActivationRequest {
  const suffix = randomBytes(6).toString('hex');
  const bytes = Buffer.from(JSON.stringify({ server: `srv-${suffix}`, apiKey: SECRET }), 'utf8');
  return {
    resumeOperationId: `resume_${suffix}`,
    attemptId: `attempt_${suffix}`,
    attemptSeq: 1,
    bootstrapId: `boot_${suffix}`,
    consumeId: `consume_${suffix}`,
    exchangeId: `exchange_${suffix}`,
    registration: {
      registrationId: `reg_${suffix}`,
      profileId: `profile_${suffix}`,
      sessionId: `session_${suffix}`,
      generation: 2,
    },
    configuration: { sha256: createHash('sha256').update(bytes).digest('hex'), bytes },
    ...over,
  };
}

/** The next attempt of the same resume operation, with fresh identities and the same configuration. */
function nextAttempt(previous: AgentHostActivationRequest): AgentHostActivationRequest {
  const suffix = randomBytes(6).toString('hex');
  return {
    ...previous,
    attemptId: `attempt_${suffix}`,
    attemptSeq: previous.attemptSeq + 1,
    bootstrapId: `boot_${suffix}`,
    consumeId: `consume_${suffix}`,
    exchangeId: `exchange_${suffix}`,
  };
}

async function activationRows(db: Queryable, leaseOperationId: string): Promise<string[]> {
  const result = await db.query<{ request: unknown }>(
    `SELECT request FROM embedded_agenthost_activations WHERE lease_operation_id = $1`,
    [leaseOperationId],
  );
  return result.rows.map((row) => JSON.stringify(row.request));
}

function expectNoSecret(error: unknown): void {
  const shown = error instanceof Error ? `${error.message} ${JSON.stringify(error)}` : String(error);
  expect(shown).not.toContain(SECRET);
  expect(shown).not.toContain(Buffer.from(SECRET).toString('base64').slice(0, 16));
}

export function defineAgentHostActivationContract(
  name: string,
  setup: () => Promise<AgentHostActivationSubject>,
): void {
  describe(`AgentHost activation contract: ${name}`, () => {
    let subject: AgentHostActivationSubject | undefined;
    const s = (): AgentHostActivationSubject => {
      if (subject === undefined) throw new Error(`subject ${name} was not set up`);
      return subject;
    };
    beforeAll(async () => {
      subject = await setup();
    }, 120_000);
    afterAll(async () => {
      await subject?.close();
    });

    const flushOf = (binding: AgentHostWorkspaceBinding) =>
      s().host.flush(
        binding,
        { flushOperationId: `flush_${randomBytes(6).toString('hex')}`, transitionRevision: 1 },
        signal(),
      );
    /**
     * A served lease whose Workspace a flush left at its next data generation, as a resumed Host
     * finds it: the native cache in the tree and the session's journal boundary saved.
     */
    const lease = async (): Promise<AgentHostWorkspaceBinding> => {
      const started = s().serve(await startedLease(s().db));
      const flush = await flushOf(started);
      return { ...started, dataGeneration: flush.flush.nextDataGeneration };
    };

    it('1. activation answers a receipt naming the attempt, registration and configuration', async () => {
      const binding = await lease();
      const asked = activationRequest();
      const receipt = await s().host.activate(binding, asked, signal());
      expect(receipt).toMatchObject({
        resumeOperationId: asked.resumeOperationId,
        attemptId: asked.attemptId,
        attemptSeq: 1,
        bootstrapId: asked.bootstrapId,
        consumeId: asked.consumeId,
        exchangeId: asked.exchangeId,
        registrationId: asked.registration.registrationId,
        sessionId: asked.registration.sessionId,
        registrationGeneration: 2,
        configurationSha256: asked.configuration.sha256,
      });
      expect(receipt.binding.operationId).toBe(binding.operationId);
      expect(await s().host.sessionState(binding, signal())).toMatchObject({
        state: 'Active',
        attemptId: asked.attemptId,
        registrationId: asked.registration.registrationId,
      });
    });

    it('2. a redelivery of the same attempt answers the saved receipt and records it once', async () => {
      const binding = await lease();
      const asked = activationRequest();
      const first = await s().host.activate(binding, asked, signal());
      const again = await s().host.activate(binding, asked, signal());
      expect(again).toEqual(first);
      const rows = await activationRows(s().db, binding.operationId);
      expect(rows).toHaveLength(1);
      // The recorded request keeps the configuration's SHA-256, never its bytes.
      expect(rows[0]).toContain(asked.configuration.sha256);
      expect(rows[0]).not.toContain(SECRET);
      expect(rows[0]).not.toContain(Buffer.from(asked.configuration.bytes).toString('base64'));
    });

    it.each<[string, (asked: AgentHostActivationRequest) => AgentHostActivationRequest]>([
      ['another bootstrap ID', (a) => ({ ...a, bootstrapId: 'boot_other' })],
      [
        'another registration generation',
        (a) => ({ ...a, registration: { ...a.registration, generation: 3 } }),
      ],
      ['another configuration', (a) => ({ ...activationRequest(), attemptId: a.attemptId })],
    ])('3. the same attempt asked with %s is an attempt conflict', async (_case, change) => {
      const binding = await lease();
      const asked = activationRequest();
      await s().host.activate(binding, asked, signal());
      const error = await rejection(s().host.activate(binding, change(asked), signal()));
      expect(error).toBeInstanceOf(AgentHostActivationRefusedError);
      expect(error).toMatchObject({ code: 'agenthost-activation-refused', reason: 'attempt-conflict' });
      expectNoSecret(error);
      expect(await activationRows(s().db, binding.operationId)).toHaveLength(1);
    });

    it('4. another attempt while a session is Active is refused as session-active', async () => {
      const binding = await lease();
      const first = activationRequest();
      await s().host.activate(binding, first, signal());
      const error = await rejection(s().host.activate(binding, nextAttempt(first), signal()));
      expect(error).toMatchObject({ code: 'agenthost-activation-refused', reason: 'session-active' });
      expect(await s().host.sessionState(binding, signal())).toMatchObject({
        state: 'Active',
        attemptId: first.attemptId,
      });
    });

    it('5. a lost session reads Missing, and then a new attempt activates', async () => {
      const binding = await lease();
      const first = activationRequest();
      await s().host.activate(binding, first, signal());
      await s().embedded.loseSession(binding.operationId);
      expect(await s().host.sessionState(binding, signal())).toEqual({
        binding: expect.objectContaining({ operationId: binding.operationId }) as unknown,
        state: 'Missing',
      });
      const second = nextAttempt(first);
      const receipt = await s().host.activate(binding, second, signal());
      expect(receipt).toMatchObject({ attemptId: second.attemptId, attemptSeq: 2 });
      expect(await s().host.sessionState(binding, signal())).toMatchObject({
        state: 'Active',
        attemptId: second.attemptId,
      });
    });

    it('6. a Host that never activated reads Missing', async () => {
      const binding = await lease();
      expect(await s().host.sessionState(binding, signal())).toMatchObject({ state: 'Missing' });
    });

    it("7. recovery is NativeCache from the flushed cache; without it, JournalRebuild to the flush's saved journal boundary", async () => {
      const started = s().serve(await startedLease(s().db));
      const flush = await flushOf(started);
      const binding = { ...started, dataGeneration: flush.flush.nextDataGeneration };
      const dir = await s().embedded.workspaceDirectory(binding.workspaceVolumeId);
      const cache = readFileSync(join(dir, NATIVE_CACHE_PATH));
      const cacheSha256 = createHash('sha256').update(cache).digest('hex');
      const native = await s().host.activate(binding, activationRequest(), signal());
      expect(native.recovery).toEqual({ mode: 'NativeCache', cacheSha256 });
      expect(cacheSha256).toBe(flush.cache.cacheSha256);

      // The cache is gone: the Host rebuilds from the saved journal, exactly to the flush's boundary,
      // and names the source cache apart from what it holds now (no native cache until a turn).
      await s().embedded.loseSession(binding.operationId);
      rmSync(join(dir, NATIVE_CACHE_PATH));
      const asked = activationRequest();
      const rebuilt = await s().host.activate(binding, asked, signal());
      expect(rebuilt.recovery).toEqual({
        mode: 'JournalRebuild',
        nativeCache: 'PendingUntilAuthorizedTurn',
        sourceCacheSha256: flush.cache.cacheSha256,
        checkpointId: flush.journal.checkpointId,
        upperPosition: flush.journal.upperPosition,
        journalSha256: flush.journal.journalSha256,
        attemptId: asked.attemptId,
      });
    });

    it('7b. with neither a native cache nor a saved journal boundary the Host refuses to activate', async () => {
      const binding = s().serve(await startedLease(s().db));
      const error = await rejection(s().host.activate(binding, activationRequest(), signal()));
      expect(error).toBeInstanceOf(AgentHostActivationRefusedError);
      expect(error).toMatchObject({ code: 'agenthost-activation-refused', reason: 'journal-unavailable' });
      expect(await activationRows(s().db, binding.operationId)).toHaveLength(0);
      expect(await s().host.sessionState(binding, signal())).toMatchObject({ state: 'Missing' });
    });

    it.each<[string, Partial<AgentHostWorkspaceBinding>]>([
      ['another Pod', { podUid: 'pod-other' }],
      ['another provider fence', { providerFence: 2 }],
      ['another data generation', { dataGeneration: 2 }],
    ])('8. an activation naming %s is refused and records nothing', async (_case, over) => {
      const binding = await lease();
      const error = await rejection(
        s().host.activate({ ...binding, ...over }, activationRequest(), signal()),
      );
      expect(error).toMatchObject({ code: 'agenthost-activation-refused', reason: 'binding-mismatch' });
      expect(await activationRows(s().db, binding.operationId)).toHaveLength(0);
      const read = await rejection(s().host.sessionState({ ...binding, ...over }, signal()));
      expect(read).toMatchObject({ reason: 'binding-mismatch' });
    });

    it('9. configuration bytes that do not match their SHA-256 are refused', async () => {
      const binding = await lease();
      const asked = activationRequest();
      const tampered = { ...asked, configuration: { ...asked.configuration, bytes: Buffer.from('{}') } };
      const error = await rejection(s().host.activate(binding, tampered, signal()));
      expect(error).toMatchObject({ reason: 'configuration-mismatch' });
      expectNoSecret(error);
      expect(await activationRows(s().db, binding.operationId)).toHaveLength(0);
    });

    it.each<[string, (answer: Record<string, unknown>) => unknown, string]>([
      [
        'another binding',
        (r) => ({ ...r, binding: { ...(r['binding'] as object), networkPolicyGeneration: 99 } }),
        'receipt-mismatch',
      ],
      ['another attempt', (r) => ({ ...r, attemptId: 'attempt_other' }), 'receipt-mismatch'],
      ['another resume operation', (r) => ({ ...r, resumeOperationId: 'resume_other' }), 'receipt-mismatch'],
      ['another registration', (r) => ({ ...r, registrationId: 'reg_other' }), 'receipt-mismatch'],
      ['another configuration', (r) => ({ ...r, configurationSha256: 'a'.repeat(64) }), 'receipt-mismatch'],
      ['a recovery mode it cannot have', (r) => ({ ...r, recovery: { mode: 'Guess' } }), 'receipt-malformed'],
      [
        'a journal rebuild without its journal evidence',
        (r) => ({ ...r, recovery: { mode: 'JournalRebuild', nativeCache: 'PendingUntilAuthorizedTurn' } }),
        'receipt-malformed',
      ],
      [
        'a journal rebuild for another attempt',
        (r) => ({
          ...r,
          recovery: {
            mode: 'JournalRebuild',
            nativeCache: 'PendingUntilAuthorizedTurn',
            sourceCacheSha256: 'a'.repeat(64),
            checkpointId: 'ckpt_other',
            upperPosition: 1,
            journalSha256: 'b'.repeat(64),
            attemptId: 'attempt_other',
          },
        }),
        'receipt-mismatch',
      ],
      ['an unknown member', (r) => ({ ...r, verified: true }), 'receipt-malformed'],
      ['no receipt at all', () => null, 'receipt-malformed'],
    ])('10. an activation answer naming %s is refused', async (_case, change, reason) => {
      const binding = await lease();
      s().embedded.tamperNextAnswer(change);
      const error = await rejection(s().host.activate(binding, activationRequest(), signal()));
      expect(error).toBeInstanceOf(AgentHostActivationRefusedError);
      expect(error).toMatchObject({ reason });
    });

    it.each<[string, (answer: Record<string, unknown>) => unknown, string]>([
      [
        'another binding',
        (a) => ({ ...a, binding: { ...(a['binding'] as object), podUid: 'pod-x' } }),
        'receipt-mismatch',
      ],
      ['Active without an attempt', (a) => ({ ...a, state: 'Active' }), 'receipt-malformed'],
    ])('11. a session state answer naming %s is refused', async (_case, change, reason) => {
      const binding = await lease();
      s().embedded.tamperNextAnswer(change);
      const error = await rejection(s().host.sessionState(binding, signal()));
      expect(error).toBeInstanceOf(AgentHostActivationRefusedError);
      expect(error).toMatchObject({ code: 'agenthost-activation-refused', reason });
    });

    it('12. an unreachable Host is unavailable, not a verdict', async () => {
      const binding = await lease();
      const error = await rejection(
        s().host.activate(s().unreachable(binding), activationRequest(), signal()),
      );
      expect(error).toBeInstanceOf(AgentHostUnavailableError);
      expect(error).toMatchObject({ code: 'agenthost-unavailable' });
      expectNoSecret(error);
      const read = await rejection(s().host.sessionState(s().unreachable(binding), signal()));
      expect(read).toBeInstanceOf(AgentHostUnavailableError);
    });

    it('13. a Host that stalls past the caller deadline is unavailable', async () => {
      const binding = await lease();
      s().embedded.stallNextCall();
      const started = Date.now();
      const error = await rejection(
        s().host.activate(binding, activationRequest(), AbortSignal.timeout(300)),
      );
      expect(error).toBeInstanceOf(AgentHostUnavailableError);
      expect(Date.now() - started).toBeLessThan(3_000);
    });
  });
}
