// The trusted Workspace flush before a suspend (docs/suspend-resume.md "Workspace flush"). Core
// sends the saved Fenced request its resolve answered; Environment reserves the exact volume
// transition as one transition of the Environment machine (the workspace region journals the terms
// before the Host is asked), delivers the flush to the AgentHost holding exactly that lease and
// Workspace, and saves the outcome in one owner transaction:
//
// - verified (the receipt matched field by field, and Core, authority, placement and the attached
//   Workspace still hold after the delivery): the receipt is saved and the volume's data
//   generation and transition revision advance by one, in the same transaction;
// - uncertain (no answer, an answer that does not match, or a check after delivery that failed):
//   the evidence is kept and nothing advances; the same request delivers the same flush again;
// - refused by the Host before it flushed anything: closed, nothing advances.
//
// Every check before the reservation refuses with nothing written. A completed flush answers its
// saved receipt on replay, after Core confirms the operation is still current, without a second
// delivery. Fresh Projects authority is asked before and after every await and inside each owner
// transaction before it commits.
import { canonicalJson, sha256Hex } from '../../lib/canonical-json.ts';
import type { EnvironmentEvent, FlushTerms } from '../../machines/environment-events.ts';
import type { Database, Queryable } from '../../store/db.ts';
import type { LeaseRow } from '../../store/leases.ts';
import { listFlushes, readFlush, type FlushRow } from '../../store/workspace-flushes.ts';
import { EmbeddedWorkspaceStorage } from '../../store/workspace-storage.ts';
import { readVolume, type VolumeRow } from '../../store/workspaces.ts';
import { AgentHostFlushRefusedError, hostRefusalCodes } from '../agenthost/flush.ts';
import { coreActorOf } from '../build-test/requests.ts';
import { checkedBeforeCommit, Guard, type AuthorityDeps } from '../guard.ts';
import type { EnvironmentAddress } from '../owned.ts';
import type {
  AgentHost,
  AgentHostWorkspaceBinding,
  RuntimeCore,
  WorkspaceStorage,
  WorkspaceVolumeRef,
} from '../ports.ts';
import { recordedApplicability } from '../sandbox/provider-applicability.ts';
import { verifyStorage } from '../sandbox/admission.ts';
import { WorkspaceStorageRefusedError } from '../workspace/storage.ts';
import type { RuntimeOperation, RuntimeStepRef } from '../runtime-core/runtime-operation.ts';
import type { ActorRuntime } from '../runtime.ts';
import { agentHostTargetOf, recordedRequestOf } from '../sandbox/readiness.ts';
import { readRunningBuildTestOperation } from '../../store/build-test-operations.ts';
import { SuspendRefusedError, WorkspaceFlushRefusedError, WorkspaceFlushUncertainError } from './errors.ts';
import { openSuspendAddress, type SuspendActor } from './open.ts';
import {
  askCoreForSuspend,
  attachedVolumeProblem,
  placementProblem,
  readSuspendOwnerFacts,
  refuseOn,
  transitionProblem,
} from './suspend-checks.ts';

export interface WorkspaceFlushDeps extends AuthorityDeps {
  db: Database;
  runtime: ActorRuntime<EnvironmentEvent>;
  agentHost: AgentHost;
  runtimeCore?: RuntimeCore;
  /** The Workspace's storage, read back around the Host delivery (default: the embedded table over db). */
  workspaceStorage?: WorkspaceStorage;
  /** Deadline of one Core or Host call made for a request (default 30 s). */
  callTimeoutMs?: number;
}

/** The saved Fenced request, as Core sends it: nothing a caller could use to name other evidence. */
export interface WorkspaceFlushRequest {
  stepId: string;
  /** Core's suspend operation. */
  operationId: string;
  transitionRevision: number;
  nextDataGeneration: number;
}

export interface WorkspaceFlushView {
  flushOperationId: string;
  operationId: string;
  stepId: string;
  volumeId: string;
  state: FlushRow['state'];
  lease: { operationId: string; resourceGeneration: number; providerFence: number };
  /** The volume transition the flush was for, and the data generation it started from. */
  transitionRevision: number;
  dataGeneration: number;
  nextDataGeneration: number;
  deliveries: number;
  /** The Host's receipt (Verified only) and the SHA-256 of its canonical JSON. */
  receipt: Record<string, unknown> | null;
  hostReceiptSha256: string | null;
  reservedAt: string;
  settledAt: string | null;
}

export interface WorkspaceFlushResult {
  flush: WorkspaceFlushView;
  /** True when the flush was already Verified: the saved receipt, no delivery. */
  replayed: boolean;
}

/** One stable ID per Environment, Core operation and exact volume transition. */
export const flushOperationIdOf = (
  environmentId: string,
  operationId: string,
  volumeId: string,
  transitionRevision: number,
) =>
  `wf_${sha256Hex(canonicalJson({ environmentId, operationId, volumeId, transitionRevision })).slice(0, 40)}`;

export function flushViewOf(row: FlushRow): WorkspaceFlushView {
  return {
    flushOperationId: row.flushOperationId,
    operationId: row.coreOperationId,
    stepId: row.stepId,
    volumeId: row.volumeId,
    state: row.state,
    lease: {
      operationId: row.leaseOperationId,
      resourceGeneration: row.resourceGeneration,
      providerFence: row.providerFence,
    },
    transitionRevision: row.transitionRevision,
    dataGeneration: row.dataGeneration,
    nextDataGeneration: row.dataGeneration + 1,
    deliveries: row.deliveries,
    receipt: row.receipt,
    hostReceiptSha256: row.receiptSha256,
    reservedAt: row.reservedAt,
    settledAt: row.settledAt,
  };
}

type Delivery =
  | { outcome: 'verified'; receipt: Record<string, unknown>; receiptSha256: string }
  | { outcome: 'uncertain' | 'refused'; reason: string; evidence: Record<string, unknown> };

/** How many of an Environment's flushes a list answers with, newest first. */
export const FLUSH_LIST_LIMIT = 50;

export class WorkspaceFlushService {
  constructor(private readonly deps: WorkspaceFlushDeps) {}

  /**
   * The caller's Environment's flushes, newest first (at most FLUSH_LIST_LIMIT): read between two
   * fresh authority checks, asking neither Core nor the Host. Needs ReadRunSelection, as every
   * record read of a lease does.
   */
  async list(actor: SuspendActor, address: EnvironmentAddress): Promise<WorkspaceFlushView[]> {
    const guard = new Guard(this.deps, actor.caller, address.projectId, ['ReadRunSelection']);
    const env = await guard.owner(address);
    const rows = await guard.after(() => listFlushes(this.deps.db, env.environmentId, FLUSH_LIST_LIMIT));
    return rows.map(flushViewOf);
  }

  async flush(
    actor: SuspendActor,
    address: EnvironmentAddress,
    volumeId: string,
    request: WorkspaceFlushRequest,
  ): Promise<WorkspaceFlushResult> {
    const { guard, core } = await openSuspendAddress(this.deps, actor, address);
    const ref: RuntimeStepRef = { tenantId: actor.caller.tenantId, ...address, stepId: request.stepId };
    const flushOperationId = flushOperationIdOf(
      address.environmentId,
      request.operationId,
      volumeId,
      request.transitionRevision,
    );
    // Inside the owner's transaction (`via`), authority and an embedded Core read through it.
    const askCore = (states: readonly ('fenced' | 'committed')[], via?: Queryable) =>
      (via === undefined ? guard : guard.inside(via)).after(() =>
        askCoreForSuspend(
          core,
          coreActorOf(actor),
          ref,
          { operationId: request.operationId, states },
          this.#signal(),
          via,
        ),
      );

    const saved = await readFlush(this.deps.db, flushOperationId);
    if (saved !== null) sameRequest(saved, volumeId, request);
    if (saved?.state === 'Verified') {
      // A completed flush: Core's word afresh, then the saved receipt; never a second delivery.
      await askCore(['fenced', 'committed']);
      return { flush: flushViewOf(saved), replayed: true };
    }
    if (saved?.state === 'Refused') {
      throw new WorkspaceFlushRefusedError(flushOperationId, reasonOf(saved.evidence));
    }

    // Host delivery accepts only Core's saved Fenced request, for exactly this volume transition.
    const { operation } = await askCore(['fenced']);
    refuseOn('suspend-request-mismatch', requestProblem(operation, volumeId, request));
    // Storage holds the pinned claim before anything is reserved: a refusal writes nothing.
    await guard.after(async () => {
      const { lease, volume } = await this.#judged(this.deps.db, operation, volumeId);
      await this.#storageHolds(operation.ref, lease, volume);
    });
    const { value: reserved } = await this.deps.runtime
      .step(
        address.environmentId,
        async (tx) => {
          const { lease, volume } = await this.#judged(tx, operation, volumeId);
          const row = await readFlush(tx, flushOperationId);
          if (row === null) {
            refuseOn('workspace-transition-stale', transitionProblem(operation, volume));
            // A BuildTest command may still write the Workspace: no flush until it is terminal.
            const command = await readRunningBuildTestOperation(tx, lease.environmentId, lease.operationId);
            if (command !== null) {
              throw new SuspendRefusedError(
                'workspace-build-test-running',
                `BuildTest operation ${command.operationId} is ${command.state} on this lease; flush once it is terminal`,
              );
            }
            if (volume.dataGeneration + 1 !== request.nextDataGeneration) {
              throw new SuspendRefusedError(
                'workspace-transition-stale',
                `Workspace volume ${volumeId} is at data generation ${volume.dataGeneration}; the request expects ${request.nextDataGeneration} next`,
              );
            }
            const terms: FlushTerms = {
              volumeId,
              coreOperationId: operation.operationId,
              stepId: request.stepId,
              lease: {
                operationId: lease.operationId,
                resourceGeneration: lease.resourceGeneration,
                providerFence: lease.providerFence,
              },
              transitionRevision: request.transitionRevision,
              dataGeneration: volume.dataGeneration,
            };
            const event: EnvironmentEvent = { type: 'workspace.flushReserve', flushOperationId, terms };
            return { event, value: { lease, terms } };
          }
          if (row.state !== 'Reserved' && row.state !== 'Uncertain') {
            throw new SuspendRefusedError(
              'workspace-flush-conflict',
              `flush ${flushOperationId} settled as ${row.state} meanwhile; repeat the request for its answer`,
            );
          }
          const event: EnvironmentEvent = { type: 'workspace.flushRedeliver', flushOperationId };
          return { event, value: { lease, terms: termsOf(row) } };
        },
        // Core's operation afresh once the owner's waits are behind the reservation, then authority.
        checkedBeforeCommit(guard.commit(address.runId), (tx) => askCore(['fenced'], tx)),
      )
      .then((outcome) => {
        if (outcome.sent?.accepted !== true) {
          throw new SuspendRefusedError(
            'workspace-flush-not-reservable',
            `flush ${flushOperationId} cannot be delivered now: the sandbox is not Active on its lease, or another flush of this Environment is open`,
          );
        }
        return outcome;
      });

    let delivery = await this.#deliver(reserved.lease, reserved.terms, flushOperationId);
    if (delivery.outcome === 'verified') {
      // After the delivery: storage, then (in the owner transaction that saves the outcome, after
      // its waits) Core's operation and authority again. A failure keeps the receipt as uncertain
      // evidence, never applied.
      const { receipt } = delivery;
      try {
        await guard.after(async () => {
          const volume = await readVolume(this.deps.db, volumeId);
          if (volume === null) throw new Error(`Workspace volume ${volumeId} vanished during its flush`);
          await this.#storageHolds(operation.ref, reserved.lease, {
            ...volume,
            dataGeneration: reserved.terms.dataGeneration,
          });
        });
        delivery = await this.#settle(guard, address, operation, flushOperationId, delivery, (tx) =>
          askCore(['fenced'], tx),
        );
      } catch (error) {
        const reason =
          error instanceof WorkspaceStorageRefusedError ? error.code : 'checks-failed-after-delivery';
        const checks =
          error instanceof WorkspaceStorageRefusedError ? { checks: error.extensions.checks } : {};
        await this.#settle(guard, address, operation, flushOperationId, {
          outcome: 'uncertain',
          reason,
          evidence: { reason, ...checks, receipt },
        });
        throw error;
      }
    } else {
      delivery = await this.#settle(guard, address, operation, flushOperationId, delivery);
    }
    const row = await readFlush(this.deps.db, flushOperationId);
    await guard.check();
    if (delivery.outcome === 'uncertain')
      throw new WorkspaceFlushUncertainError(flushOperationId, delivery.reason);
    if (delivery.outcome === 'refused')
      throw new WorkspaceFlushRefusedError(flushOperationId, delivery.reason);
    if (row === null) throw new Error(`flush ${flushOperationId} vanished after it settled`);
    return { flush: flushViewOf(row), replayed: false };
  }

  /** The placement and attached Workspace, judged in the owner's transaction. */
  async #judged(
    tx: Queryable,
    operation: RuntimeOperation,
    volumeId: string,
  ): Promise<{ lease: LeaseRow; volume: VolumeRow }> {
    const { lease, volume } = await readSuspendOwnerFacts(tx, operation.ref.environmentId, volumeId);
    refuseOn('suspend-placement-mismatch', placementProblem(operation, lease));
    refuseOn('workspace-not-attached', attachedVolumeProblem(operation, lease, volume));
    if (lease === null || volume === null) throw new Error('suspend facts vanished after their checks');
    return { lease, volume };
  }

  /**
   * The volume's storage holds exactly what its binding pinned (PVC, PV, the full claim
   * specification, the approved mount options) at `volume`'s generations, read where the lease's
   * objects live; nothing to read for a provider that attaches no volume. Throws
   * WorkspaceStorageRefusedError (409) or WorkspaceStorageUnavailableError (503).
   */
  async #storageHolds(
    owner: Pick<RuntimeStepRef, 'tenantId' | 'projectId'>,
    lease: LeaseRow,
    volume: Pick<VolumeRow, 'volumeId' | 'environmentId' | 'resourceGeneration' | 'dataGeneration'>,
  ): Promise<void> {
    if (!recordedApplicability(lease.providerIdentity).applies.workspaceStorage) return;
    const storage = this.deps.workspaceStorage ?? new EmbeddedWorkspaceStorage(this.deps.db);
    const ref: WorkspaceVolumeRef = {
      tenantId: owner.tenantId,
      projectId: owner.projectId,
      environmentId: volume.environmentId,
      volumeId: volume.volumeId,
      resourceGeneration: volume.resourceGeneration,
      dataGeneration: volume.dataGeneration,
    };
    await verifyStorage(this.deps.db, ref, lease, storage);
  }

  /** One delivery to the Host holding exactly this lease and Workspace; never throws a verdict. */
  async #deliver(lease: LeaseRow, terms: FlushTerms, flushOperationId: string): Promise<Delivery> {
    const recorded = recordedRequestOf(lease);
    const binding: AgentHostWorkspaceBinding = {
      ...agentHostTargetOf(lease),
      podUid: lease.resource?.placement['podUid'] ?? null,
      workspaceVolumeId: terms.volumeId,
      dataGeneration: terms.dataGeneration,
      networkPolicyGeneration: recorded?.networkPolicyGeneration ?? 0,
    };
    try {
      const receipt = await this.deps.agentHost.flush(
        binding,
        { flushOperationId, transitionRevision: terms.transitionRevision },
        this.#signal(),
      );
      const body = receipt as unknown as Record<string, unknown>;
      return { outcome: 'verified', receipt: body, receiptSha256: sha256Hex(canonicalJson(body)) };
    } catch (error) {
      // The Host's own refusal means it flushed nothing; an answer that does not match, or none,
      // leaves the outcome unknown.
      if (
        error instanceof AgentHostFlushRefusedError &&
        (hostRefusalCodes as readonly string[]).includes(error.reason)
      ) {
        return { outcome: 'refused', reason: error.reason, evidence: { reason: error.reason } };
      }
      const reason =
        error instanceof AgentHostFlushRefusedError
          ? error.reason
          : error instanceof Error && 'reason' in error && typeof error.reason === 'string'
            ? error.reason
            : 'unavailable';
      const detail = error instanceof Error && 'detail' in error ? String(error.detail) : 'no answer';
      return { outcome: 'uncertain', reason, evidence: { reason, detail } };
    }
  }

  /**
   * The outcome saved in one owner transaction, judged on fresh facts: a verified receipt whose
   * placement or Workspace no longer holds is kept as uncertain evidence, never applied.
   */
  async #settle(
    guard: Guard,
    address: EnvironmentAddress,
    operation: RuntimeOperation,
    flushOperationId: string,
    delivery: Delivery,
    /** Asked inside the transaction before a verified outcome commits (Core's word after the waits). */
    confirm?: (tx: Queryable) => Promise<unknown>,
  ): Promise<Delivery> {
    const { value } = await this.deps.runtime.step(
      address.environmentId,
      async (tx) => {
        let settled = delivery;
        if (settled.outcome === 'verified') {
          try {
            const { volume } = await this.#judged(tx, operation, operation.workspace.volumeId);
            refuseOn('workspace-transition-stale', transitionProblem(operation, volume));
          } catch (error) {
            if (!(error instanceof SuspendRefusedError)) throw error;
            settled = {
              outcome: 'uncertain',
              reason: error.code,
              evidence: { reason: error.code, receipt: settled.receipt },
            };
          }
        }
        const event: EnvironmentEvent =
          settled.outcome === 'verified'
            ? {
                type: 'workspace.flushed',
                flushOperationId,
                outcome: 'verified',
                evidence: settled.receipt,
                receiptSha256: settled.receiptSha256,
              }
            : {
                type: 'workspace.flushed',
                flushOperationId,
                outcome: settled.outcome,
                evidence: settled.evidence,
                receiptSha256: null,
              };
        return { event, value: settled };
      },
      confirm === undefined
        ? guard.commit(address.runId)
        : checkedBeforeCommit(guard.commit(address.runId), confirm),
    );
    return value;
  }

  #signal(): AbortSignal {
    return AbortSignal.timeout(this.deps.callTimeoutMs ?? 30_000);
  }
}

const termsOf = (row: FlushRow): FlushTerms => ({
  volumeId: row.volumeId,
  coreOperationId: row.coreOperationId,
  stepId: row.stepId,
  lease: {
    operationId: row.leaseOperationId,
    resourceGeneration: row.resourceGeneration,
    providerFence: row.providerFence,
  },
  transitionRevision: row.transitionRevision,
  dataGeneration: row.dataGeneration,
});

/** A replay names exactly what the flush was reserved for. */
function sameRequest(row: FlushRow, volumeId: string, request: WorkspaceFlushRequest): void {
  if (
    row.volumeId !== volumeId ||
    row.stepId !== request.stepId ||
    row.coreOperationId !== request.operationId ||
    row.transitionRevision !== request.transitionRevision ||
    row.dataGeneration + 1 !== request.nextDataGeneration
  ) {
    throw new SuspendRefusedError(
      'workspace-flush-conflict',
      `flush ${row.flushOperationId} was reserved for step ${row.stepId}, data generation ${row.dataGeneration} → ${row.dataGeneration + 1}; the request names other terms`,
    );
  }
}

/** Why Core's saved request is not this flush request, or null. */
function requestProblem(
  operation: RuntimeOperation,
  volumeId: string,
  request: WorkspaceFlushRequest,
): string | null {
  if (operation.workspace.volumeId !== volumeId) {
    return `suspend operation ${operation.operationId} is for volume ${operation.workspace.volumeId}, not ${volumeId}`;
  }
  if (operation.workspace.transitionRevision !== request.transitionRevision) {
    return `suspend operation ${operation.operationId} saved transition revision ${operation.workspace.transitionRevision}; the request names ${request.transitionRevision}`;
  }
  return null;
}

const reasonOf = (evidence: Record<string, unknown> | null): string =>
  typeof evidence?.['reason'] === 'string' ? evidence['reason'] : 'refused';
