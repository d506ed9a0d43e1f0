// Resume bootstrap (docs/suspend-resume.md "Bootstrap"): after Core advanced its execution fence
// and registered the new Runtime, start that Runtime on the restored Host with a server-issued
// attempt, the Host activation, and the acknowledged server configuration read from Events.
//
// Every call, a replay included, first asks afresh: Core's resume operation (Committed, exactly as
// offered, its saved evidence confirmed), Core's current registration (exactly the request's, on
// the acknowledged session), and the restored placement (the current lease, Active, mounted as
// prepare answered, and the registration's runtime profile still mapping it at its current
// endpoint: bootstrap-profile.ts). Only then does the saved attempt decide what happens:
//
// - Delivering: the configuration is read from Events, the delivery counted before the Host is
//   asked, and the Host's receipt checked (its recovery evidence included) and asked about again
//   before it is saved. An unreachable Host keeps the attempt Delivering (the outcome is unknown:
//   the same request delivers the same attempt again, and the Host answers its saved receipt).
// - Activated: the saved receipt is answered only while the Host reports that attempt's session
//   Active now. A fresh `Missing` is a state loss, saved and answered explicitly: the only outcome
//   that lets Core revoke this registration and ask again with a new one (a new attempt).
// - Refused or StateLost: answered as saved.
//
// Attempts of one resume operation are numbered and issued under the owner lock, one per
// registration, and a next one only after the previous ended in a state loss. An attempt without
// an outcome blocks the lifecycle advance of a later resume (actors/resume/service.ts).
import type { AgentHostConfiguration } from '../../config/agenthost.ts';
import type { EnvironmentEvent } from '../../machines/environment-events.ts';
import { canonicalJson, sha256Hex } from '../../lib/canonical-json.ts';
import type { Database } from '../../store/db.ts';
import type { LeaseRow } from '../../store/leases.ts';
import {
  countDelivery,
  insertAttempt,
  readAttempt,
  readAttempts,
  settleAttempt,
  type AttemptOutcome,
  type AttemptState,
  type BootstrapAttemptRow,
} from '../../store/resume-bootstrap-attempts.ts';
import { readVerifiedFlush } from '../../store/workspace-flushes.ts';
import { AgentHostActivationRefusedError } from '../agenthost/activation.ts';
import { AgentHostUnavailableError } from '../agenthost/flush.ts';
import { coreActorOf } from '../build-test/requests.ts';
import type { AuthorityDeps, Guard } from '../guard.ts';
import type { AgentHost, AgentHostActivationReceipt, RuntimeCore } from '../ports.ts';
import type { ProtectedMaterial, RuntimeEvents } from '../runtime-events/ports.ts';
import type { ActorRuntime } from '../runtime.ts';
import { openSuspendStep, type SuspendActor } from '../suspend/open.ts';
import {
  attemptIdentityOf,
  type AttemptView,
  type ResumeBootstrapOutcome,
  type ResumeBootstrapRequest,
} from './bootstrap-requests.ts';
import { checkBootstrapProfile } from './bootstrap-profile.ts';
import { askCoreForResume } from './core-checks.ts';
import { ResumeRefusedError, ResumeUnavailableError, refuseResumeOn } from './errors.ts';
import { checkJournalRebuild } from './journal-evidence.ts';
import { observeRestored, restoredBindingOf } from './restored.ts';

export interface ResumeBootstrapDeps extends AuthorityDeps {
  db: Database;
  runtime: ActorRuntime<EnvironmentEvent>;
  agentHost: AgentHost;
  runtimeCore?: RuntimeCore;
  /** Events' protected material read (unset: bootstrap cannot read the configuration, 503). */
  runtimeEvents?: RuntimeEvents;
  /** Deadline of one Core, Events or Host call (default 30 s). */
  callTimeoutMs?: number;
  /** The immutable AgentHost configuration the registration's runtime profile must still match. */
  agentHostProfiles?: AgentHostConfiguration;
}

export class ResumeBootstrapService {
  constructor(private readonly deps: ResumeBootstrapDeps) {}

  async bootstrap(actor: SuspendActor, request: ResumeBootstrapRequest): Promise<ResumeBootstrapOutcome> {
    if (request.manifest.configuration === null) {
      throw new ResumeRefusedError(
        'resume-configuration-missing',
        'the manifest carries no saved configuration acknowledgment: it cannot authorize a resume',
      );
    }
    const { guard } = await openSuspendStep(this.deps, actor, request.operation.ref);
    if (this.deps.runtimeEvents === undefined) throw new ResumeUnavailableError('events');
    const lease = await this.#fresh(guard, actor, request);
    // The configuration first: a step whose configuration Events does not hand out gets no attempt.
    const material = await this.#configuration(guard, actor, request);
    await this.#lostPredecessor(guard, request, lease);
    let attempt = await this.#attempt(guard, request, lease);
    for (;;) {
      switch (attempt.state) {
        case 'Delivering': {
          const next = await this.#deliver(guard, actor, request, lease, attempt, material);
          if (next === null) return this.#answer(attempt.attemptId);
          attempt = next;
          continue;
        }
        case 'Activated':
          return this.#replayActivated(guard, request, lease, attempt);
        case 'StateLost':
          return lostOutcome(attempt);
        case 'Refused':
          throw refusedAttempt(attempt);
      }
    }
  }

  /** Core's operation and registration, and the restored placement, asked afresh. */
  async #fresh(guard: Guard, actor: SuspendActor, request: ResumeBootstrapRequest): Promise<LeaseRow> {
    const signal = () => this.#signal();
    const core = this.deps.runtimeCore;
    const { registration } = await askCoreForResume(guard, core, actor, request, 'committed', signal);
    const asked = request.registration;
    refuseResumeOn(
      'resume-registration-mismatch',
      registration.registrationId !== asked.registrationId ||
        registration.profileId !== asked.profileId ||
        registration.sessionId !== asked.sessionId ||
        registration.generation !== asked.generation
        ? `Core's current Runtime registration is ${registration.registrationId} at generation ${registration.generation}, not the request's ${asked.registrationId} at ${asked.generation}`
        : registration.sessionId !== request.manifest.configuration?.sessionId
          ? `registration ${registration.registrationId} is not on the session whose configuration was acknowledged`
          : null,
    );
    return guard.after(() => this.#placed(this.deps.db, request, actor));
  }

  /** The restored lease, and the registration's profile still its own (the actor too, when given). */
  async #placed(
    q: Parameters<typeof observeRestored>[0],
    request: ResumeBootstrapRequest,
    actor?: SuspendActor,
  ): Promise<LeaseRow> {
    const { operation, restoredWorkspace, manifest } = request;
    const lease = await observeRestored(q, operation, restoredWorkspace, manifest.workspace.dataGeneration);
    await checkBootstrapProfile(q, this.deps.agentHostProfiles, request, lease, actor);
    return lease;
  }

  /**
   * A newer registration than the last attempt's asks (Core already revoked the old one): when that
   * attempt was acknowledged and the Host now reports its session Missing, the loss is saved first,
   * so the replacement below may be issued. Anything else leaves it for #attempt to refuse.
   */
  async #lostPredecessor(guard: Guard, request: ResumeBootstrapRequest, lease: LeaseRow): Promise<void> {
    const attempts = await readAttempts(this.deps.db, request.operation.operationId);
    const last = attempts.at(-1);
    if (
      last === undefined ||
      last.state !== 'Activated' ||
      attempts.some((a) => a.registrationId === request.registration.registrationId) ||
      request.registration.generation <= last.registrationGeneration
    ) {
      return;
    }
    const binding = restoredBindingOf(lease, request.restoredWorkspace);
    const session = await guard.after(() => this.deps.agentHost.sessionState(binding, this.#signal()));
    if (session.state === 'Missing') await this.#lost(guard, request, last);
  }

  async #lost(guard: Guard, request: ResumeBootstrapRequest, attempt: BootstrapAttemptRow): Promise<void> {
    const loss = {
      observedAt: new Date().toISOString(),
      sessionState: 'Missing' as const,
      revokeRegistrationId: attempt.registrationId,
    };
    await this.#outcome(guard, request, attempt, 'Activated', { state: 'StateLost', loss });
  }

  /** The registration's attempt, or (under the owner lock) the next one issued for it. */
  async #attempt(
    guard: Guard,
    request: ResumeBootstrapRequest,
    lease: LeaseRow,
  ): Promise<BootstrapAttemptRow> {
    const { operation, registration } = request;
    const { value } = await this.deps.runtime.step(
      operation.ref.environmentId,
      async (tx) => {
        await this.#placed(tx, request);
        const attempts = await readAttempts(tx, operation.operationId);
        const mine = attempts.find((a) => a.registrationId === registration.registrationId);
        if (mine !== undefined || request.attemptId !== undefined) {
          refuseResumeOn(
            'resume-attempt-unknown',
            mine === undefined ||
              mine.attemptId !== (request.attemptId ?? mine.attemptId) ||
              mine.registrationGeneration !== registration.generation ||
              mine.leaseOperationId !== lease.operationId
              ? `attempt ${request.attemptId ?? '(none)'} is not the attempt issued for registration ${registration.registrationId} on lease ${lease.operationId}`
              : null,
          );
          return { event: null, value: mine as BootstrapAttemptRow };
        }
        const last = attempts.at(-1);
        if (last !== undefined) {
          refuseResumeOn(
            last.state === 'Delivering' ? 'resume-attempt-unresolved' : 'resume-attempt-not-replaceable',
            last.state === 'StateLost'
              ? null
              : `attempt ${last.attemptSeq} (${last.attemptId}) is ${last.state}; a replacement is issued only after an explicit state loss`,
          );
          refuseResumeOn(
            'resume-registration-mismatch',
            registration.generation > last.registrationGeneration
              ? null
              : `a replacement attempt needs a registration newer than generation ${last.registrationGeneration}: Core revokes the lost one first`,
          );
        }
        const identity = attemptIdentityOf(operation.operationId, attempts.length + 1);
        const ack = request.manifest.configuration;
        const body = {
          ...identity,
          resumeOperationId: operation.operationId,
          registration,
          configuration: { sha256: ack?.sha256, length: ack?.length },
          binding: restoredBindingOf(lease, request.restoredWorkspace),
        };
        const row = {
          attemptId: identity.attemptId,
          environmentId: operation.ref.environmentId,
          resumeOperationId: operation.operationId,
          attemptSeq: identity.attemptSeq,
          registrationId: registration.registrationId,
          registrationGeneration: registration.generation,
          leaseOperationId: lease.operationId,
          request: body,
          requestSha256: sha256Hex(canonicalJson(body)),
        };
        await insertAttempt(tx, row);
        return { event: null, value: (await readAttempt(tx, identity.attemptId)) as BootstrapAttemptRow };
      },
      guard.commit(operation.ref.runId),
    );
    return value;
  }

  /**
   * One delivery of a Delivering attempt: the configuration from Events, the delivery counted, the
   * Host asked, its receipt checked and the world asked again, then the receipt saved. Answers the
   * attempt as it stands when another delivery settled it first, or null once this one did.
   */
  async #deliver(
    guard: Guard,
    actor: SuspendActor,
    request: ResumeBootstrapRequest,
    lease: LeaseRow,
    attempt: BootstrapAttemptRow,
    material: ProtectedMaterial,
  ): Promise<BootstrapAttemptRow | null> {
    const counted = await this.#settle(guard, request, (tx) => countDelivery(tx, attempt.attemptId));
    if (!counted) return this.#reread(attempt.attemptId);

    const binding = restoredBindingOf(lease, request.restoredWorkspace);
    const identity = attemptIdentityOf(attempt.resumeOperationId, attempt.attemptSeq);
    let receipt: AgentHostActivationReceipt;
    try {
      receipt = await this.deps.agentHost.activate(
        binding,
        {
          ...identity,
          resumeOperationId: attempt.resumeOperationId,
          registration: request.registration,
          configuration: { sha256: material.acknowledgment.sha256, bytes: material.bytes },
        },
        this.#signal(),
      );
    } catch (error) {
      if (error instanceof AgentHostActivationRefusedError) {
        await this.#outcome(guard, request, attempt, 'Delivering', {
          state: 'Refused',
          evidence: { refused: error.reason, at: new Date().toISOString() },
        });
        throw refusedAttempt({ ...attempt, evidence: { refused: error.reason } });
      }
      if (error instanceof AgentHostUnavailableError) {
        await this.#outcome(guard, request, attempt, 'Delivering', {
          state: 'Delivering',
          evidence: { unavailable: error.reason, at: new Date().toISOString() },
        });
      }
      throw error;
    }

    // Checked and asked again before it is saved; a receipt that fails is kept as evidence only.
    try {
      await this.#recoveryChecked(request, receipt);
      await this.#fresh(guard, actor, request);
    } catch (error) {
      await this.#outcome(guard, request, attempt, 'Delivering', {
        state: 'Delivering',
        evidence: { unsavedReceipt: receipt, at: new Date().toISOString() },
      });
      throw error;
    }
    const saved = await this.#outcome(guard, request, attempt, 'Delivering', {
      state: 'Activated',
      receipt,
      receiptSha256: sha256Hex(canonicalJson(receipt)),
    });
    return saved ? null : this.#reread(attempt.attemptId);
  }

  /** The acknowledged configuration, exactly its bytes, from Events (which checks Core itself). */
  async #configuration(
    guard: Guard,
    actor: SuspendActor,
    request: ResumeBootstrapRequest,
  ): Promise<ProtectedMaterial> {
    const events = this.deps.runtimeEvents as RuntimeEvents;
    const ack = request.manifest.configuration;
    if (ack === null) throw new Error('bootstrap admitted a request without an acknowledgment');
    const material = await guard.after(() =>
      events.readProtectedMaterial(coreActorOf(actor), request.operation.ref, ack, this.#signal()),
    );
    if (material === null) {
      throw new ResumeRefusedError(
        'resume-configuration-unavailable',
        'Events holds no acknowledged configuration for this step and its current registration',
      );
    }
    return material;
  }

  /** A saved activation is answered only while the Host holds that attempt's session now. */
  async #replayActivated(
    guard: Guard,
    request: ResumeBootstrapRequest,
    lease: LeaseRow,
    attempt: BootstrapAttemptRow,
  ): Promise<ResumeBootstrapOutcome> {
    const binding = restoredBindingOf(lease, request.restoredWorkspace);
    const session = await guard.after(() => this.deps.agentHost.sessionState(binding, this.#signal()));
    if (session.state === 'Missing') {
      await this.#lost(guard, request, attempt);
      return this.#answer(attempt.attemptId);
    }
    refuseResumeOn(
      'resume-host-mismatch',
      session.attemptId !== attempt.attemptId || session.registrationId !== attempt.registrationId
        ? `the Host holds a session of attempt ${session.attemptId}, not of ${attempt.attemptId}`
        : null,
    );
    await this.#recoveryChecked(request, attempt.receipt as unknown as AgentHostActivationReceipt);
    return this.#answer(attempt.attemptId);
  }

  /**
   * The Host's recovery must be the suspend's own: a native cache exactly the one the verified
   * flush wrote, or a journal rebuild to exactly the journal boundary that flush saved (with no
   * native cache claimed until an authorized turn).
   */
  async #recoveryChecked(
    request: ResumeBootstrapRequest,
    receipt: AgentHostActivationReceipt,
  ): Promise<void> {
    const flush = await readVerifiedFlush(
      this.deps.db,
      request.manifest.workspace.volumeId,
      request.manifest.workspace.transitionRevision,
    );
    if (receipt.recovery.mode === 'JournalRebuild') {
      checkJournalRebuild(flush?.receipt ?? null, receipt.recovery);
      return;
    }
    const cache = flush?.receipt?.['cache'];
    const flushed =
      typeof cache === 'object' && cache !== null && 'cacheSha256' in cache ? cache.cacheSha256 : null;
    refuseResumeOn(
      'resume-recovery-evidence-mismatch',
      flushed === receipt.recovery.cacheSha256
        ? null
        : "the Host restored a native cache that is not the one the suspend's verified flush wrote",
    );
  }

  /** Writes an outcome from `from` under the owner lock, the placement and authority checked there. */
  #outcome(
    guard: Guard,
    request: ResumeBootstrapRequest,
    attempt: BootstrapAttemptRow,
    from: AttemptState,
    outcome: AttemptOutcome,
  ): Promise<boolean> {
    return this.#settle(guard, request, (tx) => settleAttempt(tx, attempt.attemptId, from, outcome));
  }

  async #settle(
    guard: Guard,
    request: ResumeBootstrapRequest,
    write: (tx: Parameters<typeof countDelivery>[0]) => Promise<boolean>,
  ): Promise<boolean> {
    const { ref } = request.operation;
    const { value } = await this.deps.runtime.step(
      ref.environmentId,
      async (tx) => {
        await this.#placed(tx, request);
        return { event: null, value: await write(tx) };
      },
      guard.commit(ref.runId),
    );
    return value;
  }

  async #reread(attemptId: string): Promise<BootstrapAttemptRow> {
    const attempt = await readAttempt(this.deps.db, attemptId);
    if (attempt === null) throw new Error(`attempt ${attemptId} vanished`);
    return attempt;
  }

  async #answer(attemptId: string): Promise<ResumeBootstrapOutcome> {
    const attempt = await readAttempt(this.deps.db, attemptId);
    if (attempt === null) throw new Error(`attempt ${attemptId} vanished`);
    if (attempt.state === 'Activated') {
      return {
        outcome: 'Activated',
        attempt: viewOf(attempt),
        receipt: attempt.receipt ?? {},
        receiptSha256: attempt.receiptSha256 ?? '',
      };
    }
    if (attempt.state === 'StateLost') return lostOutcome(attempt);
    if (attempt.state === 'Refused') throw refusedAttempt(attempt);
    throw new ResumeUnavailableError('outcome');
  }

  #signal(): AbortSignal {
    return AbortSignal.timeout(this.deps.callTimeoutMs ?? 30_000);
  }
}

function viewOf(attempt: BootstrapAttemptRow): AttemptView {
  const identity = attemptIdentityOf(attempt.resumeOperationId, attempt.attemptSeq);
  return {
    ...identity,
    resumeOperationId: attempt.resumeOperationId,
    registrationId: attempt.registrationId,
    registrationGeneration: attempt.registrationGeneration,
    state: attempt.state,
    deliveries: attempt.deliveries,
  };
}

function lostOutcome(attempt: BootstrapAttemptRow): ResumeBootstrapOutcome {
  const loss = attempt.loss as { observedAt: string; revokeRegistrationId: string } | null;
  return {
    outcome: 'StateLost',
    attempt: viewOf(attempt),
    receiptSha256: attempt.receiptSha256 ?? '',
    loss: {
      observedAt: loss?.observedAt ?? '',
      sessionState: 'Missing',
      revokeRegistrationId: loss?.revokeRegistrationId ?? attempt.registrationId,
    },
  };
}

function refusedAttempt(attempt: Pick<BootstrapAttemptRow, 'attemptId' | 'evidence'>): ResumeRefusedError {
  const refused = attempt.evidence?.['refused'];
  return new ResumeRefusedError(
    'resume-attempt-refused',
    `the Host refused attempt ${attempt.attemptId}${typeof refused === 'string' ? ` (${refused})` : ''}; Core abandons the resume or asks with a new registration after a state loss`,
  );
}
