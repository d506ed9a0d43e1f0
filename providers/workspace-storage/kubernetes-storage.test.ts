// KubernetesWorkspaceStorage as cli/compose.ts builds it (createAgentSandbox, from the settings and a
// kubeconfig file), against the fake Kubernetes API: what it compares that the contract suite
// (test/contract/workspace-storage-cases.ts) cannot, because the embedded storage has no settings.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WorkspaceVolumeRef } from '../../actors/ports.ts';
import { checkStorageEvidence } from '../../actors/workspace-storage.ts';
import { newOwner } from '../../test/contract/contract-subject.ts';
import { startFakeKubeApi, type FakeKubeApi } from '../../test/fakes/kube-api/index.ts';
import { P, validEnv } from '../../test/support/agent-sandbox-fixtures.ts';
import { skipWithoutCrds } from '../../test/support/crd-dir.ts';
import { NAMESPACE, workspacePvcObject, workspacePvObject } from '../../test/support/fake-cluster-harness.ts';
import { createAgentSandbox } from '../agent-sandbox/create-provider.ts';
import { STORAGE_ANNOTATIONS } from './kubernetes-storage.ts';

describe.skipIf(skipWithoutCrds)('KubernetesWorkspaceStorage from the settings', () => {
  let fake: FakeKubeApi;
  let dir: string;
  let env: Record<string, string | undefined>;

  beforeAll(async () => {
    fake = await startFakeKubeApi({ namespace: NAMESPACE, controller: { paused: true } });
    dir = mkdtempSync(join(tmpdir(), 'sandlot-storage-'));
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(kubeconfig, fake.kubeconfig({ namespace: NAMESPACE }));
    env = validEnv({ KUBECONFIG: kubeconfig, [`${P}NAMESPACE`]: NAMESPACE });
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
    const { workspaceStorage: storage } = createAgentSandbox(env);
    expect(storage.selection).toEqual({ providerId: 'azure-files-csi', optionsRevision: '1' });
    const check = async (volume: WorkspaceVolumeRef) => {
      const evidence = await storage.inspect(volume, AbortSignal.timeout(10_000));
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
});
