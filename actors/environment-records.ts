// Derived rows of the Environment machine, written in the transition's transaction: the lease row
// (one current per Environment), the Workspace attachment CAS, and an attempt row for every
// provider effect, so no provider call can happen without a durable attempt written before it.
// Actions arrive parsed by the machine's own schemas, and each lease row is written once per
// transition: a reservation and the state entered with it are one INSERT, several records of the
// same lease one UPDATE.
import {
  attemptResolutionSchema,
  cleanupClaimRecordSchema,
  cleanupFailedRecordSchema,
  cleanupRecordSchema,
  cleanupReleasedRecordSchema,
  sweepOpenedRecordSchema,
  leaseRecordSchema,
  leaseReservationSchema,
  providerEffectSchema,
  type LeaseRecord,
  type LeaseReservation,
  type ProviderEffect,
} from '../machines/environment-effects.ts';
import type { EnvironmentEvent } from '../machines/environment-events.ts';
import { canonicalJson, sha256Hex } from '../lib/canonical-json.ts';
import { insertAttempt, resolveAttempt } from '../store/attempts.ts';
import type { Queryable } from '../store/db.ts';
import type { EnvironmentRow } from '../store/environments.ts';
import { insertLease, markLeaseObserved, markSweepOpened, updateLease } from '../store/leases.ts';
import {
  insertCleanup,
  markCleanupClaimed,
  markCleanupFailed,
  markCleanupReleased,
  markWorkspaceConflict,
} from '../store/cleanups.ts';
import { attachVolume, detachVolume, holdVolume } from '../store/workspaces.ts';
import { commandReservedRecordSchema, commandStateRecordSchema } from '../machines/environment-commands.ts';
import {
  insertBuildTestOperation,
  markBuildTestCleaned,
  markBuildTestStep,
  recordBuildTestStep,
  saveBuildTestAcknowledgment,
} from '../store/build-test-operations.ts';
import { buildTestEvidenceSchema } from './build-test/evidence.ts';
import { flushRecordSchema, flushReservedRecordSchema } from '../machines/environment-workspace.ts';
import { advanceFlushedVolume, insertFlush, recordFlushDelivery } from '../store/workspace-flushes.ts';
import type { EnvironmentContext } from '../machines/environment-context.ts';
import type { DeclaredAction, InitEvent, TransitionNote } from './definition.ts';
import { WORKSPACE_CONFLICT_NOTE } from './workspace/conflicts.ts';
import { resumeSourceOf } from './resume/requests.ts';
import { retireWorkspace } from './workspace/retirement.ts';
import { WorkspaceConflictError, WorkspaceFlushConflictError } from './errors.ts';

export async function applyEnvironmentActions(
  tx: Queryable,
  row: EnvironmentRow,
  actions: readonly DeclaredAction[],
  event: EnvironmentEvent | InitEvent,
): Promise<TransitionNote[]> {
  let reservation: LeaseReservation | null = null;
  const records = new Map<number, LeaseRecord>();
  const resolutions = [];
  const effects: ProviderEffect[] = [];
  const cleanups: DeclaredAction[] = [];
  const commands: DeclaredAction[] = [];
  const flushes: DeclaredAction[] = [];
  for (const action of actions) {
    switch (action.type) {
      case 'record.leaseReserved':
        reservation = leaseReservationSchema.parse(action.params);
        break;
      case 'record.lease': {
        const record = leaseRecordSchema.parse(action.params);
        const earlier = records.get(record.resourceGeneration);
        records.set(record.resourceGeneration, {
          ...record,
          releaseReceipt: record.releaseReceipt ?? earlier?.releaseReceipt ?? null,
        });
        break;
      }
      case 'record.attemptsResolved':
        resolutions.push(...attemptResolutionSchema.array().parse(action.params));
        break;
      case 'effect.provider':
        effects.push(providerEffectSchema.parse(action.params));
        break;
      case 'record.cleanup':
      case 'record.cleanupClaimed':
      case 'record.cleanupReleased':
      case 'record.cleanupFailed':
      case 'record.sweepOpened':
        cleanups.push(action);
        break;
      case 'record.commandReserved':
      case 'record.command':
        commands.push(action);
        break;
      case 'record.flushReserved':
      case 'record.flush':
        flushes.push(action);
        break;
      default:
        throw new Error(`no writer for declared action ${action.type}`);
    }
  }

  if (reservation !== null) {
    const first = records.get(reservation.resourceGeneration);
    records.delete(reservation.resourceGeneration);
    await reserveLease(tx, row, reservation, first, event);
  }
  for (const record of records.values()) await recordLease(tx, row, record);
  for (const r of resolutions) {
    await resolveAttempt(tx, r.attemptId, { state: r.state, resolution: r.resolution });
  }
  const notes: TransitionNote[] = [];
  for (const action of cleanups) notes.push(...(await recordCleanup(tx, row, action)));
  for (const action of commands) await recordCommand(tx, row, action, event);
  for (const action of flushes) await recordFlush(tx, row, action);
  for (const effect of effects) await openAttempt(tx, row, effect);
  return notes;
}

/**
 * The cleanup region's rows, in the order the transition declared them. A late resource whose volume
 * another lease holds is a Workspace conflict: kept on its row and returned as a note, never skipped.
 */
async function recordCleanup(
  tx: Queryable,
  row: EnvironmentRow,
  action: DeclaredAction,
): Promise<TransitionNote[]> {
  const revision = row.revision;
  switch (action.type) {
    case 'record.cleanup': {
      const notes: TransitionNote[] = [];
      for (const c of cleanupRecordSchema.array().parse(action.params)) {
        await insertCleanup(tx, { ...c, environmentId: row.environmentId, revision });
        if (!c.holdWorkspace) continue;
        const conflict = await holdVolume(tx, {
          volumeId: c.source.workspace.volumeId,
          environmentId: row.environmentId,
          lease: c.source.resourceGeneration,
        });
        if (conflict === null) continue;
        await markWorkspaceConflict(tx, c.cleanupId, conflict);
        notes.push({
          kind: WORKSPACE_CONFLICT_NOTE,
          detail: { ...conflict, cleanupId: c.cleanupId, resourceId: c.resource.resourceId },
        });
      }
      return notes;
    }
    case 'record.sweepOpened': {
      const { resourceGeneration, sweep } = sweepOpenedRecordSchema.parse(action.params);
      await markSweepOpened(tx, row.environmentId, resourceGeneration, sweep);
      return [];
    }
    case 'record.cleanupClaimed':
      await markCleanupClaimed(tx, { ...cleanupClaimRecordSchema.parse(action.params), revision });
      return [];
    case 'record.cleanupReleased': {
      const c = cleanupReleasedRecordSchema.parse(action.params);
      await markCleanupReleased(tx, { ...c, revision });
      // Only after the receipt is durable (this same transaction), and only when the source and
      // current lifecycle fences match (the machine leaves detachWorkspace null otherwise).
      if (c.detachWorkspace !== null)
        await detachVolume(tx, c.detachWorkspace.volumeId, c.detachWorkspace.lease);
      return [];
    }
    case 'record.cleanupFailed':
      await markCleanupFailed(tx, { ...cleanupFailedRecordSchema.parse(action.params), revision });
      return [];
  }
  return [];
}

async function reserveLease(
  tx: Queryable,
  row: EnvironmentRow,
  lease: LeaseReservation,
  first: LeaseRecord | undefined,
  event: EnvironmentEvent | InitEvent,
) {
  if (event.type !== 'sandbox.provision') throw new Error('a lease is reserved only by sandbox.provision');
  await insertLease(tx, {
    environmentId: row.environmentId,
    resourceGeneration: lease.resourceGeneration,
    operationId: lease.operationId,
    lifecycleGeneration: lease.lifecycleGeneration,
    providerFence: lease.providerFence,
    currentFencingGeneration: first?.currentFencingGeneration ?? lease.currentFencingGeneration,
    state: first?.state ?? 'Provisioning',
    idempotencyKey: lease.idempotencyKey,
    runSelection: event.runSelection,
    providerIdentity: event.providerIdentity,
    providerOptions: event.providerOptions,
    recoveryRequest: {
      operationId: lease.operationId,
      ownerHash: lease.ownerHash,
      resourceGeneration: lease.resourceGeneration,
      providerFence: lease.providerFence,
      // The provision request as accepted: readiness takes its bindings from here.
      provision: {
        workspace: lease.workspace,
        networkPolicyGeneration: lease.networkPolicyGeneration,
        expiresAt: lease.expiresAt,
        // A resume's new lease keeps the resume it was made for (actors/resume/restored.ts).
        ...withResumeSource(lease.idempotencyKey),
      },
    },
    workspace: lease.workspace,
    networkPolicyGeneration: lease.networkPolicyGeneration,
    resource: first?.resource ?? null,
    releaseReceipt: first?.releaseReceipt ?? null,
    failure: first?.failure ?? null,
    requestedBy: event.requestedBy,
    expiresAt: lease.expiresAt === null ? null : new Date(lease.expiresAt),
    // Kept for the lease's life: BuildTest on this lease runs under it (actors/build-test/lease-profile.ts).
    buildTestProfile: event.buildTestProfile ?? null,
    revision: row.revision,
  });
  const attached = await attachVolume(tx, {
    volumeId: lease.workspace.volumeId,
    environmentId: row.environmentId,
    resourceGeneration: lease.workspace.resourceGeneration,
    dataGeneration: lease.workspace.dataGeneration,
    lease: lease.resourceGeneration,
  });
  if (!attached) throw new WorkspaceConflictError(lease.workspace.volumeId);
}

async function recordLease(tx: Queryable, row: EnvironmentRow, record: LeaseRecord) {
  await updateLease(tx, { environmentId: row.environmentId, ...record, revision: row.revision });
  // Released is reached only on exact proof (a release receipt, or an exact listOwned showing the
  // resource absent); Failed only when the provider proved nothing was created. Then the Workspace
  // retires with it: detached when its counters stand where the lease and its own verified flushes
  // put them, except that a suspend release's detach waits for Core (actors/workspace/retirement.ts).
  if (record.state === 'Released' || record.state === 'Failed') {
    await retireWorkspace(
      tx,
      row.environmentId,
      record.resourceGeneration,
      releaseKeyOf(row.snapshot, record.resourceGeneration),
    );
  }
}

function withResumeSource(idempotencyKey: string): { resume?: { operationId: string } } {
  const resume = resumeSourceOf(idempotencyKey);
  return resume === null ? {} : { resume };
}

/** The idempotency key of the release the machine began for the lease at `resourceGeneration`. */
function releaseKeyOf(snapshot: unknown, resourceGeneration: number): string | null {
  const lease = (snapshot as { context?: EnvironmentContext } | null)?.context?.sandbox.lease;
  return lease?.resourceGeneration === resourceGeneration ? (lease.release?.idempotencyKey ?? null) : null;
}

async function openAttempt(tx: Queryable, row: EnvironmentRow, effect: ProviderEffect) {
  // The observer's ordering key: a lease just asked about goes to the back of its list.
  if (effect.kind === 'describe') {
    await markLeaseObserved(tx, row.environmentId, effect.fences.resourceGeneration);
  }
  await insertAttempt(tx, {
    attemptId: effect.attemptId,
    environmentId: row.environmentId,
    operationId: effect.operationId,
    kind: effect.kind,
    tenantId: row.tenantId,
    projectId: row.projectId,
    runId: row.runId,
    lifecycleGeneration: effect.fences.lifecycleGeneration,
    resourceGeneration: effect.fences.resourceGeneration,
    providerFence: effect.fences.providerFence,
    fencingGeneration: effect.fences.fencingGeneration,
    request: effect.request,
    requestFingerprint: sha256Hex(
      canonicalJson({ kind: effect.kind, operationId: effect.operationId, ...effect.request }),
    ),
  });
}

/** The commands region's rows: the intent once, then each step's state and evidence. */
async function recordCommand(
  tx: Queryable,
  row: EnvironmentRow,
  action: DeclaredAction,
  event: EnvironmentEvent | InitEvent,
): Promise<void> {
  const { environmentId } = row;
  if (action.type === 'record.commandReserved') {
    const r = commandReservedRecordSchema.parse(action.params);
    await insertBuildTestOperation(tx, { ...r, environmentId });
    return;
  }
  const r = commandStateRecordSchema.parse(action.params);
  if (event.type === 'command.acknowledged') {
    await saveBuildTestAcknowledgment(tx, environmentId, r.operationId, event.acknowledgment);
  } else if (r.outcome === 'cleaned') {
    await markBuildTestCleaned(tx, environmentId, r.operationId);
  } else if (r.outcome === null) {
    if (r.state !== null) await markBuildTestStep(tx, environmentId, r.operationId, r.state, r.step);
  } else {
    const evidence = buildTestEvidenceSchema.parse(r.evidence);
    await recordBuildTestStep(tx, environmentId, r.operationId, r.state, r.step, evidence);
  }
}

/**
 * The workspace region's rows: the terms once; then each delivery and outcome. A verified receipt
 * and the volume transition it authorizes are one write: if the volume moved since the flush was
 * reserved, or the flush was already closed, the whole transition is refused.
 */
async function recordFlush(tx: Queryable, row: EnvironmentRow, action: DeclaredAction): Promise<void> {
  const { environmentId } = row;
  if (action.type === 'record.flushReserved') {
    const r = flushReservedRecordSchema.parse(action.params);
    await insertFlush(tx, environmentId, r.flushOperationId, r.terms);
    return;
  }
  const r = flushRecordSchema.parse(action.params);
  const verified = r.state === 'Verified';
  const moved = await recordFlushDelivery(tx, environmentId, {
    flushOperationId: r.flushOperationId,
    state: r.state,
    deliveries: r.deliveries,
    evidence: verified ? null : r.evidence,
    receipt: verified ? r.evidence : null,
    receiptSha256: verified ? r.receiptSha256 : null,
  });
  if (!moved) {
    throw new WorkspaceFlushConflictError(
      'workspace-flush-closed',
      `flush ${r.flushOperationId} is no longer open; its outcome stays`,
    );
  }
  if (r.advance !== null && !(await advanceFlushedVolume(tx, { ...r.advance, environmentId }))) {
    throw new WorkspaceFlushConflictError(
      'workspace-transition-stale',
      `volume ${r.advance.volumeId} moved since its flush was reserved; the receipt is not applied`,
    );
  }
}
