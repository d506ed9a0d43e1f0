// The WorkspaceStorage contract against PVC + PV readback through client-node on the fake Kubernetes
// API. PVCs and PVs are core kinds, but the fake loads the Agent Sandbox CRD schemas when it starts,
// so the suite skips where they are absent (test/support/crd-dir.ts). Storage is planted as the
// storage lifecycle leaves it (test/support/fake-cluster-harness.ts plantWorkspace); an outage is
// the API server answering 503.
import { randomBytes } from 'node:crypto';
import type { WorkspaceStorage } from '../../actors/ports.ts';
import { startFakeKubeApi } from '../fakes/kube-api/index.ts';
import { skipWithoutCrds } from '../support/crd-dir.ts';
import {
  adapterOn,
  NAMESPACE,
  plantWorkspace,
  storageOn,
  workspacePvObject,
} from '../support/fake-cluster-harness.ts';
import { newOwner } from './contract-subject.ts';
import { defineWorkspaceStorageContract } from './workspace-storage-cases.ts';

defineWorkspaceStorageContract(
  'Kubernetes PVC and PV on the fake API',
  async () => {
    const fake = await startFakeKubeApi({ namespace: NAMESPACE, controller: { paused: true } });
    // Checks the fit with the port here, as cli/compose.ts does.
    const storage: WorkspaceStorage = storageOn(fake);
    const pvcOf = (volumeId: string) => ({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      namespace: NAMESPACE,
      name: volumeId.replaceAll('_', '-'),
    });
    const pvOf = (volumeId: string) => ({
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      name: `pv-${volumeId.replaceAll('_', '-')}`,
    });

    const volume = (plant: boolean) => {
      const owner = newOwner();
      const request = {
        owner,
        workspace: {
          volumeId: `vol_${randomBytes(16).toString('hex')}`,
          resourceGeneration: 1,
          dataGeneration: 1,
        },
      };
      if (plant) plantWorkspace(fake, request);
      return Promise.resolve({
        tenantId: owner.tenantId,
        projectId: owner.projectId,
        environmentId: owner.environmentId,
        volumeId: request.workspace.volumeId,
        resourceGeneration: request.workspace.resourceGeneration,
        dataGeneration: request.workspace.dataGeneration,
      });
    };

    return {
      storage,
      // What a lease admitted by the adapter on this cluster records.
      lease: { providerOptions: adapterOn(fake).optionsSnapshot() },
      newVolume: () => volume(true),
      volumeWithoutStorage: () => volume(false),
      replacePvc: (v) => {
        const ref = pvcOf(v.volumeId);
        const old = fake.objects.get(ref);
        if (old === undefined) throw new Error('no PVC to replace');
        fake.objects.remove(ref);
        // Server-set fields go, so the new object gets its own UID.
        const metadata: Partial<typeof old.metadata> & { name: string } = { ...old.metadata };
        delete metadata.uid;
        delete metadata.resourceVersion;
        delete metadata.creationTimestamp;
        fake.objects.put({ ...old, metadata });
        return Promise.resolve();
      },
      replacePv: (v) => {
        const ref = pvOf(v.volumeId);
        const old = fake.objects.get(ref);
        if (old === undefined) throw new Error('no PV to replace');
        fake.objects.remove(ref);
        fake.objects.put({ ...old, metadata: { name: old.metadata.name } });
        return Promise.resolve();
      },
      rebindPv: (v) => {
        const pvc = fake.objects.get(pvcOf(v.volumeId));
        if (pvc === undefined) throw new Error('no PVC to rebind');
        fake.objects.remove(pvOf(v.volumeId));
        const other = workspacePvObject(pvc);
        const name = `pv-other-${randomBytes(4).toString('hex')}`;
        fake.objects.put({ ...other, metadata: { name } });
        fake.objects.mutate(pvcOf(v.volumeId), (claim) => {
          claim.spec = { ...claim.spec, volumeName: name };
        });
        return Promise.resolve();
      },
      respec: (v) => {
        fake.objects.mutate(pvcOf(v.volumeId), (pvc) => {
          pvc.spec = { ...pvc.spec, resources: { requests: { storage: '16Gi' } } };
        });
        return Promise.resolve();
      },
      remount: (v, mountOptions) => {
        fake.objects.mutate(pvOf(v.volumeId), (pv) => {
          pv.spec = { ...pv.spec, mountOptions };
        });
        return Promise.resolve();
      },
      annotate: (v, values) => {
        fake.objects.mutate(pvcOf(v.volumeId), (pvc) => {
          const a = (pvc.metadata.annotations ??= {});
          if (values.environmentId !== undefined) a['sandlot.dev/environment-id'] = values.environmentId;
          if (values.resourceGeneration !== undefined)
            a['sandlot.dev/volume-resource-generation'] = values.resourceGeneration;
          if (values.dataGeneration !== undefined)
            a['sandlot.dev/volume-data-generation'] = values.dataGeneration;
        });
        return Promise.resolve();
      },
      claimPvBy: (v, claim) => {
        fake.objects.mutate(pvOf(v.volumeId), (pv) => {
          const ref = (pv.spec?.['claimRef'] ?? {}) as Record<string, unknown>;
          pv.spec = { ...pv.spec, claimRef: { ...ref, ...claim } };
        });
        return Promise.resolve();
      },
      unbind: (v) => {
        fake.objects.mutate(pvcOf(v.volumeId), (pvc) => {
          const spec = { ...pvc.spec };
          delete spec['volumeName'];
          pvc.spec = spec;
          pvc.status = { phase: 'Pending' };
        });
        return Promise.resolve();
      },
      select: (v, selection) => {
        fake.objects.mutate(pvcOf(v.volumeId), (pvc) => {
          const a = (pvc.metadata.annotations ??= {});
          a['sandlot.dev/storage-provider'] = selection.providerId;
          a['sandlot.dev/storage-options-revision'] = selection.optionsRevision;
        });
        return Promise.resolve();
      },
      unavailable: () => {
        fake.faults.failNext({ verb: 'get', resource: 'persistentvolumeclaims' }, 503);
        return Promise.resolve(storage);
      },
      close: () => fake.close(),
    };
  },
  { skip: skipWithoutCrds },
);
