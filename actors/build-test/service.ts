// BuildTest use cases on a leased sandbox (docs/build-test.md). Every one needs WriteProjects and
// ReadRunSelection and the caller's own Environment, asked afresh before and after every await
// (Guard), before anything else is decided. Without an AcceptedBuildTestProfile BuildTest is not
// offered (409 build-test-unavailable). The caller names a checkpoint and the lease binding it
// expects; the command is what Core accepted for that checkpoint, resolved here under the caller's
// authority and reserved, with its request fingerprint, by one transition of the Environment
// before any provider effect (machines/environment-commands.ts).
//
// The profile a command is checked against, and recorded under, is the one its lease accepted when
// it was reserved (lease-profile.ts), not this process's: a changed profile file affects new leases
// only. The process's profile decides only whether BuildTest is offered at all.
//
// The caller's bearer reaches this layer only as a BearerCredential (never a plain string in a
// field a log could print), and becomes a CoreActor only for a Core call (coreActorOf).
import { canonicalJson, sha256Hex } from '../../lib/canonical-json.ts';
import type { EnvironmentEvent } from '../../machines/environment-events.ts';
import type { BuildTestRunner } from '../../providers/build-test.ts';
import { verifiedCapture } from '../../lib/capture-stream.ts';
import {
  listBuildTestOperations,
  readBuildTestOperation,
  readBuildTestOperationById,
  type BuildTestOperationRow,
} from '../../store/build-test-operations.ts';
import type { Queryable } from '../../store/db.ts';
import { readCurrentLease, readLeaseByOperation, type LeaseRow } from '../../store/leases.ts';
import type { Permission } from '../ports.ts';
import type { AuthorityDeps } from '../guard.ts';
import { Guard } from '../guard.ts';
import type { EnvironmentAddress } from '../owned.ts';
import type { ActorRuntime } from '../runtime.ts';
import { recordedRequestOf } from '../sandbox/readiness.ts';
import {
  acceptedCommandHash,
  type AcceptedBuildTestCommand,
  type BuildTestCheckpointRef,
  type JournalAcknowledgment,
} from './accepted-command.ts';
import {
  BuildTestCheckpointNotFoundError,
  BuildTestNotImplementedError,
  BuildTestOperationNotFoundError,
  BuildTestRefusedError,
  BuildTestUnavailableError,
} from './errors.ts';
import type { BuildTestProfileRef } from './lease-profile.ts';
import {
  coreActorOf,
  type BindingPreparation,
  type BindingPreparationQuery,
  type BuildTestActor,
  type BuildTestCommandRequest,
  type BuildTestOffer,
  type ExpectedSandboxBinding,
  type WorkspaceCapture,
} from './requests.ts';
import { acknowledgmentProblem, bindingOfLease, profileOfLease, sameJson } from './stored-checks.ts';
import { workspaceProblem } from './workspace-binding.ts';
import {
  operationView,
  type BuildTestOperationResult,
  type BuildTestOperationView,
} from './operation-view.ts';

export { BuildTestNotImplementedError, BuildTestUnavailableError };
export type { BuildTestProfileRef };
export { coreActorOf } from './requests.ts';
export type {
  BearerCredential,
  BindingPreparation,
  BindingPreparationQuery,
  BuildTestActor,
  BuildTestCommandRequest,
  BuildTestOffer,
  ExpectedSandboxBinding,
  WorkspaceCapture,
} from './requests.ts';

export interface BuildTestDeps extends AuthorityDeps {
  runtime: ActorRuntime<EnvironmentEvent>;
  /** Absent: no AcceptedBuildTestProfile is configured, and BuildTest is not offered. */
  offer?: BuildTestOffer;
  /** Deadline of one Core or provider call made for a request (default 30 s). */
  callTimeoutMs?: number;
}

/** How many of an Environment's operations a list answers with, newest first. */
export const OPERATION_LIST_LIMIT = 50;

const buildTestPermissions: readonly Permission[] = ['WriteProjects', 'ReadRunSelection'];

const operationTaken = (operationId: string) =>
  new BuildTestRefusedError(
    'build-test-operation-conflict',
    `operation ${operationId} is reserved by another Environment`,
  );

export class BuildTestService {
  constructor(private readonly deps: BuildTestDeps) {}

  /** Whether BuildTest is offered at all (an AcceptedBuildTestProfile is configured). */
  get offered(): boolean {
    return this.deps.offer !== undefined;
  }

  /** Validate the current Sandbox profile binding for a session, starting nothing. */
  async prepareBinding(
    actor: BuildTestActor,
    address: EnvironmentAddress,
    query: BindingPreparationQuery,
  ): Promise<BindingPreparation> {
    const { guard } = await this.#open(actor, address);
    const lease = await readCurrentLease(this.deps.db, address.environmentId);
    await guard.check();
    const binding = lease?.state === 'Active' ? bindingOfLease(lease) : null;
    if (lease === null || binding === null) {
      throw new BuildTestRefusedError('build-test-no-active-lease', 'the Environment has no Active lease');
    }
    // A binding is offered only while a command could run on it: not on a Workspace being flushed.
    await this.#workspaceUsable(this.deps.db, lease);
    // What a command on this lease is checked against: the profile the lease accepted.
    const profile = profileOfLease(lease);
    return {
      sessionId: query.sessionId,
      executionProfileReference: query.executionProfileReference,
      profileHash: profile.hash,
      versions: profile.versions,
      binding,
    };
  }

  /** Resolve the accepted command with Core and reserve its one stable operation on the lease. */
  async create(
    actor: BuildTestActor,
    address: EnvironmentAddress,
    request: BuildTestCommandRequest,
  ): Promise<BuildTestOperationResult> {
    const { guard, offer } = await this.#open(actor, address);
    this.#checkpointOfAddress(actor, address, request.checkpoint);
    // The lease the caller names keeps the profile it accepted; the reserving transaction below
    // checks that this lease is still the current Active one, exactly as expected, so the profile
    // read here is the profile of the lease the command is reserved on (a lease row's profile is
    // written once, with the row). A replay names its original lease, whatever is current now.
    const profile = await this.#namedLeaseProfile(address, request.expectedBinding);
    const command = await this.#accepted(actor, offer, request.checkpoint);
    this.#admitted(profile, command);
    // Version 2: the seed is transferred and checked now (digest, length, Core's metadata read
    // again after it), before anything is reserved; its bytes are not kept.
    if (command.version === 2) await offer.core.workspaceSeed(coreActorOf(actor), command, this.#signal());
    const intent = {
      checkpoint: request.checkpoint,
      acceptedCommand: command as unknown as Record<string, unknown>,
      acceptedCommandHash: acceptedCommandHash(command),
      requestFingerprint: sha256Hex(
        canonicalJson({
          environmentId: address.environmentId,
          operationId: command.operationId,
          checkpoint: request.checkpoint,
          expectedBinding: request.expectedBinding,
          acceptedCommandHash: acceptedCommandHash(command),
          profileHash: profile.hash,
        }),
      ),
      expectedBinding: request.expectedBinding as unknown as Record<string, unknown>,
      profileHash: profile.hash,
    };
    const { value } = await this.#reserve(command.operationId, () =>
      this.deps.runtime.step(
        address.environmentId,
        async (tx) => {
          // Core's operation ID is one checkpoint's, so at most one Environment's (a unique column).
          const existing = await readBuildTestOperationById(tx, command.operationId);
          if (existing !== null && existing.environmentId !== address.environmentId) {
            throw operationTaken(command.operationId);
          }
          if (existing !== null) {
            if (existing.requestFingerprint !== intent.requestFingerprint) {
              throw new BuildTestRefusedError(
                'build-test-operation-conflict',
                `operation ${command.operationId} was reserved with another checkpoint or binding`,
              );
            }
            return { event: null, value: true };
          }
          const lease = await this.#leaseMatching(tx, address.environmentId, request.expectedBinding);
          // Under the lock: the volume is still this lease's, at its generation, and no flush holds it.
          await this.#workspaceUsable(tx, lease);
          const recorded = recordedRequestOf(lease);
          const ownerHash = lease.recoveryRequest['ownerHash'];
          if (recorded === null || typeof ownerHash !== 'string' || lease.resource === null) {
            throw new BuildTestRefusedError(
              'build-test-binding-mismatch',
              'the lease has no validated recovery record to run a command on',
            );
          }
          const event: EnvironmentEvent = {
            type: 'command.reserve',
            operationId: command.operationId,
            lease: {
              operationId: lease.operationId,
              lifecycleGeneration: lease.lifecycleGeneration,
              resourceGeneration: lease.resourceGeneration,
              providerFence: lease.providerFence,
              fencingGeneration: lease.currentFencingGeneration,
              resourceId: lease.resource.resourceId,
              ownerHash,
              workspace: recorded.workspace,
              networkPolicyGeneration: recorded.networkPolicyGeneration,
              providerOptions: lease.providerOptions,
            },
            intent,
          };
          return { event, value: false };
        },
        guard.commit(address.runId),
      ),
    );
    const replay = value;
    const row = await this.#row(address, command.operationId);
    await guard.check();
    if (!replay && row.requestFingerprint !== intent.requestFingerprint) {
      throw new BuildTestRefusedError('build-test-operation-conflict', 'the operation was not reserved');
    }
    return { operation: operationView(row), replay };
  }

  /**
   * The Environment's operations, newest first (at most OPERATION_LIST_LIMIT), whatever lease they
   * ran on: what an operator looks at. A record read, like a lease's attempts and cleanups: it needs
   * ReadRunSelection and the caller's own Environment, asks neither Core nor a provider, and answers
   * whether or not BuildTest is offered now (an older configuration may have run some).
   */
  async list(actor: BuildTestActor, address: EnvironmentAddress): Promise<BuildTestOperationView[]> {
    const guard = new Guard(this.deps, actor.caller, address.projectId, ['ReadRunSelection']);
    const env = await guard.owner(address);
    const rows = await guard.after(() =>
      listBuildTestOperations(this.deps.db, env.environmentId, OPERATION_LIST_LIMIT),
    );
    return rows.map(operationView);
  }

  /** The persisted operation, under the current owner. */
  async read(
    actor: BuildTestActor,
    address: EnvironmentAddress,
    operationId: string,
  ): Promise<BuildTestOperationResult> {
    const { guard } = await this.#open(actor, address);
    const row = await this.#row(address, operationId);
    // Read under the current Sandbox binding: the operation's lease, still current and Active.
    await this.#leaseMatching(
      this.deps.db,
      address.environmentId,
      row.expectedBinding as unknown as ExpectedSandboxBinding,
      "the operation's binding",
    );
    await guard.check();
    return { operation: operationView(row), replay: true };
  }

  /** Reconcile the same operation and intent: look again at its step, never a new operation or Pod. */
  async reconcile(
    actor: BuildTestActor,
    address: EnvironmentAddress,
    operationId: string,
    request: BuildTestCommandRequest,
  ): Promise<BuildTestOperationResult> {
    const { guard, offer } = await this.#open(actor, address);
    const before = await this.#row(address, operationId);
    if (!sameRequest(before, request)) {
      throw new BuildTestRefusedError(
        'build-test-reconcile-mismatch',
        'a reconcile names the checkpoint and binding of the original request, exactly',
      );
    }
    // Core validates the command again before anything is reopened.
    const command = await this.#accepted(actor, offer, request.checkpoint);
    if (acceptedCommandHash(command) !== before.acceptedCommandHash) {
      throw new BuildTestRefusedError(
        'build-test-command-changed',
        'Core no longer holds the accepted command this operation reserved',
      );
    }
    const { accepted: reopened } = await this.deps.runtime.send(
      address.environmentId,
      { type: 'command.reconcile', operationId },
      guard.commit(address.runId),
    );
    const row = await this.#row(address, operationId);
    await guard.check();
    return { operation: operationView(row), replay: !reopened };
  }

  /** The sealed version 2 document, exact digest and length, read from the collector's state. */
  async capture(
    actor: BuildTestActor,
    address: EnvironmentAddress,
    operationId: string,
  ): Promise<WorkspaceCapture> {
    const { guard, offer } = await this.#open(actor, address);
    const row = await this.#row(address, operationId);
    if (row.acknowledgment !== null) {
      const reference = row.acknowledgment['objectReference'];
      throw new BuildTestRefusedError(
        'build-test-capture-acknowledged',
        `the capture was acknowledged; Source Control retains it as ${String(reference)}`,
        { status: 410, title: 'Capture acknowledged' },
      );
    }
    const collector = row.collectorPod;
    if (row.state !== 'Succeeded' || row.capture === null || collector === null) {
      throw new BuildTestRefusedError(
        'build-test-no-capture',
        `operation ${operationId} has no sealed capture`,
      );
    }
    const runner = this.#runner(offer);
    const lease = await readLeaseByOperation(this.deps.db, row.leaseOperationId);
    if (lease?.resource == null) {
      throw new BuildTestRefusedError('build-test-no-capture', 'the lease the capture was made on is gone');
    }
    const recorded = recordedRequestOf(lease);
    const ownerHash = lease.recoveryRequest['ownerHash'];
    if (recorded === null || typeof ownerHash !== 'string') {
      throw new BuildTestRefusedError('build-test-no-capture', 'the lease has no validated recovery record');
    }
    const { sha256, length } = row.capture;
    const source = await runner.readCapture(
      {
        binding: {
          operationId,
          checkpoint: row.checkpoint as never,
          requestFingerprint: row.requestFingerprint,
          acceptedCommandHash: row.acceptedCommandHash,
        },
        placement: {
          lease: {
            owner: {
              tenantId: actor.caller.tenantId,
              projectId: address.projectId,
              runId: address.runId,
              environmentId: address.environmentId,
              ownerHash,
              lifecycleGeneration: lease.lifecycleGeneration,
              resourceGeneration: lease.resourceGeneration,
              providerFence: lease.providerFence,
              operationId: lease.operationId,
            },
            resourceId: lease.resource.resourceId,
            options: lease.providerOptions,
          },
          workspace: recorded.workspace,
          networkPolicyGeneration: recorded.networkPolicyGeneration,
        },
        collectorPodUid: String(collector['uid']),
        sha256,
        length,
      },
      { signal: this.#signal(), deadline: new Date(Date.now() + this.#timeoutMs()) },
    );
    // Checked again here, and the fresh authority asked, before the last chunk leaves: a reader
    // never completes a document that is not the stored capture, or after its permission went.
    const verified = verifiedCapture(
      source,
      { sha256, length },
      (why) =>
        new BuildTestRefusedError(
          'build-test-capture-mismatch',
          `the sealed bytes are not the stored capture: ${why}`,
          {
            status: 502,
            title: 'Capture mismatch',
          },
        ),
      () => guard.check(),
    );
    // The first chunk is read before the answer starts, so a capture that cannot be read at all
    // (or one short enough to be checked whole) is still refused with a problem.
    const chunks = verified[Symbol.asyncIterator]();
    const first = await chunks.next();
    return { chunks: resumed(first, chunks), sha256, length };
  }

  /** Verify the Events journal acknowledgment through Core, save it, then clean up the exact Pods. */
  async acknowledge(
    actor: BuildTestActor,
    address: EnvironmentAddress,
    operationId: string,
    { request, acknowledgment }: { request: BuildTestCommandRequest; acknowledgment: JournalAcknowledgment },
  ): Promise<BuildTestOperationResult> {
    const { guard, offer } = await this.#open(actor, address);
    const row = await this.#row(address, operationId);
    // The original request, exactly: the checkpoint and binding the operation was reserved with.
    const problem = sameRequest(row, request)
      ? acknowledgmentProblem(row, operationId, acknowledgment)
      : 'the request names another checkpoint or binding than the operation was reserved with';
    if (problem !== null) throw new BuildTestRefusedError('build-test-acknowledgment-mismatch', problem);
    if (row.acknowledgment !== null) {
      if (!sameJson(row.acknowledgment, acknowledgment)) {
        throw new BuildTestRefusedError(
          'build-test-acknowledgment-conflict',
          'the capture was acknowledged already, with another acknowledgment',
        );
      }
      await guard.check();
      return { operation: operationView(row), replay: true };
    }
    // Current command checks surround the verification.
    await this.#sameCommand(actor, offer, row);
    const verdict = await offer.core.verifyAcknowledgment(coreActorOf(actor), acknowledgment, this.#signal());
    if (!verdict.verified) {
      throw new BuildTestRefusedError(
        'build-test-acknowledgment-unverified',
        `Core does not vouch for this acknowledgment: ${verdict.reason}`,
      );
    }
    await this.#sameCommand(actor, offer, row);
    const { accepted } = await this.deps.runtime.send(
      address.environmentId,
      {
        type: 'command.acknowledged',
        operationId,
        acknowledgment: acknowledgment as unknown as Record<string, unknown>,
      },
      guard.commit(address.runId),
    );
    const saved = await this.#row(address, operationId);
    await guard.check();
    if (!accepted && !sameJson(saved.acknowledgment, acknowledgment)) {
      throw new BuildTestRefusedError(
        'build-test-acknowledgment-conflict',
        'the acknowledgment was not saved',
      );
    }
    return { operation: operationView(saved), replay: !accepted };
  }

  /**
   * Another Environment reserving the same operation at the same moment loses on the unique
   * operation ID: that is the same 409 as when its reservation is already there, never a 500.
   */
  async #reserve<T>(operationId: string, reserve: () => Promise<T>): Promise<T> {
    try {
      return await reserve();
    } catch (error) {
      const cause = error instanceof Error ? (error.cause ?? error) : error;
      const code = typeof cause === 'object' && cause !== null && 'code' in cause ? cause.code : undefined;
      if (code === '23505') throw operationTaken(operationId);
      throw error;
    }
  }

  /** Fresh authority and the caller's Environment (403, 404), then the capability (409). */
  async #open(actor: BuildTestActor, address: EnvironmentAddress) {
    const guard = new Guard(this.deps, actor.caller, address.projectId, buildTestPermissions);
    await guard.environment(address);
    const offer = this.deps.offer;
    if (offer === undefined) throw new BuildTestUnavailableError();
    this.#runner(offer);
    return { guard, offer };
  }

  #runner(offer: BuildTestOffer): BuildTestRunner {
    if (offer.runner === undefined) {
      throw new BuildTestNotImplementedError(
        'this provider cannot run BuildTest command and collector Pods yet (the simulated provider can)',
      );
    }
    return offer.runner;
  }

  #timeoutMs() {
    return this.deps.callTimeoutMs ?? 30_000;
  }

  #signal() {
    return AbortSignal.timeout(this.#timeoutMs());
  }

  /** A checkpoint of another tenant, project or run than the address is never resolved. */
  #checkpointOfAddress(
    actor: BuildTestActor,
    address: EnvironmentAddress,
    checkpoint: BuildTestCheckpointRef,
  ) {
    if (
      checkpoint.tenantId !== actor.caller.tenantId ||
      checkpoint.projectId !== address.projectId ||
      checkpoint.runId !== address.runId
    ) {
      throw new BuildTestRefusedError(
        'build-test-checkpoint-mismatch',
        "the checkpoint names another tenant, project or run than the Environment's",
        { status: 422, title: 'Checkpoint mismatch' },
      );
    }
  }

  async #accepted(actor: BuildTestActor, offer: BuildTestOffer, checkpoint: BuildTestCheckpointRef) {
    const command = await offer.core.acceptedCommand(coreActorOf(actor), checkpoint, this.#signal());
    if (command === null) throw new BuildTestCheckpointNotFoundError();
    return command;
  }

  async #sameCommand(actor: BuildTestActor, offer: BuildTestOffer, row: BuildTestOperationRow) {
    const command = await offer.core.acceptedCommand(
      coreActorOf(actor),
      row.checkpoint as BuildTestCheckpointRef,
      this.#signal(),
    );
    if (command === null || acceptedCommandHash(command) !== row.acceptedCommandHash) {
      throw new BuildTestRefusedError(
        'build-test-command-changed',
        'Core no longer holds the accepted command this operation reserved',
      );
    }
  }

  /** The profile the lease named by `expected` accepted (refused if there is no such lease here). */
  async #namedLeaseProfile(
    address: EnvironmentAddress,
    expected: ExpectedSandboxBinding,
  ): Promise<BuildTestProfileRef> {
    const lease = await readLeaseByOperation(this.deps.db, expected.leaseOperationId);
    if (lease?.environmentId !== address.environmentId) {
      throw new BuildTestRefusedError(
        'build-test-binding-mismatch',
        'the expected binding names no lease of this Environment',
      );
    }
    return profileOfLease(lease);
  }

  /** The lease's profile admits the command: its executable and its version. */
  #admitted(profile: BuildTestProfileRef, command: AcceptedBuildTestCommand) {
    if (!profile.executables.includes(command.command.executable)) {
      throw new BuildTestRefusedError(
        'build-test-command-not-admitted',
        'the accepted command names an executable the AcceptedBuildTestProfile does not allow',
      );
    }
    if (!profile.versions.includes(command.version === 2 ? 'v2' : 'v1')) {
      throw new BuildTestRefusedError(
        'build-test-command-not-admitted',
        `the AcceptedBuildTestProfile does not run version ${command.version} commands`,
      );
    }
  }

  /** The current lease, Active, exactly the binding the caller expects. */
  async #leaseMatching(
    tx: Queryable,
    environmentId: string,
    expected: ExpectedSandboxBinding,
    named = 'the expected binding',
  ): Promise<LeaseRow> {
    const lease = await readCurrentLease(tx, environmentId);
    const binding = lease?.state === 'Active' ? bindingOfLease(lease) : null;
    if (lease === null || binding === null) {
      throw new BuildTestRefusedError('build-test-no-active-lease', 'the Environment has no Active lease');
    }
    if (!sameJson(binding, expected)) {
      throw new BuildTestRefusedError(
        'build-test-binding-mismatch',
        `${named} is not the current lease, Workspace and network policy generation`,
      );
    }
    return lease;
  }

  async #workspaceUsable(q: Queryable, lease: LeaseRow): Promise<void> {
    const problem = await workspaceProblem(q, lease);
    if (problem !== null) throw new BuildTestRefusedError('build-test-workspace-unavailable', problem);
  }

  async #row(address: EnvironmentAddress, operationId: string): Promise<BuildTestOperationRow> {
    const row = await readBuildTestOperation(this.deps.db, address.environmentId, operationId);
    if (row === null) throw new BuildTestOperationNotFoundError(operationId);
    return row;
  }
}

/** The operation's original command request: its checkpoint and expected binding, exactly. */
function sameRequest(row: BuildTestOperationRow, request: BuildTestCommandRequest): boolean {
  return (
    sameJson(row.checkpoint, request.checkpoint) && sameJson(row.expectedBinding, request.expectedBinding)
  );
}

/** The stream again from a chunk already read off it. */
async function* resumed(
  first: IteratorResult<Uint8Array, void>,
  rest: AsyncIterator<Uint8Array, void, undefined>,
): AsyncGenerator<Uint8Array, void, undefined> {
  if (first.done === true) return;
  yield first.value;
  for (let next = await rest.next(); next.done !== true; next = await rest.next()) yield next.value;
}
