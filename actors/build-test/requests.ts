// What the BuildTest use cases take and answer (service.ts): the offer, the caller and the bearer
// it presented, the request a caller may send (a checkpoint and the binding it expects, never a
// command), and the CoreActor a Core call is made for, which never prints the bearer.
import type { BuildTestRunner } from '../../providers/build-test.ts';
import type { Caller, Core, CoreActor } from '../ports.ts';
import type { BuildTestProfileRef } from './lease-profile.ts';
import type { BuildTestCheckpointRef } from './accepted-command.ts';

/** BuildTest is offered only with both: the accepted profile and the Core it asks. */
export interface BuildTestOffer {
  /** The profile in effect now: new leases record it (actors/sandbox/service.ts); each keeps its own. */
  profile: BuildTestProfileRef;
  core: Core;
  /** The provider's command and collector Pods (absent: this provider cannot run them yet, 501). */
  runner?: BuildTestRunner;
}

/** The bearer a request presented, kept unprintable (http/auth/middleware.ts PresentedBearer). */
export interface BearerCredential {
  readonly expiresAt: Date;
  /** The raw token: only for an outgoing Authorization header to Core. */
  reveal(): string;
}

/** Who asks: the caller as the authority knows it, and the bearer Core will be asked with. */
export interface BuildTestActor {
  caller: Caller;
  bearer: BearerCredential;
}

/** The Sandbox lease the caller expects the command to run on, exactly. */
export interface ExpectedSandboxBinding {
  leaseOperationId: string;
  resourceGeneration: number;
  providerFence: number;
  workspace: { volumeId: string; resourceGeneration: number; dataGeneration: number };
  networkPolicyGeneration: number;
}

/** A command request names a checkpoint and the binding; never a command, image or argument. */
export interface BuildTestCommandRequest {
  checkpoint: BuildTestCheckpointRef;
  expectedBinding: ExpectedSandboxBinding;
}

export interface BindingPreparationQuery {
  sessionId: string;
  executionProfileReference: string;
}

export interface BindingPreparation {
  sessionId: string;
  executionProfileReference: string;
  profileHash: string;
  versions: readonly string[];
  /** The binding a command request must name now. */
  binding: ExpectedSandboxBinding;
}

/**
 * The sealed document, exactly as stored, as a stream: its digest and length, and its bytes in
 * order, the last chunk only once both were checked (a mismatch fails the stream instead).
 */
export interface WorkspaceCapture {
  chunks: AsyncIterable<Uint8Array>;
  sha256: string;
  length: number;
}

const REDACTED = '[redacted]';

/**
 * The CoreActor a Core call is made for. Its `bearer` is readable but not enumerable, and the
 * object serializes without it: a CoreActor that reaches a log line shows no credential.
 */
export function coreActorOf(actor: BuildTestActor): CoreActor {
  const coreActor = {
    tenantId: actor.caller.tenantId,
    subject: actor.caller.subject,
    expiresAt: actor.bearer.expiresAt,
  } as CoreActor;
  const { bearer } = actor;
  Object.defineProperty(coreActor, 'bearer', { get: () => bearer.reveal(), enumerable: false });
  Object.defineProperty(coreActor, 'toJSON', {
    value: () => ({ tenantId: coreActor.tenantId, subject: coreActor.subject, bearer: REDACTED }),
    enumerable: false,
  });
  return coreActor;
}
