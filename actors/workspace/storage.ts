// The Workspace storage check made before a lease is reserved: the storage evidence the
// WorkspaceStorage port reads back (actors/ports.ts) against the Workspace record. Pure: the rule,
// apart from the reads, so both implementations and the admission path share one judgement.
//
// Order matters only for which failure names the problem: every failing check is listed, except
// after a cluster mismatch, where nothing was read to judge.
import { problemClass } from '../../lib/errors.ts';
import type { PinnedVolume, StorageBinding } from '../../store/workspace-bindings.ts';
import { ActorError } from '../errors.ts';
import type { StorageClaimRef, StorageEvidence, StorageSelection, WorkspaceVolumeRef } from '../ports.ts';

export const storageCheckCodes = [
  'workspace-cluster-mismatch',
  'workspace-selection-changed',
  'workspace-pvc-missing',
  'workspace-pvc-replaced',
  'workspace-storage-mismatch',
  'workspace-pvc-deleting',
  'workspace-pvc-unbound',
  'workspace-pv-replaced',
  'workspace-pv-claim-mismatch',
  'workspace-claim-spec-changed',
  'workspace-mount-options-changed',
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
  /**
   * The data generations this volume's Verified flushes started from (each moved it to the next).
   * Storage's owner annotation is written when the claim is made and a flush does not rewrite it, so
   * an older annotated data generation passes only when these chain it exactly to the current one.
   * None when absent.
   */
  flushedFrom?: readonly number[];
}

const sameSelection = (a: StorageSelection | null, b: StorageSelection) =>
  a !== null && a.providerId === b.providerId && a.optionsRevision === b.optionsRevision;

/** A cluster pin as messages name it: enough to tell two apart, short enough to read. */
const short = (pin: string) => `${pin.slice(0, 12)}…`;

const show = (s: StorageSelection | null) => (s === null ? 'none' : `${s.providerId}@${s.optionsRevision}`);

/**
 * Why the annotated data generation is not the volume's `current` one, or null when it is, or when
 * the volume's own Verified flushes form the exact chain annotated → annotated + 1 → … → current:
 * the only way the record may move past what storage recorded (the spec's "changed Workspace
 * counters only with the exact saved suspend flush").
 */
function dataGenerationDiffers(
  annotated: string | null,
  current: number,
  flushedFrom: readonly number[],
): string | null {
  const wanted = String(current);
  if (annotated === wanted) return null;
  const said = `data generation ${annotated ?? '(none)'}, not ${wanted}`;
  const from = annotated !== null && /^(0|[1-9][0-9]*)$/.test(annotated) ? Number(annotated) : NaN;
  if (!Number.isSafeInteger(from)) return said;
  if (from > current) return `${said} (ahead of the volume)`;
  const flushed = new Set(flushedFrom);
  for (let step = from; step < current; step += 1) {
    if (!flushed.has(step)) return `${said} (no verified flush of the volume from ${step} to ${step + 1})`;
  }
  return null;
}

/** Every check the evidence fails, in the order above; empty when storage holds what is expected. */
export function checkStorageEvidence(
  expected: StorageExpectation,
  evidence: StorageEvidence,
): StorageCheckFailure[] {
  const failures: StorageCheckFailure[] = [];
  const fail = (code: StorageCheckCode, message: string) => failures.push({ code, message });
  const { volume, binding } = expected;
  const { cluster } = evidence;
  // Facts from another cluster than the lease's say nothing of its storage: none was read.
  if (cluster !== null && cluster.live !== cluster.recorded) {
    fail(
      'workspace-cluster-mismatch',
      `the storage of volume ${volume.volumeId} would be read from cluster ${short(cluster.live)}, ` +
        `but the lease's objects live in cluster ${short(cluster.recorded)}; nothing was read from it`,
    );
    return failures;
  }
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
  const pinnedSpec = binding?.claimSpecSha256 ?? null;
  if (pinnedSpec !== null && pinnedSpec !== pvc.claimSpecSha256) {
    fail(
      'workspace-claim-spec-changed',
      `${name}'s specification hashes to ${short(pvc.claimSpecSha256)}, not the pinned ${short(pinnedSpec)}`,
    );
  }

  const annotations = [
    ['environment', pvc.environmentId, volume.environmentId],
    ['resource generation', pvc.resourceGeneration, String(volume.resourceGeneration)],
  ] as const;
  const said = annotations
    .filter(([, actual, wanted]) => actual !== wanted)
    .map(([what, actual, wanted]) => `${what} ${actual ?? '(none)'}, not ${wanted}`);
  const data = dataGenerationDiffers(pvc.dataGeneration, volume.dataGeneration, expected.flushedFrom ?? []);
  if (data !== null) said.push(data);
  if (said.length > 0) fail('workspace-storage-mismatch', `${name} is annotated with ${said.join('; ')}`);

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
  const pinnedPv = binding?.pv ?? null;
  if (pinnedPv !== null && (pv.name !== pinnedPv.name || pv.uid !== pinnedPv.uid)) {
    fail(
      'workspace-pv-replaced',
      `${name} is bound to PersistentVolume ${pv.name} (UID ${pv.uid}), not the pinned ${pinnedPv.name} (UID ${pinnedPv.uid})`,
    );
  }
  // Claimed by this PVC, and (once pinned) by the claim the pinned PV named: one failure either way.
  const ref = pv.claimRef;
  const claimed = (claim: StorageClaimRef) =>
    `PersistentVolume ${pv.name} is claimed by ${showClaim(ref)}, not ${showClaim(claim)}`;
  if (!sameClaim(ref, pvc)) {
    fail('workspace-pv-claim-mismatch', claimed(pvc));
  } else if (pinnedPv !== null && !sameClaim(ref, pinnedPv.claimRef)) {
    fail('workspace-pv-claim-mismatch', `${claimed(pinnedPv.claimRef)}, the pinned claim`);
  }
  const approved = binding?.mountOptions ?? null;
  if (approved !== null && !sameList(approved, pv.mountOptions)) {
    fail(
      'workspace-mount-options-changed',
      `PersistentVolume ${pv.name} mounts with [${pv.mountOptions.join(', ')}], not the approved [${approved.join(', ')}]`,
    );
  }
  return failures;
}

const sameList = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && a.every((item, i) => item === b[i]);

const sameClaim = (ref: StorageClaimRef | null, claim: StorageClaimRef) =>
  ref !== null && ref.namespace === claim.namespace && ref.name === claim.name && ref.uid === claim.uid;

const showClaim = (ref: StorageClaimRef | null) =>
  ref === null ? 'no claim' : `${ref.namespace ?? '?'}/${ref.name ?? '?'} (UID ${ref.uid ?? '?'})`;

/**
 * The binding a verified admission pins: the selection, PVC and bound PV it verified, the PV's
 * claimRef as it named that PVC. Null when the evidence holds nothing to pin (it never passes then).
 */
export function bindingOf(evidence: StorageEvidence): VerifiedBinding | null {
  const { selection, pvc, pv } = evidence;
  if (selection === null || pvc === null || pv === null) return null;
  const claimRef = { namespace: pvc.namespace, name: pvc.name, uid: pvc.uid };
  return {
    selection,
    pvcNamespace: pvc.namespace,
    pvcName: pvc.name,
    pvcUid: pvc.uid,
    pv: { name: pv.name, uid: pv.uid, claimRef },
    claimSpecSha256: pvc.claimSpecSha256,
    mountOptions: [...pv.mountOptions],
  };
}

/** Everything a binding pins, as one verified check found it. */
export type VerifiedBinding = StorageBinding & {
  pv: PinnedVolume;
  claimSpecSha256: string;
  mountOptions: string[];
};

/** Whether `binding` lacks a part a verified check would pin now (pinned before that part was). */
export const partlyPinned = (binding: StorageBinding | null): boolean =>
  binding === null ||
  binding.pv === null ||
  binding.claimSpecSha256 === null ||
  binding.mountOptions === null;

/** Storage does not hold what the Workspace record says: nothing was reserved or dispatched. */
export class WorkspaceStorageRefusedError extends problemClass(
  { status: 409, title: 'Workspace storage refused' },
  ActorError,
) {
  constructor(
    readonly volumeId: string,
    readonly failures: readonly StorageCheckFailure[],
  ) {
    const first = failures[0];
    if (first === undefined) throw new TypeError('a storage refusal needs at least one failed check');
    super(`workspace volume ${volumeId}: ${failures.map((f) => f.message).join('; ')}`, { code: first.code });
  }

  override get extensions() {
    return { volumeId: this.volumeId, checks: this.failures.map((f) => ({ ...f })) };
  }
}

/** Storage could not be read (the port threw): no verdict either way, so nothing is reserved. */
export class WorkspaceStorageUnavailableError extends problemClass(
  { code: 'workspace-storage-unavailable', status: 503, title: 'Workspace storage unavailable' },
  ActorError,
) {
  constructor(volumeId: string, cause: unknown) {
    const code =
      typeof cause === 'object' && cause !== null && typeof (cause as { code?: unknown }).code === 'string'
        ? ` (${(cause as { code: string }).code})`
        : '';
    super(`the storage of workspace volume ${volumeId} cannot be checked now: it did not answer${code}`);
    this.cause = cause;
  }
}
