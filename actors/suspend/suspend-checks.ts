// The checks every suspend step makes (docs/suspend-resume.md): the suspend resolve route and the
// Workspace flush route share them, so both refuse the same things the same way.
//
// - askCoreForSuspend: Core's current operation for the step must be exactly the suspend operation
//   the caller names, in one of the states the step allows, and Core must hold a current Runtime
//   registration. Core's own failures pass through unchanged (none is a verdict).
// - The judges (placementProblem, attachedVolumeProblem, transitionProblem, sessionProblem) are
//   pure: each answers the reason a fact does not fit, or null. `refuseOn` turns a reason into a
//   SuspendRefusedError with a stable code.
// - readSuspendOwnerFacts reads the owner's facts (current lease, volume row, pinned storage
//   binding) through whatever handle it is given, so a caller reads them in its own transaction,
//   under the Environment's owner lock, and judges them there.
//
// Asking fresh Projects authority before and after every await is the caller's part (Guard).
import { z } from 'zod';
import type { Queryable } from '../../store/db.ts';
import { readCurrentLease, type LeaseRow } from '../../store/leases.ts';
import { readStorageBinding, type StorageBinding } from '../../store/workspace-bindings.ts';
import { readVolume, type VolumeRow } from '../../store/workspaces.ts';
import type { CoreActor, RuntimeCore } from '../ports.ts';
import type {
  RuntimeOperation,
  RuntimeOperationState,
  RuntimeRegistration,
  RuntimeStepRef,
} from '../runtime-core/runtime-operation.ts';
import { isExpired, recordedRequestOf } from '../sandbox/readiness.ts';
import { SuspendRefusedError, type SuspendRefusalCode } from './errors.ts';

const id = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/);

/** The Host session proof Core offers: the Runtime registration it believes is current. */
export const sessionProofSchema = z.strictObject({
  registrationId: id,
  sessionId: id,
  generation: z.number().int().positive(),
});
export type SessionProof = z.infer<typeof sessionProofSchema>;

/** What a step expects Core to hold: exactly this suspend operation, in one of these states. */
export interface ExpectedSuspend {
  operationId: string;
  states: readonly RuntimeOperationState[];
  /** The operation's kind (default suspend; resume steps ask for their resume operation). */
  kind?: 'suspend' | 'resume';
}

export interface SuspendCoreFacts {
  operation: RuntimeOperation;
  registration: RuntimeRegistration;
}

/** Throws a SuspendRefusedError with `code` when `problem` names one; nothing otherwise. */
export function refuseOn(code: SuspendRefusalCode, problem: string | null): void {
  if (problem !== null) throw new SuspendRefusedError(code, problem);
}

/**
 * Core's current operation for `ref` (exactly the expected suspend operation, in an allowed state)
 * and its current Runtime registration. Refusals are SuspendRefusedError
 * (`suspend-operation-not-current`, `suspend-operation-state`, `runtime-registration-missing`);
 * CoreUnavailableError, CoreDeniedError and CoreAnswerRefusedError pass through unchanged.
 */
export async function askCoreForSuspend(
  core: RuntimeCore,
  actor: CoreActor,
  ref: RuntimeStepRef,
  expected: ExpectedSuspend,
  signal: AbortSignal,
  /** The owner's transaction, when asked inside it (an embedded Core reads our database). */
  via?: Queryable,
): Promise<SuspendCoreFacts> {
  const operation = await core.currentRuntimeOperation(actor, ref, signal, via);
  if (operation === null) {
    throw new SuspendRefusedError(
      'suspend-operation-not-current',
      `Core holds no current operation for Environment ${ref.environmentId}; suspend operation ${expected.operationId} is not current`,
    );
  }
  const kind = expected.kind ?? 'suspend';
  if (operation.kind !== kind || operation.operationId !== expected.operationId) {
    throw new SuspendRefusedError(
      'suspend-operation-not-current',
      `Core's current operation for Environment ${ref.environmentId} is ${operation.kind} operation ${operation.operationId}, not ${kind} operation ${expected.operationId}`,
    );
  }
  if (!expected.states.includes(operation.state)) {
    throw new SuspendRefusedError(
      'suspend-operation-state',
      `suspend operation ${operation.operationId} is ${operation.state} at state revision ${operation.stateRevision}; this step needs ${expected.states.join(' or ')}`,
    );
  }
  const registration = await core.currentRuntimeRegistration(actor, ref, signal, via);
  if (registration === null) {
    throw new SuspendRefusedError(
      'runtime-registration-missing',
      `Core holds no current Runtime registration for Environment ${ref.environmentId}`,
    );
  }
  return { operation, registration };
}

/**
 * Why `lease` is not the placement `operation` is about, or null: it must be the Environment's
 * current, Active, unexpired lease with a provider resource, and carry exactly the operation's
 * lease operation ID, resource generation and provider fence.
 */
export function placementProblem(
  operation: RuntimeOperation,
  lease: LeaseRow | null,
  now: Date = new Date(),
): string | null {
  const { placement } = operation;
  if (lease === null) return `Environment ${operation.ref.environmentId} has no current lease`;
  if (lease.environmentId !== operation.ref.environmentId) {
    return `lease ${lease.operationId} belongs to another Environment`;
  }
  if (lease.state !== 'Active') return `the current lease ${lease.operationId} is ${lease.state}, not Active`;
  if (isExpired(lease, now)) return `the current lease ${lease.operationId} expired`;
  if (lease.resource === null) return `the current lease ${lease.operationId} has no provider resource`;
  if (
    lease.operationId !== placement.leaseOperationId ||
    lease.resourceGeneration !== placement.resourceGeneration ||
    lease.providerFence !== placement.providerFence
  ) {
    return (
      `the current lease is ${lease.operationId} at resource generation ${lease.resourceGeneration}, ` +
      `provider fence ${lease.providerFence}; operation ${operation.operationId} is about ` +
      `${placement.leaseOperationId} at resource generation ${placement.resourceGeneration}, ` +
      `provider fence ${placement.providerFence}`
    );
  }
  return null;
}

/**
 * Why `volume` is not the Workspace `operation` names, attached to exactly `lease`, or null: the
 * operation's volume, of the same Environment, Attached to that lease, and the volume the lease's
 * validated recorded provision request mounts (same volume and resource generation).
 */
export function attachedVolumeProblem(
  operation: RuntimeOperation,
  lease: LeaseRow | null,
  volume: VolumeRow | null,
): string | null {
  const volumeId = operation.workspace.volumeId;
  if (volume === null) return `Workspace volume ${volumeId} does not exist`;
  if (volume.volumeId !== volumeId) return `volume ${volume.volumeId} is not volume ${volumeId}`;
  if (volume.environmentId !== operation.ref.environmentId) {
    return `Workspace volume ${volumeId} is not Environment ${operation.ref.environmentId}'s`;
  }
  if (lease === null) return `Workspace volume ${volumeId} has no current lease to be attached to`;
  if (volume.state !== 'Attached' || volume.attachedLease !== lease.resourceGeneration) {
    const held =
      volume.state === 'Attached' ? `Attached to lease generation ${volume.attachedLease}` : volume.state;
    return `Workspace volume ${volumeId} is ${held}, not Attached to lease generation ${lease.resourceGeneration}`;
  }
  const recorded = recordedRequestOf(lease);
  if (recorded === null) return `lease ${lease.operationId} has no validated recorded provision request`;
  if (
    recorded.workspace.volumeId !== volume.volumeId ||
    recorded.workspace.resourceGeneration !== volume.resourceGeneration
  ) {
    return (
      `lease ${lease.operationId} mounts volume ${recorded.workspace.volumeId} at resource generation ` +
      `${recorded.workspace.resourceGeneration}, not ${volumeId} at ${volume.resourceGeneration}`
    );
  }
  return null;
}

/** Why the volume's transition revision is not the one the operation carries, or null. */
export function transitionProblem(operation: RuntimeOperation, volume: VolumeRow): string | null {
  const expected = operation.workspace.transitionRevision;
  if (volume.revision === expected) return null;
  return `Workspace volume ${volume.volumeId} is at transition revision ${volume.revision}; operation ${operation.operationId} carries ${expected}`;
}

/** Why the Host session proof is not Core's current registration, or null. */
export function sessionProblem(registration: RuntimeRegistration, proof: SessionProof): string | null {
  if (
    registration.registrationId === proof.registrationId &&
    registration.sessionId === proof.sessionId &&
    registration.generation === proof.generation
  ) {
    return null;
  }
  return (
    `the session proof names registration ${proof.registrationId} generation ${proof.generation}; ` +
    `Core's current registration is ${registration.registrationId} generation ${registration.generation}` +
    (registration.registrationId === proof.registrationId && registration.generation === proof.generation
      ? ' with another session'
      : '')
  );
}

/** The owner's facts a suspend step judges: read through `q` (the caller's transaction). */
export interface SuspendOwnerFacts {
  /** The Environment's current lease (any current state), or null. */
  lease: LeaseRow | null;
  /** The volume row, or null when no such volume exists. */
  volume: VolumeRow | null;
  /** The storage binding pinned by the volume's first verified admission, or null before it. */
  storage: StorageBinding | null;
}

export async function readSuspendOwnerFacts(
  q: Queryable,
  environmentId: string,
  volumeId: string,
): Promise<SuspendOwnerFacts> {
  const lease = await readCurrentLease(q, environmentId);
  const volume = await readVolume(q, volumeId);
  const storage = await readStorageBinding(q, volumeId);
  return { lease, volume, storage };
}
