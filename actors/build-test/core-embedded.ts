// The embedded Core: stands in for Core's BuildTest side from our own tables (store/core-stand-in.ts)
// where no Core service is configured. It answers what an operator registered through the embedded
// admin routes (http/routes/admin-core.ts): accepted commands per checkpoint, version 2 seeds, and
// the journal acknowledgment Events admitted for an operation. It authorizes by tenant only (the
// actor's tenant must own the checkpoint; another tenant's reads as absent), and makes the same
// checks as the HTTP adapter (core-checks.ts), so the Core contract suite holds for both.
import type { Database } from '../../store/db.ts';
import {
  putAcceptedCommand,
  putAdmission,
  putWorkspaceSeed,
  readAcceptedCommand,
  readAdmission,
  readWorkspaceSeed,
  type PutCommandResult,
  type PutResult,
} from '../../store/core-stand-in.ts';
import { canonicalJson, sha256Hex } from '../../lib/canonical-json.ts';
import type {
  AcceptedBuildTestCommand,
  AcknowledgmentVerdict,
  BuildTestCheckpointRef,
  Core,
  CoreActor,
  JournalAcknowledgment,
} from '../ports.ts';
import {
  MAX_SEED_BYTES,
  acceptedCommandHash,
  acceptedCommandSchema,
  journalAcknowledgmentSchema,
  seedOf,
} from './accepted-command.ts';
import { admitCall, checkSeedBytes, checkUnchanged, expectedSeed } from './core-checks.ts';
import { CoreAnswerRefusedError } from './core-errors.ts';
import { sha256Of } from '../../formats/awscapt2/file-package.ts';

export class EmbeddedCore implements Core {
  constructor(
    private readonly db: Database,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async acceptedCommand(
    actor: CoreActor,
    checkpoint: BuildTestCheckpointRef,
    signal: AbortSignal,
  ): Promise<AcceptedBuildTestCommand | null> {
    admitCall(actor, signal, this.now());
    if (actor.tenantId !== checkpoint.tenantId) return null;
    const row = await readAcceptedCommand(this.db, checkpoint);
    if (row === null) return null;
    const parsed = acceptedCommandSchema.safeParse(row.command);
    // Written through the same schema; a row that no longer parses is a broken stand-in, not an answer.
    if (!parsed.success)
      throw new CoreAnswerRefusedError('malformed', 'a stored accepted command does not parse');
    return parsed.data;
  }

  /** What Core's seed route serves for a checkpoint: the bytes of its version 2 seed, or null. */
  async checkpointSeed(
    actor: CoreActor,
    checkpoint: BuildTestCheckpointRef,
    signal: AbortSignal,
  ): Promise<Uint8Array | null> {
    const command = await this.acceptedCommand(actor, checkpoint, signal);
    const seed = command === null ? null : seedOf(command);
    if (seed === null) return null;
    return readWorkspaceSeed(this.db, checkpoint.tenantId, checkpoint.projectId, seed.sha256);
  }

  async workspaceSeed(
    actor: CoreActor,
    command: AcceptedBuildTestCommand,
    signal: AbortSignal,
  ): Promise<Uint8Array> {
    const expected = expectedSeed(command);
    const bytes = await this.checkpointSeed(actor, command.checkpoint, signal);
    if (bytes === null) throw new CoreAnswerRefusedError('no-seed', 'Core has no seed for this checkpoint');
    checkSeedBytes(bytes, expected);
    checkUnchanged(command, await this.acceptedCommand(actor, command.checkpoint, signal));
    return bytes;
  }

  async verifyAcknowledgment(
    actor: CoreActor,
    acknowledgment: JournalAcknowledgment,
    signal: AbortSignal,
  ): Promise<AcknowledgmentVerdict> {
    admitCall(actor, signal, this.now());
    const admitted = await readAdmission(this.db, acknowledgment.operationId);
    if (admitted === null || admitted.tenantId !== actor.tenantId) {
      return { verified: false, reason: 'no journal record was admitted for this operation' };
    }
    if (admitted.acknowledgmentHash !== acknowledgmentHash(acknowledgment)) {
      return { verified: false, reason: 'the acknowledgment differs from the admitted journal record' };
    }
    return { verified: true };
  }
}

export function acknowledgmentHash(acknowledgment: JournalAcknowledgment): string {
  return sha256Hex(canonicalJson(acknowledgment));
}

/** Registers a version 2 seed (by content) for a project. */
export async function registerWorkspaceSeed(
  db: Database,
  seed: { tenantId: string; projectId: string; bytes: Uint8Array; createdBy: string },
): Promise<{ result: Exclude<PutResult, 'conflict'>; sha256: string; length: number }> {
  if (seed.bytes.length < 1 || seed.bytes.length > MAX_SEED_BYTES) {
    throw new RangeError(`a seed holds 1 to ${MAX_SEED_BYTES} bytes`);
  }
  const sha256 = sha256Of(seed.bytes);
  const result = await putWorkspaceSeed(db, { ...seed, sha256 });
  return { result, sha256, length: seed.bytes.length };
}

/** Registers the accepted command of its checkpoint; a version 2 command's seed must be registered first. */
export function registerAcceptedCommand(
  db: Database,
  command: AcceptedBuildTestCommand,
  createdBy: string,
): Promise<PutCommandResult> {
  const canonical = acceptedCommandSchema.parse(command);
  return putAcceptedCommand(db, {
    checkpoint: canonical.checkpoint,
    operationId: canonical.operationId,
    version: canonical.version,
    command: canonical,
    commandHash: acceptedCommandHash(canonical),
    seed: seedOf(canonical),
    createdBy,
  });
}

/** Records what Events admitted for an operation: the one acknowledgment the stand-in verifies. */
export async function registerAdmission(
  db: Database,
  acknowledgment: JournalAcknowledgment,
  createdBy: string,
): Promise<PutResult | 'unknown-operation'> {
  const canonical = journalAcknowledgmentSchema.parse(acknowledgment);
  // The acknowledgment names its operation's own checkpoint, or it acknowledges nothing.
  const command = await readAcceptedCommand(db, canonical.checkpoint);
  const parsed = acceptedCommandSchema.safeParse(command?.command);
  if (!parsed.success || parsed.data.operationId !== canonical.operationId) return 'unknown-operation';
  return putAdmission(db, {
    operationId: canonical.operationId,
    acknowledgment: canonical,
    acknowledgmentHash: acknowledgmentHash(canonical),
    createdBy,
  });
}
