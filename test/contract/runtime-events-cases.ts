// The RuntimeEvents port contract: one suite, run against every implementation (the embedded
// stand-in over its table on both database backends, and the HTTP adapter against a stand-in
// Events server answering from the same tables). Each case registers what it needs under a fresh
// step (a Runtime registration in the RuntimeCore stand-in, material in the Events stand-in), then
// asks through the port only. A case that needs an unreachable Events runs where the subject can
// produce one, and is skipped elsewhere.
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RuntimeStepRef } from '../../actors/runtime-core/runtime-operation.ts';
import {
  EventsAnswerRefusedError,
  EventsDeniedError,
  EventsUnavailableError,
} from '../../actors/runtime-events/errors.ts';
import type {
  ConfigurationAcknowledgment,
  EventsActor,
  RuntimeEvents,
} from '../../actors/runtime-events/ports.ts';
import { rejection } from '../support/rejection.ts';
import { freshStep, registrationFor } from './runtime-core-cases.ts';

export interface RuntimeEventsPortSubject {
  events: RuntimeEvents;
  /** An actor of tenant `acme`, which owns every registered step. */
  actor: EventsActor;
  /** An actor of tenant `globex`. */
  stranger: EventsActor;
  /** An actor of tenant `acme` whom Events refuses. */
  denied: EventsActor;
  /** Registers a Runtime for `ref` at `generation` with session `session-{generation}`. */
  registerRuntime(ref: RuntimeStepRef, generation: number): Promise<void>;
  /** Stores material as Events keeps it, answering the acknowledgment naming it. */
  storeMaterial(
    ref: RuntimeStepRef,
    key: { sessionId: string; eventId: string; objectReference: string },
    bytes: Uint8Array,
  ): Promise<ConfigurationAcknowledgment>;
  /** Requests that reached Events so far (the embedded stand-in has no wire: undefined). */
  sent?: () => number;
  /** A RuntimeEvents whose Events cannot be reached. */
  unreachable?: () => RuntimeEvents;
  close(): Promise<void>;
}

const signal = () => AbortSignal.timeout(10_000);

/** Credential-free server configuration bytes, different on every call. */
export function configurationBytes(): Uint8Array {
  return Buffer.from(
    JSON.stringify({
      mcpServers: { docs: { url: `https://docs.internal/${randomBytes(6).toString('hex')}` } },
    }),
  );
}

export function defineRuntimeEventsContract(
  name: string,
  setup: () => Promise<RuntimeEventsPortSubject>,
): void {
  describe(`RuntimeEvents port contract: ${name}`, () => {
    let subject: RuntimeEventsPortSubject | undefined;
    const s = (): RuntimeEventsPortSubject => {
      if (subject === undefined) throw new Error(`subject ${name} was not set up`);
      return subject;
    };
    beforeAll(async () => {
      subject = await setup();
    }, 120_000);
    afterAll(async () => {
      await subject?.close();
    });

    /** A fresh step with a current registration (generation 1) and material under its session. */
    async function savedConfiguration(): Promise<{
      ref: RuntimeStepRef;
      acknowledgment: ConfigurationAcknowledgment;
      bytes: Uint8Array;
    }> {
      const ref = freshStep();
      await s().registerRuntime(ref, 1);
      const bytes = configurationBytes();
      const key = {
        sessionId: registrationFor(ref, 1).sessionId,
        eventId: `evt-${randomBytes(4).toString('hex')}`,
        objectReference: `obj:${randomBytes(8).toString('hex')}`,
      };
      return { ref, acknowledgment: await s().storeMaterial(ref, key, bytes), bytes };
    }

    const read = (
      ref: RuntimeStepRef,
      acknowledgment: ConfigurationAcknowledgment,
      actor: EventsActor = s().actor,
    ) => s().events.readProtectedMaterial(actor, ref, acknowledgment, signal());

    it('answers exactly the acknowledged bytes', async () => {
      const { ref, acknowledgment, bytes } = await savedConfiguration();
      expect(acknowledgment.sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
      expect(acknowledgment.length).toBe(bytes.length);
      const material = await read(ref, acknowledgment);
      expect(material?.acknowledgment).toEqual(acknowledgment);
      expect(Buffer.from(material!.bytes).equals(Buffer.from(bytes))).toBe(true);
    });

    it.each<[string, (a: ConfigurationAcknowledgment) => ConfigurationAcknowledgment]>([
      ['another SHA-256', (a) => ({ ...a, sha256: 'f'.repeat(64) })],
      ['a length one byte longer', (a) => ({ ...a, length: a.length + 1 })],
      ['a length one byte shorter', (a) => ({ ...a, length: a.length - 1 })],
    ])('refuses the material against an acknowledgment with %s', async (_name, change) => {
      const { ref, acknowledgment } = await savedConfiguration();
      const error = await rejection(read(ref, change(acknowledgment)));
      expect(error).toBeInstanceOf(EventsAnswerRefusedError);
      expect((error as EventsAnswerRefusedError).reason).toBe('material-mismatch');
    });

    it("answers null for another tenant's step", async () => {
      const { ref, acknowledgment } = await savedConfiguration();
      expect(await read(ref, acknowledgment, s().stranger)).toBeNull();
    });

    it('answers null for material Events does not hold', async () => {
      const { ref, acknowledgment } = await savedConfiguration();
      expect(await read(ref, { ...acknowledgment, eventId: 'evt-other' })).toBeNull();
      expect(await read(ref, { ...acknowledgment, objectReference: 'obj:other' })).toBeNull();
      expect(await read(freshStep(), acknowledgment)).toBeNull();
    });

    it('answers null without a current registration of the acknowledged session', async () => {
      const ref = freshStep();
      const key = { sessionId: 'session-1', eventId: 'evt-1', objectReference: 'obj:1' };
      const acknowledgment = await s().storeMaterial(ref, key, configurationBytes());
      // No registration at all.
      expect(await read(ref, acknowledgment)).toBeNull();
      // The session's registration is current: the bytes are answered.
      await s().registerRuntime(ref, 1);
      expect(await read(ref, acknowledgment)).not.toBeNull();
      // A newer Runtime (session-2) supersedes it: the old session's material is no longer answered.
      await s().registerRuntime(ref, 2);
      expect(await read(ref, acknowledgment)).toBeNull();
    });

    it('refuses a denied actor', async () => {
      const { ref, acknowledgment } = await savedConfiguration();
      const error = await rejection(read(ref, acknowledgment, s().denied));
      expect(error).toBeInstanceOf(EventsDeniedError);
      expect((error as EventsDeniedError).reason).toBe('denied');
    });

    it('never sends an expired bearer', async () => {
      const { ref, acknowledgment } = await savedConfiguration();
      const expired = { ...s().actor, expiresAt: new Date(Date.now() - 1) };
      const before = s().sent?.();
      const error = await rejection(read(ref, acknowledgment, expired));
      expect(error).toBeInstanceOf(EventsDeniedError);
      expect((error as EventsDeniedError).reason).toBe('bearer-expired');
      expect(s().sent?.()).toBe(before);
    });

    it('answers an aborted call with unavailability, never with material', async () => {
      const { ref, acknowledgment } = await savedConfiguration();
      const controller = new AbortController();
      controller.abort();
      const error = await rejection(
        s().events.readProtectedMaterial(s().actor, ref, acknowledgment, controller.signal),
      );
      expect(error).toBeInstanceOf(EventsUnavailableError);
      expect((error as EventsUnavailableError).reason).toBe('aborted');
    });

    it('answers an unreachable Events with unavailability', async (ctx) => {
      const unreachable = s().unreachable;
      if (unreachable === undefined) return ctx.skip();
      const { ref, acknowledgment } = await savedConfiguration();
      const error = await rejection(
        unreachable().readProtectedMaterial(s().actor, ref, acknowledgment, signal()),
      );
      expect(error).toBeInstanceOf(EventsUnavailableError);
      expect((error as EventsUnavailableError).reason).toBe('unreachable');
    });
  });
}
