// KubernetesWorkspaceStorage as cli/compose.ts builds it (createAgentSandbox, from the settings and a
// kubeconfig file), against the fake Kubernetes API: what it compares that the contract suite
// (test/contract/workspace-storage-cases.ts) cannot, because the embedded storage has no settings.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WorkspaceVolumeRef } from '../../actors/ports.ts';
import { checkStorageEvidence } from '../../actors/workspace/storage.ts';
import { newOwner } from '../../test/contract/contract-subject.ts';
import { startFakeKubeApi, type FakeKubeApi } from '../../test/fakes/kube-api/index.ts';
import { createCertificateAuthority } from '../../test/fakes/kube-api/tls.ts';
import { P, validEnv } from '../../test/support/agent-sandbox-fixtures.ts';
import { skipWithoutCrds } from '../../test/support/crd-dir.ts';
import {
  caFileKubeconfig,
  NAMESPACE,
  workspacePvcObject,
  workspacePvObject,
} from '../../test/support/fake-cluster-harness.ts';
import { createAgentSandbox } from '../agent-sandbox/create-provider.ts';
import { STORAGE_ANNOTATIONS } from './kubernetes-storage.ts';

describe.skipIf(skipWithoutCrds)('KubernetesWorkspaceStorage from the settings', () => {
  let fake: FakeKubeApi;
  let dir: string;
  let env: Record<string, string | undefined>;
  let ca: ReturnType<typeof caFileKubeconfig>;
  const signal = () => AbortSignal.timeout(10_000);

  beforeAll(async () => {
    fake = await startFakeKubeApi({ namespace: NAMESPACE, controller: { paused: true } });
    dir = mkdtempSync(join(tmpdir(), 'sandlot-storage-'));
    ca = caFileKubeconfig(fake, dir);
    env = validEnv({ KUBECONFIG: ca.path, [`${P}NAMESPACE`]: NAMESPACE });
  });
  afterAll(async () => {
    await fake.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A volume whose PVC and PV are planted, the PVC annotated as made under `providerId`. */
  function plantedUnder(providerId: string): WorkspaceVolumeRef {
    const owner = newOwner();
    const workspace = {
      volumeId: `vol_${randomBytes(16).toString('hex')}`,
      resourceGeneration: 1,
      dataGeneration: 1,
    };
    const pvc = fake.objects.put(
      workspacePvcObject(
        { owner, workspace },
        { [STORAGE_ANNOTATIONS.providerId]: providerId, [STORAGE_ANNOTATIONS.optionsRevision]: '1' },
      ),
    ) as { metadata: { name: string; uid?: string } };
    fake.objects.put(workspacePvObject(pvc));
    return {
      tenantId: owner.tenantId,
      projectId: owner.projectId,
      environmentId: owner.environmentId,
      ...workspace,
    };
  }

  it('compares the Workspace storage provider the settings configure, not a built-in one', async () => {
    const { provider, workspaceStorage: storage } = createAgentSandbox(env);
    expect(storage.selection).toEqual({ providerId: 'azure-files-csi', optionsRevision: '1' });
    const lease = { providerOptions: provider.optionsSnapshot() };
    const check = async (volume: WorkspaceVolumeRef) => {
      const evidence = await storage.inspect(volume, lease, signal());
      return checkStorageEvidence({ volume, selection: storage.selection, binding: null }, evidence);
    };
    expect(await check(plantedUnder('azure-files-csi'))).toEqual([]);
    const other = plantedUnder('kubernetes-pvc');
    expect(await check(other)).toEqual([
      {
        code: 'workspace-selection-changed',
        message: `the storage of volume ${other.volumeId} was made under kubernetes-pvc@1, not azure-files-csi@1`,
      },
    ]);
  });

  it('compares the cluster pin the lease recorded on every inspection, and reads nothing elsewhere', async () => {
    const { provider, workspaceStorage: storage } = createAgentSandbox(env);
    const lease = { providerOptions: provider.optionsSnapshot() };
    const recorded = String(lease.providerOptions['clusterPin']);
    const volume = plantedUnder('azure-files-csi');
    const checks = async (record: typeof lease) =>
      checkStorageEvidence(
        { volume, selection: storage.selection, binding: null },
        await storage.inspect(volume, record, signal()),
      );
    expect(await storage.inspect(volume, lease, signal())).toMatchObject({
      cluster: { recorded, live: recorded },
      pvc: { namespace: NAMESPACE },
    });
    expect(await checks(lease)).toEqual([]);

    // A lease whose objects live in another cluster: nothing is read from this one.
    const before = fake.requests.length;
    const elsewhere = { providerOptions: { ...lease.providerOptions, clusterPin: 'e'.repeat(64) } };
    expect(await checks(elsewhere)).toEqual([
      {
        code: 'workspace-cluster-mismatch',
        message:
          `the storage of volume ${volume.volumeId} would be read from cluster ${recorded.slice(0, 12)}…, ` +
          `but the lease's objects live in cluster eeeeeeeeeeee…; nothing was read from it`,
      },
    ]);
    expect(fake.requests.length).toBe(before);

    // The trusted CA set changes under the running process: its next inspection is another cluster.
    const { caPem: another } = await createCertificateAuthority('another-cluster-ca');
    try {
      ca.trust(`${fake.caPem}\n${another}`);
      expect((await checks(lease)).map((f) => f.code)).toEqual(['workspace-cluster-mismatch']);
      expect(fake.requests.length).toBe(before);
      // A CA that cannot be read now is no verdict either way: the check cannot be made.
      ca.trust('');
      await expect(storage.inspect(volume, lease, signal())).rejects.toMatchObject({
        name: 'ProviderError',
        kind: 'uncertain',
        code: 'cluster-pin-unavailable',
      });
    } finally {
      ca.trust(fake.caPem);
    }
    expect(await checks(lease)).toEqual([]);
  });
});
