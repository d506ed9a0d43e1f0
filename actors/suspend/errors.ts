// Suspend's refusals (docs/suspend-resume.md, docs/api.md "Suspend resolve"), each a problem a caller
// can act on. Nothing is written when one is thrown; the message names IDs, states and revisions of
// the caller's own Environment and Core's operation, never a credential, a provider option or a
// release descriptor. Core's own failures (CoreUnavailableError, CoreDeniedError,
// CoreAnswerRefusedError) pass through unchanged: none of them is a verdict.
import { problemClass } from '../../lib/errors.ts';
import { ActorError } from '../errors.ts';

/** Refusal codes the suspend checks raise; `code` is also the problem type and an extension. */
export const suspendRefusalCodes = [
  'suspend-operation-not-current',
  'suspend-operation-state',
  'suspend-operation-changed',
  'runtime-registration-missing',
  'runtime-session-mismatch',
  'suspend-placement-mismatch',
  'workspace-not-attached',
  'workspace-transition-stale',
  'workspace-storage-unpinned',
  'suspend-request-mismatch',
  'workspace-flush-conflict',
  'workspace-flush-not-reservable',
  'workspace-build-test-running',
  'suspend-flush-evidence-mismatch',
  'suspend-release-not-confirmed',
] as const;
export type SuspendRefusalCode = (typeof suspendRefusalCodes)[number];

/** A refusal that leaves everything as it was; `code` says which (docs/api.md lists them). */
export class SuspendRefusedError extends problemClass({ status: 409, title: 'Suspend refused' }, ActorError) {
  constructor(
    override readonly code: SuspendRefusalCode,
    message: string,
  ) {
    super(message, { code });
  }

  override get extensions() {
    return { code: this.code };
  }
}

/** No Core is configured (SANDLOT_CORE_URL unset in production): suspend cannot be asked about. */
export class SuspendUnavailableError extends problemClass(
  { code: 'runtime-core-unavailable', status: 503, title: 'Runtime Core unavailable' },
  ActorError,
) {
  constructor() {
    super(
      "no Core is configured for suspend and resume (SANDLOT_CORE_URL); Core's operation cannot be asked",
    );
  }

  override get extensions() {
    return { code: this.code };
  }
}

/**
 * A flush whose Host delivery did not settle: it stays open with its evidence and advances nothing.
 * Repeating the same request delivers the same flush again (the Host answers its saved receipt).
 */
export class WorkspaceFlushUncertainError extends problemClass(
  { code: 'workspace-flush-uncertain', status: 503, title: 'Workspace flush uncertain' },
  ActorError,
) {
  constructor(
    readonly flushOperationId: string,
    reason: string,
  ) {
    super(
      `flush ${flushOperationId} was delivered but not verified (${reason}); nothing advanced. Repeat the same request to deliver the same flush again`,
    );
  }

  override get extensions() {
    return { code: this.code, flushOperationId: this.flushOperationId };
  }
}

/** The Host refused the flush before flushing anything: closed, nothing advanced. */
export class WorkspaceFlushRefusedError extends problemClass(
  { code: 'workspace-flush-refused', status: 409, title: 'Workspace flush refused' },
  ActorError,
) {
  constructor(
    readonly flushOperationId: string,
    readonly reason: string,
  ) {
    super(`the AgentHost refused flush ${flushOperationId} (${reason}); nothing advanced`);
  }

  override get extensions() {
    return { code: this.code, flushOperationId: this.flushOperationId, reason: this.reason };
  }
}
