// PersistentVolumes on the fake, through client-node: cluster-scoped paths, and the core schema
// facts persistent-volumes.ts checks refused as a 422 naming each field.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { skipWithoutCrds } from '../../support/crd-dir.ts';
import { failureOf, kubeClients, type KubeClients } from './clients.ts';
import { startFakeKubeApi, type FakeKubeApi } from './index.ts';

let fake: FakeKubeApi;
let k: KubeClients;

beforeAll(async () => {
  fake = await startFakeKubeApi({ namespace: 'pv', controller: { paused: true } });
  k = kubeClients(fake.kubeconfig());
});
afterAll(() => fake.close());

const pv = (name: string, spec: Record<string, unknown>) => ({
  apiVersion: 'v1',
  kind: 'PersistentVolume',
  metadata: { name },
  spec,
});
const valid = {
  capacity: { storage: '8Gi' },
  accessModes: ['ReadWriteMany'],
  csi: { driver: 'file.csi.azure.com', volumeHandle: 'h' },
  claimRef: { namespace: 'pv', name: 'vol-a', uid: 'u-1' },
};

describe.skipIf(skipWithoutCrds)('PersistentVolumes', () => {
  it('are created, read and listed cluster-wide, with a server-set UID', async () => {
    const created = await k.core.createPersistentVolume({ body: pv('pv-a', valid) });
    expect(created.metadata?.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(created.metadata?.namespace).toBeUndefined();
    const read = await k.core.readPersistentVolume({ name: 'pv-a' });
    expect(read.spec?.claimRef).toMatchObject({ namespace: 'pv', name: 'vol-a', uid: 'u-1' });
    const list = await k.core.listPersistentVolume();
    expect(list.items.map((i) => i.metadata?.name)).toContain('pv-a');
    expect((await failureOf(k.core.readPersistentVolume({ name: 'pv-none' }))).code).toBe(404);
  });

  it.each([
    ['no capacity', { ...valid, capacity: undefined }, 'spec.capacity'],
    ['capacity beyond storage', { ...valid, capacity: { storage: '1Gi', cpu: '1' } }, 'spec.capacity'],
    ['no access mode', { ...valid, accessModes: [] }, 'spec.accessModes'],
    ['an unknown access mode', { ...valid, accessModes: ['ReadWriteSometimes'] }, 'spec.accessModes[0]'],
    ['no volume source', { ...valid, csi: undefined }, 'spec'],
    ['two volume sources', { ...valid, hostPath: { path: '/x' } }, 'spec'],
    [
      'an unknown reclaim policy',
      { ...valid, persistentVolumeReclaimPolicy: 'Keep' },
      'spec.persistentVolumeReclaimPolicy',
    ],
    [
      'a claimRef uid that is not a string',
      { ...valid, claimRef: { name: 'x', uid: 7 } },
      'spec.claimRef.uid',
    ],
  ])('refuses %s with 422 naming %s', async (_what, spec, field) => {
    const { code, status } = await failureOf(k.core.createPersistentVolume({ body: pv('pv-bad', spec) }));
    expect(code).toBe(422);
    expect(status.details?.causes?.map((c) => c.field)).toEqual([field]);
  });
});
