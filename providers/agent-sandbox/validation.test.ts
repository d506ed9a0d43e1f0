// Every read-back check describe makes, one wrong object at a time: the fake API answers with an
// object edited through `fake.objects`, and the adapter must refuse it (ownership) rather than report
// it as ours.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { skipWithoutCrds } from '../../test/support/crd-dir.ts';
import { startFakeKubeApi, type FakeKubeApi, type KubeObject } from '../../test/fakes/kube-api/index.ts';
import {
  budget,
  failureOf,
  newOwner,
  provisionRequest,
  refTo,
} from '../../test/contract/contract-subject.ts';
import { ProviderError } from '../errors.ts';
import type { ProvisionRequest, SandboxProvider } from '../provider.ts';
import {
  adapterOn,
  NAMESPACE,
  refs,
  runtimeClassObject,
  wipeNamespace,
  workspacePvcObject,
} from '../../test/support/fake-cluster-harness.ts';
import { ANNOTATIONS, LABELS, objectNames } from './names.ts';

async function refusal(call: Promise<unknown>): Promise<{ kind: string; code: string }> {
  const error = await failureOf(call);
  expect(error).toBeInstanceOf(ProviderError);
  return { kind: (error as ProviderError).kind, code: (error as ProviderError).code };
}

interface PodShape {
  containers: { securityContext: Record<string, unknown>; volumeMounts: { mountPath: string }[] }[];
  volumes: { persistentVolumeClaim: { claimName: string } }[];
}
const podSpec = (pod: KubeObject) => pod.spec as unknown as PodShape;
function ownerUid(object: KubeObject, uid: string): void {
  for (const reference of object.metadata.ownerReferences ?? []) reference.uid = uid;
}

describe.skipIf(skipWithoutCrds)('Agent Sandbox read-back validation', () => {
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

  describe('describe refuses a resource whose chain was tampered with', () => {
    const cases: [string, (names: ReturnType<typeof objectNames>, made: ProvisionRequest) => void, string][] =
      [
        [
          'a foreign owner-hash label on the claim',
          (n) =>
            fake.objects.mutate(
              refs.claim(n.claim),
              (c) => ((c.metadata.labels ??= {})[LABELS.ownerHash] = 'f'.repeat(40)),
            ),
          'owner-mismatch',
        ],
        [
          'another fence on the claim',
          (n) =>
            fake.objects.mutate(
              refs.claim(n.claim),
              (c) => ((c.metadata.labels ??= {})[LABELS.providerFence] = '77'),
            ),
          'owner-mismatch',
        ],
        [
          'a claim naming another pool',
          (n) =>
            fake.objects.mutate(
              refs.claim(n.claim),
              (c) => ((c.spec ??= {}).warmPoolRef = { name: 'other' }),
            ),
          'claim-pool-mismatch',
        ],
        [
          'a pool naming another template',
          (n) =>
            fake.objects.mutate(
              refs.pool(n.pool),
              (p) => ((p.spec ??= {}).sandboxTemplateRef = { name: 'other' }),
            ),
          'pool-template-mismatch',
        ],
        [
          'a template without the Workspace PVC UID',
          (n) =>
            fake.objects.mutate(
              refs.template(n.template),
              (t) => delete t.metadata.annotations?.[ANNOTATIONS.workspacePvcUid],
            ),
          'template-workspace-invalid',
        ],
        [
          'the RuntimeClass handler changed',
          () => fake.objects.put(runtimeClassObject('runc')),
          'runtime-handler-mismatch',
        ],
        [
          'the PVC lost an annotation',
          (_n, m) =>
            fake.objects.mutate(
              refs.pvc(m),
              (p) => delete p.metadata.annotations?.[ANNOTATIONS.environmentId],
            ),
          'workspace-pvc-mismatch',
        ],
        [
          'the PVC was replaced (new UID)',
          (_n, m) =>
            fake.objects.put({
              ...workspacePvcObject(m),
              metadata: { ...workspacePvcObject(m).metadata, uid: 'replaced-uid' },
            }),
          'workspace-pvc-replaced',
        ],
        [
          'the Sandbox is controlled by another claim UID',
          (n) => fake.objects.mutate(refs.sandbox(n.claim), (s) => ownerUid(s, 'someone-else')),
          'sandbox-owner-mismatch',
        ],
        [
          'the Pod is controlled by another Sandbox UID',
          (n) => fake.objects.mutate(refs.pod(n.claim), (p) => ownerUid(p, 'someone-else')),
          'pod-owner-mismatch',
        ],
        [
          'the Pod runs another RuntimeClass',
          (n) => fake.objects.mutate(refs.pod(n.claim), (p) => ((p.spec ??= {}).runtimeClassName = 'runc')),
          'pod-runtime-class-mismatch',
        ],
        [
          'the Pod mounts the service-account token',
          (n) =>
            fake.objects.mutate(
              refs.pod(n.claim),
              (p) => ((p.spec ??= {}).automountServiceAccountToken = true),
            ),
          'pod-security-mismatch',
        ],
        [
          'the Pod container may escalate privileges',
          (n) =>
            fake.objects.mutate(
              refs.pod(n.claim),
              (p) => (podSpec(p).containers[0]!.securityContext.allowPrivilegeEscalation = true),
            ),
          'pod-security-mismatch',
        ],
        [
          'the Pod mounts the Workspace elsewhere',
          (n) =>
            fake.objects.mutate(
              refs.pod(n.claim),
              (p) => (podSpec(p).containers[0]!.volumeMounts[0]!.mountPath = '/elsewhere'),
            ),
          'pod-mount-mismatch',
        ],
        [
          'the Pod mounts another PVC',
          (n) =>
            fake.objects.mutate(
              refs.pod(n.claim),
              (p) => (podSpec(p).volumes[0]!.persistentVolumeClaim.claimName = 'vol-other'),
            ),
          'pod-pvc-mismatch',
        ],
      ];

    it.each(cases)('%s', async (_case, tamper, code) => {
      const made = request();
      const resource = await provider.provision(made, budget());
      // Provision answers once the claim exists; tamper only after the controllers made the whole
      // chain (the Pod last), or a Pod case would find nothing to tamper with on a slow machine.
      const pod = refs.pod(objectNames(made.owner.operationId).claim);
      for (const until = Date.now() + 10_000; fake.objects.get(pod) === undefined && Date.now() < until;) {
        await new Promise((r) => setTimeout(r, 20));
      }
      fake.controller.pause();
      try {
        tamper(objectNames(made.owner.operationId), made);
        expect(await refusal(provider.describe(refTo({ provider }, resource), budget()))).toEqual({
          kind: 'ownership',
          code,
        });
      } finally {
        fake.objects.put(runtimeClassObject());
        fake.controller.resume();
      }
    });

    it('a resource ID with another claim UID', async () => {
      const resource = await provider.provision(request(), budget());
      const [name] = resource.resourceId.split('/');
      const wrong = {
        ...refTo({ provider }, resource),
        resourceId: `${name}/00000000-0000-0000-0000-000000000000`,
      };
      expect(await refusal(provider.describe(wrong, budget()))).toEqual({
        kind: 'ownership',
        code: 'uid-mismatch',
      });
    });
  });
});
