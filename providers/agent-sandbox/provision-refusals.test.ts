// Provision-time refusals: the cluster is not as the request needs it (Workspace PVC, RuntimeClass),
// or an object under one of the operation's deterministic names is not ours. Definitive refusals
// leave nothing of the operation behind; a foreign object is never adopted and never touched. A PVC
// annotated at an older data generation than asked is no refusal: a suspend flush moves the volume
// on, not the PVC's annotation.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { skipWithoutCrds } from '../../test/support/crd-dir.ts';
import { startFakeKubeApi, type FakeKubeApi } from '../../test/fakes/kube-api/index.ts';
import {
  budget,
  failureOf,
  newOwner,
  presentResource,
  provisionRequest,
  refTo,
} from '../../test/contract/contract-subject.ts';
import { ProviderError } from '../errors.ts';
import type { ProvisionRequest, SandboxProvider } from '../provider.ts';
import {
  adapterOn,
  NAMESPACE,
  refs,
  RUNTIME_CLASS_NAME,
  runtimeClassObject,
  wipeNamespace,
  workspacePvcObject,
} from '../../test/support/fake-cluster-harness.ts';
import { ANNOTATIONS, LABELS, objectNames } from './names.ts';

const EXT = 'extensions.agents.x-k8s.io/v1beta1';

async function refusal(call: Promise<unknown>): Promise<{ kind: string; code: string }> {
  const error = await failureOf(call);
  expect(error).toBeInstanceOf(ProviderError);
  return { kind: (error as ProviderError).kind, code: (error as ProviderError).code };
}

describe.skipIf(skipWithoutCrds)('Agent Sandbox provision refusals', () => {
  let fake: FakeKubeApi;
  let provider: SandboxProvider;

  beforeAll(async () => {
    fake = await startFakeKubeApi({ namespace: NAMESPACE, controller: { intervalMs: 10 } });
    fake.objects.put(runtimeClassObject());
    provider = adapterOn(fake);
  });
  afterAll(async () => {
    await fake.close();
  });
  afterEach(() => wipeNamespace(fake));

  const request = (plant = true, annotations: Record<string, string> = {}): ProvisionRequest => {
    const made = provisionRequest({ provider }, newOwner());
    if (plant) fake.objects.put(workspacePvcObject(made, annotations));
    return made;
  };
  const ownedObjects = (operationId: string) =>
    ['SandboxTemplate', 'SandboxWarmPool', 'SandboxClaim'].flatMap((kind) =>
      fake.objects.list({ apiVersion: EXT, kind }, { labelSelector: `${LABELS.operationId}=${operationId}` }),
    );

  describe('before anything is created, refusals are definitive and leave nothing behind', () => {
    it.each([
      ['the Workspace PVC is missing', () => request(false), 'workspace-pvc-missing'],
      [
        'its environment annotation differs',
        () => request(true, { [ANNOTATIONS.environmentId]: 'env-other' }),
        'workspace-pvc-mismatch',
      ],
      [
        'its data generation differs',
        () => request(true, { [ANNOTATIONS.volumeDataGeneration]: '2' }),
        'workspace-pvc-mismatch',
      ],
      [
        'its data generation is not a count',
        () => request(true, { [ANNOTATIONS.volumeDataGeneration]: '01' }),
        'workspace-pvc-mismatch',
      ],
      [
        'it is not Bound',
        () => {
          const made = request();
          fake.objects.mutate(refs.pvc(made), (pvc) => ((pvc.status ??= {}).phase = 'Lost'));
          return made;
        },
        'workspace-pvc-unbound',
      ],
      [
        'an annotation is missing',
        () => {
          const made = request();
          fake.objects.mutate(
            refs.pvc(made),
            (pvc) => delete pvc.metadata.annotations?.[ANNOTATIONS.volumeResourceGeneration],
          );
          return made;
        },
        'workspace-pvc-mismatch',
      ],
    ])('%s', async (_case, make, code) => {
      const made = make();
      expect(await refusal(provider.provision(made, budget()))).toEqual({ kind: 'definitive', code });
      expect(ownedObjects(made.owner.operationId)).toEqual([]);
    });

    it('a PVC annotated at an older data generation is accepted, and read back (a suspend flush moved the volume on)', async () => {
      // Storage annotates the data generation when it makes the claim; a verified flush does not
      // rewrite it. The admission's storage check judges the chain of flushes before this call.
      const first = provisionRequest({ provider }, newOwner());
      fake.objects.put(workspacePvcObject(first));
      const resumed = { ...first, workspace: { ...first.workspace, dataGeneration: 2 } };
      const resource = await provider.provision(resumed, budget());
      const described = presentResource(await provider.describe(refTo({ provider }, resource), budget()));
      expect(described.resourceId).toBe(resource.resourceId);
      const names = objectNames(first.owner.operationId);
      expect(
        fake.objects.get(refs.template(names.template))?.metadata.annotations?.[
          ANNOTATIONS.volumeDataGeneration
        ],
      ).toBe('2');
    });

    it('the RuntimeClass resolves to another handler, or does not exist', async () => {
      const made = request();
      fake.objects.put(runtimeClassObject('runc'));
      try {
        expect(await refusal(provider.provision(made, budget()))).toEqual({
          kind: 'definitive',
          code: 'runtime-handler-mismatch',
        });
      } finally {
        fake.objects.put(runtimeClassObject());
      }
      fake.objects.remove({ apiVersion: 'node.k8s.io/v1', kind: 'RuntimeClass', name: RUNTIME_CLASS_NAME });
      try {
        expect(await refusal(provider.provision(made, budget()))).toEqual({
          kind: 'definitive',
          code: 'runtime-class-missing',
        });
      } finally {
        fake.objects.put(runtimeClassObject());
      }
      expect(ownedObjects(made.owner.operationId)).toEqual([]);
    });
  });

  describe('objects under our deterministic names that are not ours are never adopted', () => {
    it('a foreign template: ownership, and the foreign object is left alone', async () => {
      const made = request();
      const names = objectNames(made.owner.operationId);
      const foreign = provisionRequest({ provider }, { ...newOwner(), operationId: made.owner.operationId });
      fake.objects.put(workspacePvcObject(foreign));
      await provider.provision(foreign, budget());
      expect(await refusal(provider.provision(made, budget()))).toMatchObject({ kind: 'ownership' });
      expect(fake.objects.get(refs.template(names.template))?.metadata.labels?.[LABELS.ownerHash]).toBe(
        foreign.owner.ownerHash,
      );
    });

    it('a foreign claim after our template and pool: ownership, and ours are rolled back', async () => {
      const made = request();
      const names = objectNames(made.owner.operationId);
      fake.objects.put({
        apiVersion: EXT,
        kind: 'SandboxClaim',
        metadata: { name: names.claim, namespace: NAMESPACE },
        spec: { warmPoolRef: { name: 'elsewhere' } },
      });
      expect(await refusal(provider.provision(made, budget()))).toMatchObject({ kind: 'ownership' });
      expect(fake.objects.get(refs.template(names.template))).toBeUndefined();
      expect(fake.objects.get(refs.pool(names.pool))).toBeUndefined();
    });
  });
});
