// The RuntimeCore port contract: one suite, run against every implementation (the embedded
// stand-in over its tables on both database backends, and the HTTP adapter against a stand-in Core
// server answering from the same tables). Each case registers what it needs under a fresh step,
// then asks through the port only. Cases that need a broken Core (an answer about something else,
// an unreachable server) run where the subject can produce one, and are skipped elsewhere.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CoreAnswerRefusedError,
  CoreDeniedError,
  CoreUnavailableError,
} from '../../actors/build-test/core-errors.ts';
import type {
  CoreActor,
  RuntimeCore,
  RuntimeOperation,
  RuntimeRegistration,
  RuntimeStepRef,
  SavedOperationEvidence,
} from '../../actors/ports.ts';
import type {
  RuntimeOperationState,
  RuntimeOperationTerms,
} from '../../actors/runtime-core/runtime-operation.ts';
import { rejection } from '../support/rejection.ts';

export type TamperedRoute = 'current-operation' | 'confirm-saved' | 'current-registration';

export interface RuntimeCorePortSubject {
  core: RuntimeCore;
  /** An actor of tenant `acme`, which owns every registered step. */
  actor: CoreActor;
  /** An actor of tenant `globex`. */
  stranger: CoreActor;
  /** An actor of tenant `acme` whom Core refuses. */
  denied: CoreActor;
  reserve(ref: RuntimeStepRef, operationId: string, terms: RuntimeOperationTerms): Promise<void>;
  saveEvidence(ref: RuntimeStepRef, operationId: string, evidence: SavedOperationEvidence): Promise<void>;
  move(
    ref: RuntimeStepRef,
    operationId: string,
    fromRevision: number,
    to: RuntimeOperationState,
  ): Promise<void>;
  registerRuntime(registration: RuntimeRegistration): Promise<void>;
  /** Requests that reached Core so far (the embedded stand-in has no wire: undefined). */
  sent?: () => number;
  /** Makes Core answer `route` with `change` applied to its honest answer. */
  tamper?: (route: TamperedRoute, change: (answer: Record<string, unknown>) => unknown) => void;
  /** A RuntimeCore whose Core cannot be reached. */
  unreachable?: () => RuntimeCore;
  close(): Promise<void>;
}

const signal = () => AbortSignal.timeout(10_000);

export function freshStep(tenantId = 'acme'): RuntimeStepRef {
  const id = randomBytes(5).toString('hex');
  return {
    tenantId,
    projectId: 'checkout',
    runId: `run-${id}`,
    stepId: 'agent_1',
    environmentId: freshEnvironmentId(),
  };
}

/** A well-formed Environment ID no step was registered under. */
export function freshEnvironmentId(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz234567';
  return `env_${Array.from(randomBytes(32), (b) => alphabet[b % 32]).join('')}`;
}

export function suspendTerms(): RuntimeOperationTerms {
  return {
    kind: 'suspend',
    placement: {
      leaseOperationId: `lease-${randomBytes(4).toString('hex')}`,
      resourceGeneration: 1,
      providerFence: 3,
    },
    workspace: { volumeId: 'ws-1', transitionRevision: 4 },
    requireReleaseCurrent: true,
  };
}

export function evidenceFor(terms: RuntimeOperationTerms): SavedOperationEvidence {
  return {
    transitionRevision: terms.workspace.transitionRevision,
    dataGeneration: 2,
    hostReceiptSha256: 'a'.repeat(64),
    manifestSha256: 'b'.repeat(64),
  };
}

export function defineRuntimeCoreContract(name: string, setup: () => Promise<RuntimeCorePortSubject>): void {
  describe(`RuntimeCore port contract: ${name}`, () => {
    let subject: RuntimeCorePortSubject | undefined;
    const s = (): RuntimeCorePortSubject => {
      if (subject === undefined) throw new Error(`subject ${name} was not set up`);
      return subject;
    };
    beforeAll(async () => {
      subject = await setup();
    }, 120_000);
    afterAll(async () => {
      await subject?.close();
    });

    /** Reserves a suspend under a fresh step, saves its evidence, and answers it as Core now holds it. */
    async function savedSuspend(): Promise<{
      operation: RuntimeOperation;
      evidence: SavedOperationEvidence;
    }> {
      const ref = freshStep();
      const operationId = `op-${randomBytes(5).toString('hex')}`;
      const terms = suspendTerms();
      await s().reserve(ref, operationId, terms);
      const evidence = evidenceFor(terms);
      await s().saveEvidence(ref, operationId, evidence);
      await s().move(ref, operationId, 1, 'fenced');
      await s().move(ref, operationId, 2, 'committed');
      const operation = await s().core.currentRuntimeOperation(s().actor, ref, signal());
      if (operation === null) throw new Error('no current operation');
      return { operation, evidence };
    }

    it('answers null when the step has no current operation or registration', async () => {
      const ref = freshStep();
      expect(await s().core.currentRuntimeOperation(s().actor, ref, signal())).toBeNull();
      expect(await s().core.currentRuntimeRegistration(s().actor, ref, signal())).toBeNull();
    });

    it('answers the exact current operation as reserved', async () => {
      const ref = freshStep();
      const terms = suspendTerms();
      await s().reserve(ref, 'op-reserved-' + ref.runId, terms);
      expect(await s().core.currentRuntimeOperation(s().actor, ref, signal())).toEqual({
        ...terms,
        ref,
        operationId: 'op-reserved-' + ref.runId,
        state: 'reserved',
        stateRevision: 1,
      });
    });

    it('follows the operation through its state moves, and none once it completed', async () => {
      const { operation } = await savedSuspend();
      expect(operation).toMatchObject({ state: 'committed', stateRevision: 3 });
      await s().move(operation.ref, operation.operationId, 3, 'completed');
      expect(await s().core.currentRuntimeOperation(s().actor, operation.ref, signal())).toBeNull();
    });

    it("answers null for another tenant's operation and registration", async () => {
      const { operation } = await savedSuspend();
      await s().registerRuntime(registrationFor(operation.ref, 1));
      expect(await s().core.currentRuntimeOperation(s().stranger, operation.ref, signal())).toBeNull();
      expect(await s().core.currentRuntimeRegistration(s().stranger, operation.ref, signal())).toBeNull();
    });

    it('answers the highest registered generation as the current registration', async () => {
      const ref = freshStep();
      await s().registerRuntime(registrationFor(ref, 1));
      const second = registrationFor(ref, 2);
      await s().registerRuntime(second);
      expect(await s().core.currentRuntimeRegistration(s().actor, ref, signal())).toEqual(second);
    });

    it('confirms exactly the saved evidence of the operation as held', async () => {
      const { operation, evidence } = await savedSuspend();
      expect(await s().core.confirmSavedOperation(s().actor, operation, evidence, signal())).toEqual({
        confirmed: true,
      });
    });

    it.each<
      [string, (o: RuntimeOperation, e: SavedOperationEvidence) => [RuntimeOperation, SavedOperationEvidence]]
    >([
      ['another transition revision', (o, e) => [o, { ...e, transitionRevision: e.transitionRevision + 1 }]],
      ['another data generation', (o, e) => [o, { ...e, dataGeneration: e.dataGeneration + 1 }]],
      ['another Host receipt', (o, e) => [o, { ...e, hostReceiptSha256: 'c'.repeat(64) }]],
      ['another manifest', (o, e) => [o, { ...e, manifestSha256: 'd'.repeat(64) }]],
      [
        'an older state revision of the operation',
        (o, e) => [{ ...o, state: 'fenced', stateRevision: 2 }, e],
      ],
      ['another placement', (o, e) => [{ ...o, placement: { ...o.placement, providerFence: 9 } }, e]],
    ])('does not confirm %s', async (_name, change) => {
      const { operation, evidence } = await savedSuspend();
      const [held, offered] = change(operation, evidence);
      const verdict = await s().core.confirmSavedOperation(s().actor, held, offered, signal());
      expect(verdict.confirmed).toBe(false);
    });

    it('does not confirm an operation Core never reserved, or one without saved evidence', async () => {
      const { operation, evidence } = await savedSuspend();
      const unknown = { ...operation, operationId: `op-${randomBytes(5).toString('hex')}` };
      expect((await s().core.confirmSavedOperation(s().actor, unknown, evidence, signal())).confirmed).toBe(
        false,
      );

      const ref = freshStep();
      const terms = suspendTerms();
      await s().reserve(ref, `op-bare-${ref.runId}`, terms);
      const bare = await s().core.currentRuntimeOperation(s().actor, ref, signal());
      expect(bare).not.toBeNull();
      const verdict = await s().core.confirmSavedOperation(s().actor, bare!, evidenceFor(terms), signal());
      expect(verdict).toEqual({ confirmed: false, reason: 'Core saved no evidence for this operation' });
    });

    it('does not confirm an abandoned operation', async () => {
      const { operation, evidence } = await savedSuspend();
      await s().move(operation.ref, operation.operationId, 3, 'abandoned');
      const held = { ...operation, state: 'abandoned' as const, stateRevision: 4 };
      expect(await s().core.confirmSavedOperation(s().actor, held, evidence, signal())).toEqual({
        confirmed: false,
        reason: 'the operation was abandoned',
      });
    });

    it("does not confirm another tenant's operation", async () => {
      const { operation, evidence } = await savedSuspend();
      const verdict = await s().core.confirmSavedOperation(s().stranger, operation, evidence, signal());
      expect(verdict.confirmed).toBe(false);
    });

    it('refuses a denied actor', async () => {
      const ref = freshStep();
      for (const call of [
        s().core.currentRuntimeOperation(s().denied, ref, signal()),
        s().core.currentRuntimeRegistration(s().denied, ref, signal()),
      ]) {
        const error = await rejection(call);
        expect(error).toBeInstanceOf(CoreDeniedError);
        expect((error as CoreDeniedError).reason).toBe('denied');
      }
    });

    it('never sends an expired bearer', async () => {
      const { operation, evidence } = await savedSuspend();
      const expired = { ...s().actor, expiresAt: new Date(Date.now() - 1) };
      const before = s().sent?.();
      for (const call of [
        s().core.currentRuntimeOperation(expired, operation.ref, signal()),
        s().core.confirmSavedOperation(expired, operation, evidence, signal()),
        s().core.currentRuntimeRegistration(expired, operation.ref, signal()),
      ]) {
        const error = await rejection(call);
        expect(error).toBeInstanceOf(CoreDeniedError);
        expect((error as CoreDeniedError).reason).toBe('bearer-expired');
      }
      expect(s().sent?.()).toBe(before);
    });

    it('answers an aborted call with unavailability, never with a verdict', async () => {
      const controller = new AbortController();
      controller.abort();
      const error = await rejection(
        s().core.currentRuntimeOperation(s().actor, freshStep(), controller.signal),
      );
      expect(error).toBeInstanceOf(CoreUnavailableError);
      expect((error as CoreUnavailableError).reason).toBe('aborted');
    });

    it('answers an unreachable Core with unavailability', async (ctx) => {
      const unreachable = s().unreachable;
      if (unreachable === undefined) return ctx.skip();
      const error = await rejection(unreachable().currentRuntimeOperation(s().actor, freshStep(), signal()));
      expect(error).toBeInstanceOf(CoreUnavailableError);
      expect((error as CoreUnavailableError).reason).toBe('unreachable');
    });

    it.for<[string, TamperedRoute, (a: Record<string, unknown>) => unknown, string]>([
      [
        'an operation of another Environment',
        'current-operation',
        (a) => withEnvironment(a, freshEnvironmentId()),
        'reference-mismatch',
      ],
      [
        'a registration of another Environment',
        'current-registration',
        (a) => withEnvironment(a, freshEnvironmentId()),
        'reference-mismatch',
      ],
      [
        'a verdict about another operation',
        'confirm-saved',
        (a) => ({ ...a, operationId: 'op-other' }),
        'reference-mismatch',
      ],
      [
        'an operation with an unknown field',
        'current-operation',
        (a) => ({ ...a, extra: true }),
        'malformed',
      ],
      [
        'a registration at generation 0',
        'current-registration',
        (a) => ({ ...a, generation: 0 }),
        'malformed',
      ],
    ])('refuses %s', async ([, route, change, reason], ctx) => {
      const tamper = s().tamper;
      if (tamper === undefined) return ctx.skip();
      const { operation, evidence } = await savedSuspend();
      await s().registerRuntime(registrationFor(operation.ref, 1));
      tamper(route, change);
      try {
        const call =
          route === 'current-operation'
            ? s().core.currentRuntimeOperation(s().actor, operation.ref, signal())
            : route === 'current-registration'
              ? s().core.currentRuntimeRegistration(s().actor, operation.ref, signal())
              : s().core.confirmSavedOperation(s().actor, operation, evidence, signal());
        const error = await rejection(call);
        expect(error).toBeInstanceOf(CoreAnswerRefusedError);
        expect((error as CoreAnswerRefusedError).reason).toBe(reason);
      } finally {
        tamper(route, (a) => a);
      }
    });
  });
}

export function registrationFor(ref: RuntimeStepRef, generation: number): RuntimeRegistration {
  return {
    ref,
    registrationId: `reg-${ref.environmentId}-${generation}`,
    profileId: 'profile-1',
    sessionId: `session-${generation}`,
    generation,
  };
}

function withEnvironment(answer: Record<string, unknown>, environmentId: string): unknown {
  return { ...answer, ref: { ...(answer['ref'] as object), environmentId } };
}
