// The Workspace storage check made before a lease is reserved: the storage evidence the
// WorkspaceStorage port reads back (actors/ports.ts) against the Workspace record. Pure: the rule,
// apart from the reads, so both implementations and the admission path share one judgement.
//
// Order matters only for which failure names the problem: every failing check is listed.
import type { StorageBinding } from '../store/workspace-bindings.ts';
import { ActorError } from './errors.ts';
import type { StorageEvidence, StorageSelection, WorkspaceVolumeRef } from './ports.ts';

export const storageCheckCodes = [
  'workspace-selection-changed',
  'workspace-pvc-missing',
  'workspace-pvc-replaced',
  'workspace-storage-mismatch',
  'workspace-pvc-deleting',
  'workspace-pvc-unbound',
  'workspace-pv-claim-mismatch',
] as const;
export type StorageCheckCode = (typeof storageCheckCodes)[number];

export interface StorageCheckFailure {
  code: StorageCheckCode;
  message: string;
}

/** What the Workspace record says storage must hold. */
export interface StorageExpectation {
  volume: WorkspaceVolumeRef;
  /** The storage configured now. */
  selection: StorageSelection;
  /** The binding pinned by the volume's first verified admission; null before it. */
  binding: StorageBinding | null;
}

const sameSelection = (a: StorageSelection | null, b: StorageSelection) =>
  a !== null && a.providerId === b.providerId && a.optionsRevision === b.optionsRevision;

const show = (s: StorageSelection | null) => (s === null ? 'none' : `${s.providerId}@${s.optionsRevision}`);

/** Every check the evidence fails, in the order above; empty when storage holds what is expected. */
export function checkStorageEvidence(
  expected: StorageExpectation,
  evidence: StorageEvidence,
): StorageCheckFailure[] {
  const failures: StorageCheckFailure[] = [];
  const fail = (code: StorageCheckCode, message: string) => failures.push({ code, message });
  const { volume, binding } = expected;
  const pinned = binding?.selection ?? expected.selection;

  if (!sameSelection(pinned, expected.selection)) {
    fail(
      'workspace-selection-changed',
      `volume ${volume.volumeId} is pinned to storage ${show(pinned)}, but ${show(expected.selection)} is configured`,
    );
  } else if (!sameSelection(evidence.selection, pinned)) {
    fail(
      'workspace-selection-changed',
      `the storage of volume ${volume.volumeId} was made under ${show(evidence.selection)}, not ${show(pinned)}`,
    );
  }

  const pvc = evidence.pvc;
  if (pvc === null) {
    fail('workspace-pvc-missing', `the PersistentVolumeClaim of volume ${volume.volumeId} does not exist`);
    return failures;
  }
  const name = `PersistentVolumeClaim ${pvc.namespace}/${pvc.name}`;
  if (binding !== null && (binding.pvcNamespace !== pvc.namespace || binding.pvcName !== pvc.name)) {
    fail(
      'workspace-storage-mismatch',
      `volume ${volume.volumeId} is bound to ${binding.pvcNamespace}/${binding.pvcName}, storage answered ${name}`,
    );
  } else if (binding !== null && binding.pvcUid !== pvc.uid) {
    fail('workspace-pvc-replaced', `${name} has UID ${pvc.uid}, not the pinned ${binding.pvcUid}`);
  }

  const annotations = [
    ['environment', pvc.environmentId, volume.environmentId],
    ['resource generation', pvc.resourceGeneration, String(volume.resourceGeneration)],
    ['data generation', pvc.dataGeneration, String(volume.dataGeneration)],
  ] as const;
  const wrong = annotations.filter(([, actual, wanted]) => actual !== wanted);
  if (wrong.length > 0) {
    const said = wrong.map(([what, actual, wanted]) => `${what} ${actual ?? '(none)'}, not ${wanted}`);
    fail('workspace-storage-mismatch', `${name} is annotated with ${said.join('; ')}`);
  }

  if (pvc.deleting) fail('workspace-pvc-deleting', `${name} is being deleted`);
  if (pvc.phase !== 'Bound' || pvc.volumeName === null) {
    fail('workspace-pvc-unbound', `${name} is ${pvc.phase ?? 'in no phase'}, not Bound to a volume`);
    return failures;
  }
  const pv = evidence.pv;
  if (pv === null) {
    fail('workspace-pvc-unbound', `${name} names PersistentVolume ${pvc.volumeName}, which does not exist`);
    return failures;
  }
  const ref = pv.claimRef;
  if (ref?.namespace !== pvc.namespace || ref.name !== pvc.name || ref.uid !== pvc.uid) {
    const said =
      ref === null ? 'no claim' : `${ref.namespace ?? '?'}/${ref.name ?? '?'} (UID ${ref.uid ?? '?'})`;
    fail(
      'workspace-pv-claim-mismatch',
      `PersistentVolume ${pv.name} is claimed by ${said}, not ${pvc.namespace}/${pvc.name} (UID ${pvc.uid})`,
    );
  }
  return failures;
}

/** Storage does not hold what the Workspace record says: nothing was reserved or dispatched. */
export class WorkspaceStorageRefusedError extends ActorError {
  override readonly status = 409;
  override readonly title = 'Workspace storage refused';

  constructor(
    readonly volumeId: string,
    readonly failures: readonly StorageCheckFailure[],
  ) {
    const first = failures[0];
    if (first === undefined) throw new TypeError('a storage refusal needs at least one failed check');
    super(first.code, `workspace volume ${volumeId}: ${failures.map((f) => f.message).join('; ')}`);
  }

  override get extensions() {
    return { volumeId: this.volumeId, checks: this.failures.map((f) => ({ ...f })) };
  }
}

/** Storage could not be read (the port threw): no verdict either way, so nothing is reserved. */
export class WorkspaceStorageUnavailableError extends ActorError {
  override readonly status = 503;
  override readonly title = 'Workspace storage unavailable';

  constructor(volumeId: string, cause: unknown) {
    const code =
      typeof cause === 'object' && cause !== null && typeof (cause as { code?: unknown }).code === 'string'
        ? ` (${(cause as { code: string }).code})`
        : '';
    super(
      'workspace-storage-unavailable',
      `the storage of workspace volume ${volumeId} cannot be checked now: it did not answer${code}`,
    );
    this.cause = cause;
  }
}
