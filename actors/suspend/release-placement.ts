// Suspend placement release (docs/suspend-resume.md "Placement release", docs/api.md "Suspend
// placement release"). Core calls it after it committed its suspend manifest, with the operation as
// it holds it and the evidence it saved. The provider resource is released only when, in order:
//
// - Core's current operation is exactly the one offered, Committed (canonical JSON);
// - our Verified flush of exactly that volume transition is this Environment's, was made on the
//   placement's lease for this operation, and carries the offered receipt hash and data generation;
// - Core confirms it saved exactly this evidence for exactly this operation (require-release-current);
// - the placement's lease is the Environment's current (or, once released, last) lease, and the
//   volume still stands where the flush left it.
//
// The release itself is the machine's `sandbox.abandon` under a key derived from Core's operation
// (`suspend-release:<operationId>`), sent only while the lease is Active: the machine re-fences and
// releases again on a second abandon, so a replay never sends one. The lease becomes Released in
// the transaction that records the provider's release receipt; the volume's detach waits
// (actors/workspace/retirement.ts): after the wait this route asks Core again (the same checks as
// above) and detaches it (Available, revision + 1) in its own commit, under fresh Projects
// authority. Until both happened the answer is 202 Releasing. Every
// replay makes the same Core checks first, so after Core completed or abandoned its operation a
// replay is refused like any other request (no saved answer authorizes anything on its own).
// Fresh Projects authority is asked before and after every await and inside the commit.
import type { EnvironmentContext } from '../../machines/environment-context.ts';
import type { EnvironmentEvent } from '../../machines/environment-events.ts';
import { canonicalJson } from '../../lib/canonical-json.ts';
import { readAttemptsOfOperation } from '../../store/attempts.ts';
import type { Database, Queryable } from '../../store/db.ts';
import {
  readCurrentLease,
  readLatestLease,
  readLeaseByOperation,
  type LeaseRow,
} from '../../store/leases.ts';
import { readVerifiedFlush, type FlushRow } from '../../store/workspace-flushes.ts';
import { detachVolume, readVolume, type VolumeRow } from '../../store/workspaces.ts';
import { coreActorOf } from '../build-test/requests.ts';
import { checkedBeforeCommit, type AuthorityDeps, type Guard } from '../guard.ts';
import type { AttemptRunner, RuntimeCore, RuntimeOperation } from '../ports.ts';
import type { SavedOperationEvidence } from '../runtime-core/runtime-operation.ts';
import type { ActorRuntime } from '../runtime.ts';
import { SuspendRefusedError } from './errors.ts';
import { openSuspendStep, type SuspendActor } from './open.ts';
import { askCoreForSuspend, refuseOn } from './suspend-checks.ts';

export interface PlacementReleaseDeps extends AuthorityDeps {
  db: Database;
  runtime: ActorRuntime<EnvironmentEvent>;
  runner: AttemptRunner;
  runtimeCore?: RuntimeCore;
  /** Deadline of one Core call, and of the wait for the provider's release (default 30 s). */
  callTimeoutMs?: number;
}

/** What Core sends: its Committed suspend operation as it holds it, and the evidence it saved. */
export interface PlacementReleaseRequest {
  operation: RuntimeOperation;
  evidence: SavedOperationEvidence;
}

export interface PlacementReleaseAnswer {
  operationId: string;
  /** Released: the provider confirmed and the Workspace is detached; Releasing: ask again. */
  state: 'Released' | 'Releasing';
  lease: { operationId: string; resourceGeneration: number; providerFence: number };
  workspace: {
    volumeId: string;
    state: VolumeRow['state'];
    transitionRevision: number;
    dataGeneration: number;
  };
}

/** The abandon's idempotency key: one per Core operation, so a replay is the same release. */
export const releaseKeyOf = (operationId: string) => `suspend-release:${operationId}`;

export class PlacementReleaseService {
  constructor(private readonly deps: PlacementReleaseDeps) {}

  async release(actor: SuspendActor, request: PlacementReleaseRequest): Promise<PlacementReleaseAnswer> {
    const { operation: offered, evidence } = request;
    const { ref } = offered;
    const { guard, core } = await openSuspendStep(this.deps, actor, ref);

    const operation = await this.#confirmed(guard, core, actor, request);

    const key = releaseKeyOf(operation.operationId);
    const { sent } = await this.deps.runtime.step(
      ref.environmentId,
      async (tx, row) => {
        const lease = await readLeaseByOperation(tx, operation.placement.leaseOperationId);
        const last =
          (await readCurrentLease(tx, ref.environmentId)) ?? (await readLatestLease(tx, ref.environmentId));
        refuseOn('suspend-placement-mismatch', placementProblem(operation, lease, last));
        if (lease === null) throw new Error('the placement lease vanished after its check');
        const releasedBy = releaseKeyIn(row.snapshot, lease.operationId);
        if (lease.state !== 'Active') {
          // Already on its way out: only this operation's own release is answered, never re-sent.
          if (
            releasedBy === key &&
            ['Releasing', 'Released', 'ReconciliationRequired'].includes(lease.state)
          ) {
            return { event: null, value: null };
          }
          throw new SuspendRefusedError(
            'suspend-placement-mismatch',
            `lease ${lease.operationId} is ${lease.state}${releasedBy === null ? '' : ' by another release'}; suspend operation ${operation.operationId} did not release it`,
          );
        }
        const volume = await readVolume(tx, operation.workspace.volumeId);
        refuseOn('suspend-flush-evidence-mismatch', flushedVolumeProblem(lease, volume, evidence));
        const event: EnvironmentEvent = {
          type: 'sandbox.abandon',
          resourceGeneration: lease.resourceGeneration,
          providerFence: lease.providerFence,
          idempotencyKey: key,
        };
        return { event, value: null };
      },
      // Core's word once more after the owner's waits: the release is sent only on it.
      checkedBeforeCommit(guard.commit(ref.runId), (tx) => this.#confirmed(guard, core, actor, request, tx)),
    );
    if (sent !== null && !sent.accepted) {
      await guard.check();
      throw new SuspendRefusedError(
        'suspend-placement-mismatch',
        `lease ${operation.placement.leaseOperationId} cannot be released now`,
      );
    }

    let answer = await this.#settled(operation);
    if (answer.state === 'Releasing' && answer.awaitingDetach) {
      // The provider confirmed; the Workspace is detached only now, in a commit that asks Core
      // again and checks Projects authority afresh after the owner's waits.
      await this.deps.runtime.step(
        ref.environmentId,
        async (tx) => {
          const lease = await readLeaseByOperation(tx, operation.placement.leaseOperationId);
          const volume = await readVolume(tx, operation.workspace.volumeId);
          if (lease?.state !== 'Released') throw new Error('the released lease moved back');
          refuseOn('suspend-flush-evidence-mismatch', flushedVolumeProblem(lease, volume, evidence));
          await detachVolume(tx, operation.workspace.volumeId, lease.resourceGeneration);
          return { event: null, value: null };
        },
        checkedBeforeCommit(guard.commit(ref.runId), (tx) =>
          this.#confirmed(guard, core, actor, request, tx),
        ),
      );
      answer = await this.#settled(operation);
    }
    await guard.check();
    return publicAnswer(answer);
  }

  /**
   * Core's current operation is exactly the one offered, Committed; our verified flush is the
   * offered evidence; and Core confirms it saved exactly that evidence (require-release-current).
   */
  async #confirmed(
    guard: Guard,
    core: RuntimeCore,
    actor: SuspendActor,
    request: PlacementReleaseRequest,
    /** The owner's transaction, when asked inside it: every read goes through it. */
    via?: Queryable,
  ): Promise<RuntimeOperation> {
    if (via !== undefined) guard = guard.inside(via);
    const { operation: offered, evidence } = request;
    const { ref } = offered;
    // Core commits its manifest before it asks for the release.
    const { operation } = await guard.after(() =>
      askCoreForSuspend(
        core,
        coreActorOf(actor),
        ref,
        { operationId: offered.operationId, states: ['committed'] },
        this.#signal(),
        via,
      ),
    );
    if (canonicalJson(operation) !== canonicalJson(offered)) {
      throw new SuspendRefusedError(
        'suspend-operation-changed',
        `Core holds suspend operation ${operation.operationId} at state revision ${operation.stateRevision} with other terms or state than offered (state revision ${offered.stateRevision}); ask Core again`,
      );
    }
    const flush = await guard.after(() =>
      readVerifiedFlush(via ?? this.deps.db, operation.workspace.volumeId, evidence.transitionRevision),
    );
    refuseOn('suspend-flush-evidence-mismatch', flushEvidenceProblem(operation, evidence, flush));

    // Core's require-release-current: it saved exactly this evidence for exactly this operation.
    const verdict = await guard.after(() =>
      core.confirmSavedOperation(coreActorOf(actor), operation, evidence, this.#signal(), via),
    );
    if (!verdict.confirmed) {
      throw new SuspendRefusedError(
        'suspend-release-not-confirmed',
        `Core did not confirm the saved evidence of suspend operation ${operation.operationId}: ${verdict.reason}`,
      );
    }

    return operation;
  }

  /** The lease and volume once the release attempt ran (bounded), as they stand then. */
  async #settled(operation: RuntimeOperation): Promise<PlacementReleaseAnswer & { awaitingDetach: boolean }> {
    const { db, runner } = this.deps;
    let lease = await readLeaseByOperation(db, operation.placement.leaseOperationId);
    if (lease !== null && lease.state === 'Releasing') {
      const open = (await readAttemptsOfOperation(db, lease.operationId)).find(
        (a) =>
          a.kind === 'release' &&
          a.fencingGeneration === lease?.currentFencingGeneration &&
          (a.state === 'Pending' || a.state === 'Dispatched'),
      );
      if (open !== undefined) {
        await runner.runNow(open.attemptId, this.deps.callTimeoutMs ?? 30_000);
        lease = await readLeaseByOperation(db, operation.placement.leaseOperationId);
      }
    }
    const volume = await readVolume(db, operation.workspace.volumeId);
    if (lease === null || volume === null) throw new Error('the released lease or its volume vanished');
    const released = lease.state === 'Released' && volume.state === 'Available';
    return {
      awaitingDetach:
        lease.state === 'Released' &&
        volume.state === 'Attached' &&
        volume.attachedLease === lease.resourceGeneration,
      operationId: operation.operationId,
      state: released ? 'Released' : 'Releasing',
      lease: {
        operationId: lease.operationId,
        resourceGeneration: lease.resourceGeneration,
        providerFence: lease.providerFence,
      },
      workspace: {
        volumeId: volume.volumeId,
        state: volume.state,
        transitionRevision: volume.revision,
        dataGeneration: volume.dataGeneration,
      },
    };
  }

  #signal(): AbortSignal {
    return AbortSignal.timeout(this.deps.callTimeoutMs ?? 30_000);
  }
}

/** The answer without what only this service needs to know. */
function publicAnswer(answer: PlacementReleaseAnswer & { awaitingDetach: boolean }): PlacementReleaseAnswer {
  const { operationId, state, lease, workspace } = answer;
  return { operationId, state, lease, workspace };
}

/**
 * Why the saved Verified flush is not the evidence offered for this operation, or null: it must
 * exist, be this Environment's, made on the placement's lease for this operation at the operation's
 * transition revision, with the offered receipt hash and the data generation it advanced to.
 */
export function flushEvidenceProblem(
  operation: RuntimeOperation,
  evidence: SavedOperationEvidence,
  flush: FlushRow | null,
): string | null {
  const { placement, workspace } = operation;
  if (flush === null) {
    return `no verified flush of Workspace volume ${workspace.volumeId} at transition revision ${evidence.transitionRevision}`;
  }
  if (flush.environmentId !== operation.ref.environmentId) {
    return `flush ${flush.flushOperationId} is another Environment's`;
  }
  if (
    flush.coreOperationId !== operation.operationId ||
    flush.transitionRevision !== workspace.transitionRevision
  ) {
    return `flush ${flush.flushOperationId} was made for operation ${flush.coreOperationId} at transition revision ${flush.transitionRevision}, not ${operation.operationId} at ${workspace.transitionRevision}`;
  }
  if (
    flush.leaseOperationId !== placement.leaseOperationId ||
    flush.resourceGeneration !== placement.resourceGeneration ||
    flush.providerFence !== placement.providerFence
  ) {
    return `flush ${flush.flushOperationId} was made on lease ${flush.leaseOperationId} (resource generation ${flush.resourceGeneration}, provider fence ${flush.providerFence}), not the operation's placement`;
  }
  if (flush.receiptSha256 !== evidence.hostReceiptSha256) {
    return `the offered host receipt hash is not the one flush ${flush.flushOperationId} saved`;
  }
  if (flush.dataGeneration + 1 !== evidence.dataGeneration) {
    return `flush ${flush.flushOperationId} advanced data generation ${flush.dataGeneration} to ${flush.dataGeneration + 1}; the evidence names ${evidence.dataGeneration}`;
  }
  return null;
}

/** Why `lease` is not the placement to release, or null: the operation's, and the Environment's last. */
function placementProblem(
  operation: RuntimeOperation,
  lease: LeaseRow | null,
  last: LeaseRow | null,
): string | null {
  const { placement } = operation;
  if (lease?.environmentId !== operation.ref.environmentId) {
    return `Environment ${operation.ref.environmentId} has no lease ${placement.leaseOperationId}`;
  }
  if (
    lease.resourceGeneration !== placement.resourceGeneration ||
    lease.providerFence !== placement.providerFence
  ) {
    return `lease ${lease.operationId} is at resource generation ${lease.resourceGeneration}, provider fence ${lease.providerFence}; operation ${operation.operationId} names ${placement.resourceGeneration}, ${placement.providerFence}`;
  }
  if (last?.operationId !== lease.operationId) {
    return `lease ${lease.operationId} is not Environment ${operation.ref.environmentId}'s current or last lease`;
  }
  return null;
}

/** Before the release: the volume stands where the verified flush left it, attached to the lease. */
function flushedVolumeProblem(
  lease: LeaseRow,
  volume: VolumeRow | null,
  evidence: SavedOperationEvidence,
): string | null {
  if (volume === null) return 'the Workspace volume does not exist';
  if (
    volume.state !== 'Attached' ||
    volume.attachedLease !== lease.resourceGeneration ||
    volume.dataGeneration !== evidence.dataGeneration ||
    volume.revision !== evidence.transitionRevision + 1
  ) {
    return (
      `Workspace volume ${volume.volumeId} is ${volume.state} at transition revision ${volume.revision}, ` +
      `data generation ${volume.dataGeneration}; the flush left it Attached to lease generation ` +
      `${lease.resourceGeneration} at ${evidence.transitionRevision + 1}, ${evidence.dataGeneration}`
    );
  }
  return null;
}

/** The idempotency key of the release the machine began for this lease (null: none, or another lease). */
function releaseKeyIn(snapshot: unknown, leaseOperationId: string): string | null {
  const lease = (snapshot as { context?: EnvironmentContext } | null)?.context?.sandbox.lease;
  if (lease?.operationId !== leaseOperationId) return null;
  return lease.release?.idempotencyKey ?? null;
}
