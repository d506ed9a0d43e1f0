import { describe, expect, it } from 'vitest';
import { classifyProviderFailure } from '../errors.ts';
import { newOwner } from '../../test/contract/contract-subject.ts';
import { isDnsLabel, isLabelValue, objectNames, parseResourceId, pvcNameOf, resourceIdOf } from './names.ts';
import {
  assertOwned,
  ownerAnnotations,
  ownerLabels,
  ownerOf,
  ownerSelector,
  validateOwner,
} from './owner-labels.ts';

// The longest operation ID Sandlot makes: `op_` + 32 base32 characters (actors/environment-id.ts).
const realOperationId = `op_${'a2'.repeat(16)}`;

const failureKind = (run: () => unknown) => {
  try {
    run();
  } catch (error) {
    return classifyProviderFailure(error);
  }
  return 'none';
};

describe('object names', () => {
  it('derive from the operation alone, the same on every call', () => {
    expect(objectNames(realOperationId)).toEqual(objectNames(realOperationId));
    expect(objectNames(realOperationId).claim).not.toBe(objectNames(`${realOperationId}x`).claim);
  });

  it.each([realOperationId, 'op-1', 'x'.repeat(63)])('are DNS labels within 63 characters (%s)', (id) => {
    const names = objectNames(id);
    for (const name of [names.claim, names.template, names.pool]) {
      expect(isDnsLabel(name), name).toBe(true);
    }
    expect(names.template).toBe(`${names.claim}-tpl`);
    expect(names.pool).toBe(`${names.claim}-pool`);
  });

  it('map a Workspace volume ID to its PVC name and refuse anything else', () => {
    expect(pvcNameOf('vol_0123456789abcdef0123456789abcdef')).toBe('vol-0123456789abcdef0123456789abcdef');
    expect(pvcNameOf('vol-env-abc')).toBe('vol-env-abc');
    for (const bad of ['volume', 'vol_', 'vol_ABC', `vol_${'a'.repeat(61)}`, 'vol_a/b', 'vol_a-']) {
      expect(pvcNameOf(bad), bad).toBeUndefined();
    }
  });

  it('round-trip a resource ID of claim name and UID, refusing malformed ones', () => {
    const id = resourceIdOf('sl-abc', '3f1c-22aa');
    expect(parseResourceId(id)).toEqual({ name: 'sl-abc', uid: '3f1c-22aa' });
    for (const bad of ['sl-abc', 'sl-abc/', 'SL/uid', 'a/b/c', '/uid']) {
      expect(parseResourceId(bad), bad).toBeUndefined();
    }
  });
});

describe('ownership labels', () => {
  it('fit Kubernetes label values for the longest real operation ID', () => {
    const labels = ownerLabels(newOwner({ operationId: realOperationId, providerFence: 2 ** 40 }));
    for (const [key, value] of Object.entries(labels)) {
      expect(isLabelValue(value), `${key}=${value}`).toBe(true);
      expect(value.length).toBeLessThanOrEqual(63);
    }
  });

  it('refuse, definitively, an owner binding whose values cannot be labels', () => {
    expect(failureKind(() => validateOwner(newOwner({ operationId: 'o'.repeat(64) })))).toBe('definitive');
    expect(failureKind(() => validateOwner(newOwner({ operationId: 'op with space' })))).toBe('definitive');
    expect(failureKind(() => validateOwner(newOwner({ ownerHash: 'ABC' })))).toBe('definitive');
    expect(failureKind(() => validateOwner(newOwner({ providerFence: 0 })))).toBe('definitive');
    expect(failureKind(() => validateOwner(newOwner()))).toBe('none');
  });

  it('round-trip the whole binding through labels and annotations', () => {
    const owner = newOwner({ lifecycleGeneration: 3, resourceGeneration: 7, providerFence: 9 });
    const object = { metadata: { labels: ownerLabels(owner), annotations: ownerAnnotations(owner) } };
    expect(ownerOf(object)).toEqual(owner);
  });

  it('treat any differing field, a missing label or another UID as an ownership error', () => {
    const owner = newOwner();
    const object = {
      metadata: { uid: 'u-1', labels: ownerLabels(owner), annotations: ownerAnnotations(owner) },
    };
    expect(failureKind(() => assertOwned(object, owner, 'u-1'))).toBe('none');
    expect(failureKind(() => assertOwned(object, owner, 'u-2'))).toBe('ownership');
    expect(failureKind(() => assertOwned(object, { ...owner, providerFence: 2 }))).toBe('ownership');
    expect(failureKind(() => assertOwned(object, { ...owner, runId: 'other' }))).toBe('ownership');
    const unlabelled = { metadata: { labels: {}, annotations: ownerAnnotations(owner) } };
    expect(failureKind(() => assertOwned(unlabelled, owner))).toBe('ownership');
  });

  it('select by exact owner hash and fence, and the operation when given', () => {
    const owner = newOwner();
    expect(ownerSelector(owner)).toContain(`sandlot.dev/operation-id=${owner.operationId}`);
    expect(ownerSelector({ ownerHash: owner.ownerHash, providerFence: 4 })).toBe(
      `app.kubernetes.io/managed-by=sandlot,sandlot.dev/owner-hash=${owner.ownerHash},sandlot.dev/provider-fence=4`,
    );
  });
});
