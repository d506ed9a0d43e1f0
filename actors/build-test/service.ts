// BuildTest use cases on a leased sandbox (docs/build-test.md). Every one needs WriteProjects and
// ReadRunSelection and the caller's own Environment, asked afresh before and after the read (Guard),
// before anything else is decided. Without an AcceptedBuildTestProfile BuildTest is not offered
// (409 build-test-unavailable); with one, this build still runs no command and says so (501
// build-test-not-implemented): no operation, capture or verdict is ever made up. Nothing is written.
//
// The caller's bearer reaches this layer only as a BearerCredential (never a plain string in a
// field a log could print), and becomes a CoreActor only for a Core call (coreActorOf).
import type { Caller, Core, CoreActor, Permission } from '../ports.ts';
import type { AuthorityDeps } from '../guard.ts';
import { Guard } from '../guard.ts';
import type { EnvironmentAddress } from '../owned.ts';
import type { BuildTestCheckpointRef, JournalAcknowledgment } from './accepted-command.ts';
import { ActorError } from '../errors.ts';

/**
 * The part of the AcceptedBuildTestProfile (config/build-test-profile.ts) this layer names: the hash
 * a lease records. actors/ may not name config/ types beyond config/agenthost.ts (lint:layers).
 */
export interface BuildTestProfileRef {
  readonly hash: string;
}

/** BuildTest is offered only with both: the accepted profile and the Core it asks. */
export interface BuildTestOffer {
  profile: BuildTestProfileRef;
  core: Core;
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

export interface BuildTestDeps extends AuthorityDeps {
  /** Absent: no AcceptedBuildTestProfile is configured, and BuildTest is not offered. */
  offer?: BuildTestOffer;
}

export class BuildTestUnavailableError extends ActorError {
  override readonly status = 409;
  override readonly title = 'BuildTest unavailable';
  constructor() {
    super(
      'build-test-unavailable',
      'BuildTest is not offered: no AcceptedBuildTestProfile is configured (SANDLOT_BUILDTEST_PROFILE_FILE)',
    );
  }
}

export class BuildTestNotImplementedError extends ActorError {
  override readonly status = 501;
  override readonly title = 'Not implemented';
  constructor() {
    super('build-test-not-implemented', 'this Sandlot build does not run BuildTest commands yet');
  }
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

const buildTestPermissions: readonly Permission[] = ['WriteProjects', 'ReadRunSelection'];

export class BuildTestService {
  constructor(private readonly deps: BuildTestDeps) {}

  /** Whether BuildTest is offered at all (an AcceptedBuildTestProfile is configured). */
  get offered(): boolean {
    return this.deps.offer !== undefined;
  }

  /** Validate the current Sandbox profile binding for a session, starting nothing. */
  prepareBinding(
    actor: BuildTestActor,
    address: EnvironmentAddress,
    _query: BindingPreparationQuery,
  ): Promise<never> {
    return this.#notYet(actor, address);
  }

  /** Resolve the accepted command with Core and run it as one stable operation. */
  create(
    actor: BuildTestActor,
    address: EnvironmentAddress,
    _request: BuildTestCommandRequest,
  ): Promise<never> {
    return this.#notYet(actor, address);
  }

  /** The persisted operation, under the current owner and Sandbox binding. */
  read(actor: BuildTestActor, address: EnvironmentAddress, _operationId: string): Promise<never> {
    return this.#notYet(actor, address);
  }

  /** Reconcile the same operation and intent; never a replacement operation. */
  reconcile(
    actor: BuildTestActor,
    address: EnvironmentAddress,
    _operationId: string,
    _request: BuildTestCommandRequest,
  ): Promise<never> {
    return this.#notYet(actor, address);
  }

  /** The sealed version 2 document, exact digest and length. */
  capture(actor: BuildTestActor, address: EnvironmentAddress, _operationId: string): Promise<never> {
    return this.#notYet(actor, address);
  }

  /** Verify the Events journal acknowledgment through Core, save it, then clean up. */
  acknowledge(
    actor: BuildTestActor,
    address: EnvironmentAddress,
    _operationId: string,
    _acknowledgment: JournalAcknowledgment,
  ): Promise<never> {
    return this.#notYet(actor, address);
  }

  /**
   * Fresh authority and the caller's Environment (403, 404) before anything else; then the
   * capability: absent 409, present 501 until the commands region exists. Changes nothing.
   */
  async #notYet(actor: BuildTestActor, address: EnvironmentAddress): Promise<never> {
    const guard = new Guard(this.deps, actor.caller, address.projectId, buildTestPermissions);
    await guard.environment(address);
    if (this.deps.offer === undefined) throw new BuildTestUnavailableError();
    throw new BuildTestNotImplementedError();
  }
}
