// The pure Workspace storage check, table-driven, and the problems its refusals become. The contract
// suite (test/contract/workspace-storage-cases.ts) drives the same check through real storage.
import { describe, expect, it } from 'vitest';
import type { StorageEvidence } from '../../actors/ports.ts';
import {
  checkStorageEvidence,
  WorkspaceStorageRefusedError,
  WorkspaceStorageUnavailableError,
  type StorageExpectation,
} from '../../actors/workspace/storage.ts';
import { problemBody } from '../../http/problems.ts';
import { ERROR_CODE_PATTERN } from '../../lib/errors.ts';

const selection = { providerId: 'azure-files-csi', optionsRevision: '1' };
const volume = {
  tenantId: 'acme',
  projectId: 'checkout',
  environmentId: 'env_a',
  volumeId: 'vol_a',
  resourceGeneration: 1,
  dataGeneration: 3,
};
const binding = {
  selection,
  pvcNamespace: 'ns',
  pvcName: 'vol-a',
  pvcUid: 'pvc-1',
  pv: { name: 'pv-a', uid: 'pv-1', claimRef: { namespace: 'ns', name: 'vol-a', uid: 'pvc-1' } },
  claimSpecSha256: 'c'.repeat(64),
  mountOptions: ['dir_mode=0700', 'uid=1000'],
};
const expected: StorageExpectation = { volume, selection, binding };
const good: StorageEvidence = {
  cluster: null,
  selection,
  pvc: {
    namespace: 'ns',
    name: 'vol-a',
    uid: 'pvc-1',
    environmentId: 'env_a',
    resourceGeneration: '1',
    dataGeneration: '3',
    phase: 'Bound',
    volumeName: 'pv-a',
    deleting: false,
    claimSpecSha256: 'c'.repeat(64),
  },
  pv: {
    name: 'pv-a',
    uid: 'pv-1',
    claimRef: { namespace: 'ns', name: 'vol-a', uid: 'pvc-1' },
    mountOptions: ['dir_mode=0700', 'uid=1000'],
  },
};
const pvc = good.pvc!;

const cases: [string, StorageExpectation, StorageEvidence, string[]][] = [
  ['1. exactly the pinned storage passes', expected, good, []],
  ['2. before any pin, matching storage passes', { ...expected, binding: null }, good, []],
  [
    '3. storage configured anew refuses a volume pinned to the old selection',
    { ...expected, selection: { ...selection, optionsRevision: '2' } },
    good,
    ['workspace-selection-changed'],
  ],
  [
    '4. a PVC made under no selection is refused',
    expected,
    { ...good, selection: null },
    ['workspace-selection-changed'],
  ],
  [
    '5. no PVC',
    expected,
    { cluster: null, selection: null, pvc: null, pv: null },
    ['workspace-selection-changed', 'workspace-pvc-missing'],
  ],
  [
    '6. a new UID under the pinned name',
    expected,
    { ...good, pvc: { ...pvc, uid: 'pvc-2' } },
    ['workspace-pvc-replaced', 'workspace-pv-claim-mismatch'],
  ],
  [
    '7. a PVC in another namespace than pinned',
    expected,
    { ...good, pvc: { ...pvc, namespace: 'other' } },
    ['workspace-storage-mismatch', 'workspace-pv-claim-mismatch'],
  ],
  [
    '8. annotations of another data generation',
    expected,
    { ...good, pvc: { ...pvc, dataGeneration: '2' } },
    ['workspace-storage-mismatch'],
  ],
  [
    '9. no owner annotation',
    expected,
    { ...good, pvc: { ...pvc, environmentId: null } },
    ['workspace-storage-mismatch'],
  ],
  ['10. being deleted', expected, { ...good, pvc: { ...pvc, deleting: true } }, ['workspace-pvc-deleting']],
  [
    '11. Pending',
    expected,
    { ...good, pvc: { ...pvc, phase: 'Pending', volumeName: null } },
    ['workspace-pvc-unbound'],
  ],
  ['12. the bound PV is gone', expected, { ...good, pv: null }, ['workspace-pvc-unbound']],
  [
    '13. the PV has no claimRef',
    expected,
    { ...good, pv: { ...good.pv!, claimRef: null } },
    ['workspace-pv-claim-mismatch'],
  ],
  [
    '14. the PV claimed by another claim name',
    expected,
    {
      ...good,
      pv: { ...good.pv!, claimRef: { namespace: 'ns', name: 'vol-b', uid: 'pvc-1' } },
    },
    ['workspace-pv-claim-mismatch'],
  ],
  [
    '14a. the PV replaced under its name (a new UID), still claiming the PVC',
    expected,
    { ...good, pv: { ...good.pv!, uid: 'pv-2' } },
    ['workspace-pv-replaced'],
  ],
  [
    '14b. the PVC bound to another PV that claims it',
    expected,
    { ...good, pvc: { ...pvc, volumeName: 'pv-b' }, pv: { ...good.pv!, name: 'pv-b', uid: 'pv-2' } },
    ['workspace-pv-replaced'],
  ],
  [
    '14c. a binding pinned before PVs were does not refuse another PV',
    { ...expected, binding: { ...binding, pv: null, claimSpecSha256: null, mountOptions: null } },
    { ...good, pv: { ...good.pv!, uid: 'pv-2' } },
    [],
  ],
  [
    '14d. the pinned PV claimed by a replacement of the pinned PVC',
    expected,
    {
      ...good,
      pvc: { ...pvc, uid: 'pvc-2' },
      pv: { ...good.pv!, claimRef: { namespace: 'ns', name: 'vol-a', uid: 'pvc-2' } },
    },
    ['workspace-pvc-replaced', 'workspace-pv-claim-mismatch'],
  ],
  [
    '14g. a claim whose specification changed under the pinned PVC (resized, another class)',
    expected,
    { ...good, pvc: { ...pvc, claimSpecSha256: 'd'.repeat(64) } },
    ['workspace-claim-spec-changed'],
  ],
  [
    '14h. the PV mounted with other options than approved, or in another order',
    expected,
    { ...good, pv: { ...good.pv!, mountOptions: ['uid=1000', 'dir_mode=0700'] } },
    ['workspace-mount-options-changed'],
  ],
  [
    '14i. a binding pinned before claim specifications were judges neither',
    { ...expected, binding: { ...binding, claimSpecSha256: null, mountOptions: null } },
    { ...good, pvc: { ...pvc, claimSpecSha256: 'd'.repeat(64) }, pv: { ...good.pv!, mountOptions: [] } },
    [],
  ],
  [
    '14e. read from the cluster the lease recorded',
    expected,
    { ...good, cluster: { recorded: 'a'.repeat(64), live: 'a'.repeat(64) } },
    [],
  ],
  [
    '14f. another cluster than the lease recorded: nothing read, nothing else judged',
    expected,
    { cluster: { recorded: 'a'.repeat(64), live: 'b'.repeat(64) }, selection: null, pvc: null, pv: null },
    ['workspace-cluster-mismatch'],
  ],
  // The volume is at data generation 3; `flushedFrom` lists where its Verified flushes started.
  [
    '15. annotations at the current data generation pass, flushes or not',
    { ...expected, flushedFrom: [1, 2] },
    good,
    [],
  ],
  [
    '16. one behind, with a verified flush from it, passes',
    { ...expected, flushedFrom: [2] },
    { ...good, pvc: { ...pvc, dataGeneration: '2' } },
    [],
  ],
  [
    '17. two behind, with a complete chain of verified flushes, passes',
    { ...expected, flushedFrom: [1, 2] },
    { ...good, pvc: { ...pvc, dataGeneration: '1' } },
    [],
  ],
  [
    '18. a gap in the chain is refused',
    { ...expected, flushedFrom: [0, 2] },
    { ...good, pvc: { ...pvc, dataGeneration: '0' } },
    ['workspace-storage-mismatch'],
  ],
  [
    '19. annotations ahead of the volume are refused, whatever was flushed',
    { ...expected, flushedFrom: [3] },
    { ...good, pvc: { ...pvc, dataGeneration: '4' } },
    ['workspace-storage-mismatch'],
  ],
  [
    '20. a flush from the annotated generation but none from the next is refused',
    { ...expected, flushedFrom: [1] },
    { ...good, pvc: { ...pvc, dataGeneration: '1' } },
    ['workspace-storage-mismatch'],
  ],
  [
    '21. an annotation that is not a canonical count is refused, even if it reads as one',
    { ...expected, flushedFrom: [2] },
    { ...good, pvc: { ...pvc, dataGeneration: '02' } },
    ['workspace-storage-mismatch'],
  ],
  [
    '22. a verified chain excuses only the data generation, never another environment',
    { ...expected, flushedFrom: [2] },
    { ...good, pvc: { ...pvc, dataGeneration: '2', environmentId: 'env_b' } },
    ['workspace-storage-mismatch'],
  ],
];

describe('checkStorageEvidence', () => {
  it.each(cases)('%s', (_name, expectation, evidence, codes) => {
    expect(checkStorageEvidence(expectation, evidence).map((f) => f.code)).toEqual(codes);
  });
});

describe('data generations a verified flush changed', () => {
  const annotated = (dataGeneration: string) => ({ ...good, pvc: { ...pvc, dataGeneration } });
  const messages = (flushedFrom: number[], dataGeneration: string) =>
    checkStorageEvidence({ ...expected, flushedFrom }, annotated(dataGeneration)).map((f) => f.message);

  it('names the missing step of the chain, or that storage is ahead', () => {
    expect(messages([0, 2], '0')).toEqual([
      'PersistentVolumeClaim ns/vol-a is annotated with data generation 0, not 3 (no verified flush of the volume from 1 to 2)',
    ]);
    expect(messages([1], '1')).toEqual([
      'PersistentVolumeClaim ns/vol-a is annotated with data generation 1, not 3 (no verified flush of the volume from 2 to 3)',
    ]);
    expect(messages([3], '4')).toEqual([
      'PersistentVolumeClaim ns/vol-a is annotated with data generation 4, not 3 (ahead of the volume)',
    ]);
  });

  it('lists the data generation after the other annotations it differs in', () => {
    const failures = checkStorageEvidence(
      { ...expected, flushedFrom: [] },
      { ...good, pvc: { ...pvc, resourceGeneration: '2', dataGeneration: '2' } },
    );
    expect(failures).toEqual([
      {
        code: 'workspace-storage-mismatch',
        message:
          'PersistentVolumeClaim ns/vol-a is annotated with resource generation 2, not 1; data generation 2, not 3 (no verified flush of the volume from 2 to 3)',
      },
    ]);
  });
});

describe('storage refusals as problems', () => {
  it('a pinned claim names what it expected', () => {
    const evidence = {
      ...good,
      pvc: { ...pvc, uid: 'pvc-2' },
      pv: { ...good.pv!, claimRef: { namespace: 'ns', name: 'vol-a', uid: 'pvc-2' } },
    };
    expect(checkStorageEvidence(expected, evidence).map((f) => f.message)).toEqual([
      'PersistentVolumeClaim ns/vol-a has UID pvc-2, not the pinned pvc-1',
      'PersistentVolume pv-a is claimed by ns/vol-a (UID pvc-2), not ns/vol-a (UID pvc-1), the pinned claim',
    ]);
    expect(
      checkStorageEvidence(expected, { ...good, pv: { ...good.pv!, uid: 'pv-2' } }).map((f) => f.message),
    ).toEqual([
      'PersistentVolumeClaim ns/vol-a is bound to PersistentVolume pv-a (UID pv-2), not the pinned pv-a (UID pv-1)',
    ]);
  });

  it('a refusal is a 409 typed by its first failing check, listing every check', () => {
    const failures = checkStorageEvidence(expected, { ...good, pvc: { ...pvc, uid: 'pvc-2' } });
    const error = new WorkspaceStorageRefusedError('vol_a', failures);
    expect(error.name).toBe('WorkspaceStorageRefusedError');
    expect(error.code).toMatch(ERROR_CODE_PATTERN);
    expect(problemBody(error)).toMatchObject({
      type: 'urn:sandlot:problem:workspace-pvc-replaced',
      status: 409,
      volumeId: 'vol_a',
      checks: [
        {
          code: 'workspace-pvc-replaced',
          message: 'PersistentVolumeClaim ns/vol-a has UID pvc-2, not the pinned pvc-1',
        },
        {
          code: 'workspace-pv-claim-mismatch',
          message: expect.stringContaining('PersistentVolume pv-a') as string,
        },
      ],
    });
  });

  it('an outage is a 503 that names the failing code, never the message', () => {
    const error = new WorkspaceStorageUnavailableError(
      'vol_a',
      Object.assign(new Error('secret-ish'), { code: 'timeout' }),
    );
    const body = problemBody(error);
    expect(body).toMatchObject({ type: 'urn:sandlot:problem:workspace-storage-unavailable', status: 503 });
    expect(body.detail).toBe(
      'the storage of workspace volume vol_a cannot be checked now: it did not answer (timeout)',
    );
  });
});
