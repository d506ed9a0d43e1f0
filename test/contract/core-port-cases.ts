// The Core port contract: one suite, run against every implementation (the embedded stand-in over
// its tables on both database backends, and the HTTP adapter against a stand-in Core server). Each
// case registers what it needs under a fresh checkpoint, then asks through the port only.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CoreAnswerRefusedError,
  CoreCommandChangedError,
  CoreDeniedError,
  CoreUnavailableError,
} from '../../actors/build-test/core-errors.ts';
import type { AcceptedBuildTestCommand, Core, CoreActor, JournalAcknowledgment } from '../../actors/ports.ts';
import {
  acknowledgmentFor,
  freshCheckpoint,
  version1Command,
  version2Command,
} from '../support/build-test-commands.ts';
import { rejection } from '../support/rejection.ts';

export interface CorePortSubject {
  core: Core;
  /** An actor of tenant `acme`, which owns every registered checkpoint. */
  actor: CoreActor;
  /** An actor of tenant `globex`. */
  stranger: CoreActor;
  /** Registers an accepted command (and the seed a version 2 command binds) as Core would hold it. */
  register(command: AcceptedBuildTestCommand, seed?: Uint8Array): Promise<void>;
  /** Records the acknowledgment Events admitted for the command's operation. */
  admit(acknowledgment: JournalAcknowledgment): Promise<void>;
  close(): Promise<void>;
}

const signal = () => AbortSignal.timeout(10_000);

export function defineCorePortContract(name: string, setup: () => Promise<CorePortSubject>): void {
  describe(`Core port contract: ${name}`, () => {
    let subject: CorePortSubject | undefined;
    const s = (): CorePortSubject => {
      if (subject === undefined) throw new Error(`subject ${name} was not set up`);
      return subject;
    };
    // PGlite's start-up takes well over 30 s on a loaded 2-core machine (seen in CI).
    beforeAll(async () => {
      subject = await setup();
    }, 120_000);
    afterAll(async () => {
      await subject?.close();
    });

    it('resolves a registered version 1 command exactly', async () => {
      const command = version1Command();
      await s().register(command);
      expect(await s().core.acceptedCommand(s().actor, command.checkpoint, signal())).toEqual(command);
    });

    it('resolves a version 2 command with the seed digest and length it binds', async () => {
      const seed = randomBytes(3000);
      const command = version2Command(seed);
      await s().register(command, seed);
      expect(await s().core.acceptedCommand(s().actor, command.checkpoint, signal())).toEqual(command);
    });

    it('answers null for a checkpoint Core never accepted', async () => {
      expect(await s().core.acceptedCommand(s().actor, freshCheckpoint(), signal())).toBeNull();
    });

    it("answers null for another tenant's checkpoint", async () => {
      const command = version1Command();
      await s().register(command);
      expect(await s().core.acceptedCommand(s().stranger, command.checkpoint, signal())).toBeNull();
    });

    it('fetches the exact version 2 seed bytes', async () => {
      const seed = randomBytes(70_000);
      const command = version2Command(seed);
      await s().register(command, seed);
      const bytes = await s().core.workspaceSeed(s().actor, command, signal());
      expect(Buffer.from(bytes).equals(seed)).toBe(true);
    });

    it('has no seed for a version 1 command', async () => {
      const command = version1Command();
      await s().register(command);
      const error = await rejection(s().core.workspaceSeed(s().actor, command, signal()));
      expect(error).toBeInstanceOf(CoreAnswerRefusedError);
      expect((error as CoreAnswerRefusedError).reason).toBe('no-seed');
    });

    const seedCases: [string, (c: AcceptedBuildTestCommand) => AcceptedBuildTestCommand, string][] = [
      ['a different SHA-256', (c) => withSeed(c, { sha256: '0'.repeat(64) }), 'seed-digest-mismatch'],
      [
        'a longer accepted length (the seed is short)',
        (c) => withSeed(c, { length: lengthOf(c) + 1 }),
        'seed-short',
      ],
      [
        'a shorter accepted length (the seed is long)',
        (c) => withSeed(c, { length: lengthOf(c) - 1 }),
        'seed-long',
      ],
    ];
    it.each(seedCases)('refuses seed bytes against %s', async (_name, change, reason) => {
      const seed = randomBytes(512);
      const command = version2Command(seed);
      await s().register(command, seed);
      const error = await rejection(s().core.workspaceSeed(s().actor, change(command), signal()));
      expect(error).toBeInstanceOf(CoreAnswerRefusedError);
      expect((error as CoreAnswerRefusedError).reason).toBe(reason);
    });

    it('refuses the seed when the accepted command is not the one held', async () => {
      const seed = randomBytes(256);
      const command = version2Command(seed);
      await s().register(command, seed);
      const held = { ...command, command: { ...command.command, args: ['run', 'other'] } };
      expect(await rejection(s().core.workspaceSeed(s().actor, held, signal()))).toBeInstanceOf(
        CoreCommandChangedError,
      );
    });

    it("refuses another tenant's seed", async () => {
      const seed = randomBytes(256);
      const command = version2Command(seed);
      await s().register(command, seed);
      const error = await rejection(s().core.workspaceSeed(s().stranger, command, signal()));
      expect(error).toBeInstanceOf(CoreAnswerRefusedError);
      expect((error as CoreAnswerRefusedError).reason).toBe('no-seed');
    });

    it('never uses an expired bearer', async () => {
      const command = version1Command();
      await s().register(command);
      const expired = { ...s().actor, expiresAt: new Date(Date.now() - 1) };
      for (const call of [
        s().core.acceptedCommand(expired, command.checkpoint, signal()),
        s().core.verifyAcknowledgment(expired, acknowledgmentFor(command), signal()),
      ]) {
        const error = await rejection(call);
        expect(error).toBeInstanceOf(CoreDeniedError);
        expect((error as CoreDeniedError).reason).toBe('bearer-expired');
      }
    });

    it('answers an aborted call with unavailability, never with a verdict', async () => {
      const controller = new AbortController();
      controller.abort();
      const error = await rejection(
        s().core.acceptedCommand(s().actor, freshCheckpoint(), controller.signal),
      );
      expect(error).toBeInstanceOf(CoreUnavailableError);
      expect((error as CoreUnavailableError).reason).toBe('aborted');
    });

    it('verifies exactly the acknowledgment Events admitted', async () => {
      const command = version1Command();
      await s().register(command);
      const acknowledgment = acknowledgmentFor(command);
      await s().admit(acknowledgment);
      expect(await s().core.verifyAcknowledgment(s().actor, acknowledgment, signal())).toEqual({
        verified: true,
      });
    });

    it.each([
      [
        'another journal position',
        (a: JournalAcknowledgment) => ({ ...a, journalPosition: a.journalPosition + 1 }),
      ],
      ['another record digest', (a: JournalAcknowledgment) => ({ ...a, recordSha256: '9'.repeat(64) })],
      [
        'another capture',
        (a: JournalAcknowledgment) => ({ ...a, capture: { ...a.capture, length: a.capture.length + 1 } }),
      ],
      [
        'another collector Pod',
        (a: JournalAcknowledgment) => ({ ...a, capture: { ...a.capture, collectorPodUid: 'uid-x' } }),
      ],
    ])('does not verify an acknowledgment with %s', async (_name, change) => {
      const command = version1Command();
      await s().register(command);
      const acknowledgment = acknowledgmentFor(command);
      await s().admit(acknowledgment);
      const verdict = await s().core.verifyAcknowledgment(s().actor, change(acknowledgment), signal());
      expect(verdict.verified).toBe(false);
    });

    it('does not verify an acknowledgment nothing was admitted for', async () => {
      const command = version1Command();
      await s().register(command);
      const verdict = await s().core.verifyAcknowledgment(s().actor, acknowledgmentFor(command), signal());
      expect(verdict.verified).toBe(false);
    });

    it("does not verify another tenant's acknowledgment", async () => {
      const command = version1Command();
      await s().register(command);
      const acknowledgment = acknowledgmentFor(command);
      await s().admit(acknowledgment);
      const verdict = await s().core.verifyAcknowledgment(s().stranger, acknowledgment, signal());
      expect(verdict.verified).toBe(false);
    });
  });
}

function lengthOf(command: AcceptedBuildTestCommand): number {
  if (command.version !== 2) throw new Error('not a version 2 command');
  return command.workspaceInput.seed.length;
}

function withSeed(
  command: AcceptedBuildTestCommand,
  seed: Partial<{ sha256: string; length: number }>,
): AcceptedBuildTestCommand {
  if (command.version !== 2) throw new Error('not a version 2 command');
  const { workspaceInput } = command;
  return { ...command, workspaceInput: { ...workspaceInput, seed: { ...workspaceInput.seed, ...seed } } };
}
