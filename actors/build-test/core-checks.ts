// The checks every Core implementation makes the same way, so the embedded stand-in and the HTTP
// adapter cannot drift apart: an expired bearer is never used; seed bytes match the accepted length
// (short and long told apart) and SHA-256 exactly; and after a seed transfer the accepted command
// is read again and must be the one the caller holds.
import { createHash } from 'node:crypto';
import type { AcceptedBuildTestCommand, CoreActor } from '../ports.ts';
import { acceptedCommandHash, seedOf } from './accepted-command.ts';
import {
  CoreAnswerRefusedError,
  CoreCommandChangedError,
  CoreDeniedError,
  CoreUnavailableError,
} from './core-errors.ts';

/** Refuses an expired actor or an aborted call before anything is asked. */
export function admitCall(actor: CoreActor, signal: AbortSignal, now: Date): void {
  if (signal.aborted) throw new CoreUnavailableError('aborted', 'the call was aborted');
  if (!(actor.expiresAt.getTime() > now.getTime())) throw new CoreDeniedError('bearer-expired');
}

/** The seed a version 2 command binds; version 1 has none to fetch. */
export function expectedSeed(command: AcceptedBuildTestCommand): { sha256: string; length: number } {
  const seed = seedOf(command);
  if (seed === null) throw new CoreAnswerRefusedError('no-seed', 'a version 1 command has no seed');
  return seed;
}

export function checkSeedBytes(bytes: Uint8Array, expected: { sha256: string; length: number }): void {
  if (bytes.length < expected.length)
    throw new CoreAnswerRefusedError('seed-short', 'the seed is shorter than accepted');
  if (bytes.length > expected.length)
    throw new CoreAnswerRefusedError('seed-long', 'the seed is longer than accepted');
  if (createHash('sha256').update(bytes).digest('hex') !== expected.sha256) {
    throw new CoreAnswerRefusedError('seed-digest-mismatch', 'the seed does not match its accepted SHA-256');
  }
}

/** `current` is Core's answer read after the transfer: it must be exactly the command held. */
export function checkUnchanged(
  held: AcceptedBuildTestCommand,
  current: AcceptedBuildTestCommand | null,
): void {
  if (current === null || acceptedCommandHash(current) !== acceptedCommandHash(held)) {
    throw new CoreCommandChangedError();
  }
}
