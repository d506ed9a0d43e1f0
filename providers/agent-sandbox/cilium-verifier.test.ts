// The network policy verifier against the fake Kubernetes API: a generation is verified only when the
// project's CiliumNetworkPolicy for it is read back from the sandbox namespace, no newer generation of
// the project's policy exists, and its endpoint selector selects the Pods the adapter labels for that
// generation. A failed read is an error, never a verdict; and the selector is checked against the
// labels of a Pod the adapter really made.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createCertificateAuthority } from '../../test/fakes/kube-api/tls.ts';
import { skipWithoutCrds } from '../../test/support/crd-dir.ts';
import { startFakeKubeApi, type FakeKubeApi } from '../../test/fakes/kube-api/index.ts';
import { budget, newOwner, provisionRequest } from '../../test/contract/contract-subject.ts';
import { ProviderError } from '../errors.ts';
import { judgePolicies, type CiliumNetworkPolicyVerifier } from './cilium-verifier.ts';
import { ClusterTrustError } from './cluster-pin.ts';
import { KubeConfig } from './client-node.ts';
import {
  adapterOn,
  caFileKubeconfig,
  ciliumPolicyObject,
  NAMESPACE,
  refs,
  runtimeClassObject,
  verifierOn,
  wipeNamespace,
  workspacePvcObject,
} from '../../test/support/fake-cluster-harness.ts';
import { LABELS, objectNames, projectHashOf } from './names.ts';

const tenantId = 'acme';
const projectId = 'checkout';
const hash = projectHashOf(tenantId, projectId);
const policy = (generation: number, matchLabels?: Record<string, string>, name?: string) =>
  ciliumPolicyObject(
    { tenantId, projectId, generation, ...(name === undefined ? {} : { name }) },
    matchLabels,
  );

describe.skipIf(skipWithoutCrds)('CiliumNetworkPolicyVerifier on the fake Kubernetes API', () => {
  let fake: FakeKubeApi;
  let verifier: CiliumNetworkPolicyVerifier;

  beforeAll(async () => {
    fake = await startFakeKubeApi({ namespace: NAMESPACE, controller: { intervalMs: 10 } });
    fake.objects.put(runtimeClassObject());
    verifier = verifierOn(fake);
  });
  afterEach(() => {
    fake.faults.clear();
    wipeNamespace(fake);
  });
  afterAll(async () => {
    await fake.close();
  });

  const verify = (generation: number) => verifier.verify(tenantId, projectId, generation);
  const reasonOf = async (generation: number) => {
    const verdict = await verify(generation);
    expect(verdict.verified).toBe(false);
    return verdict.verified ? '' : verdict.reason;
  };

  it('verifies the generation whose policy exists, is newest and selects its Pods', async () => {
    fake.objects.put(policy(1));
    expect(await verify(1)).toEqual({ verified: true });
    // One list, in the sandbox namespace, by the project hash alone.
    const lists = fake.requests.filter((r) => r.verb === 'list' && r.resource === 'ciliumnetworkpolicies');
    expect(lists.at(-1)).toMatchObject({
      namespace: NAMESPACE,
      query: { labelSelector: `${LABELS.projectHash}=${hash}` },
    });
  });

  it('accepts Cilium source prefixes and the labels every Pod of the generation carries alike', async () => {
    fake.objects.put(
      policy(2, {
        [`k8s:${LABELS.projectHash}`]: hash,
        [`any:${LABELS.networkPolicyGeneration}`]: '2',
        [LABELS.managedBy]: 'sandlot',
        'k8s:io.kubernetes.pod.namespace': NAMESPACE,
      }),
    );
    expect(await verify(2)).toEqual({ verified: true });
  });

  it('refuses a generation with no policy, and does not count another project or namespace', async () => {
    expect(await reasonOf(1)).toMatch(/generation 1 does not exist/);
    fake.objects.put(ciliumPolicyObject({ tenantId, projectId: 'billing', generation: 1 }));
    fake.objects.put(ciliumPolicyObject({ tenantId: 'globex', projectId, generation: 1 }));
    fake.objects.put({ ...policy(1), metadata: { ...policy(1).metadata, namespace: 'elsewhere' } });
    expect(await reasonOf(1)).toMatch(/does not exist/);
    fake.objects.remove({ ...refs.ciliumPolicy(policy(1).metadata.name), namespace: 'elsewhere' });
  });

  it('refuses a generation superseded by a newer one, and verifies the newer', async () => {
    fake.objects.put(policy(1));
    fake.objects.put(policy(3));
    expect(await reasonOf(1)).toMatch(/generation 1 is not current \(newest is 3/);
    expect(await reasonOf(2)).toMatch(/not current/);
    expect(await verify(3)).toEqual({ verified: true });
  });

  it('refuses a policy whose endpoint selector does not select the generation’s Pods', async () => {
    const cases: [Record<string, string>, RegExp][] = [
      [{ [LABELS.projectHash]: hash }, /does not select sandlot\.dev\/network-policy-generation=1/],
      [{ [LABELS.networkPolicyGeneration]: '1' }, /does not select sandlot\.dev\/project-hash=/],
      [
        { [LABELS.projectHash]: projectHashOf(tenantId, 'billing'), [LABELS.networkPolicyGeneration]: '1' },
        /does not select sandlot\.dev\/project-hash=/,
      ],
      [{ [LABELS.projectHash]: hash, [LABELS.networkPolicyGeneration]: '2' }, /does not select/],
      // Narrowed to one Environment's Pod: the others of the generation would go unpoliced.
      [
        {
          [LABELS.projectHash]: hash,
          [LABELS.networkPolicyGeneration]: '1',
          [LABELS.ownerHash]: 'f'.repeat(40),
        },
        /also selects sandlot\.dev\/owner-hash/,
      ],
      [
        { [LABELS.projectHash]: hash, [LABELS.networkPolicyGeneration]: '1', 'k8s:app': 'agent' },
        /also selects app=agent/,
      ],
    ];
    for (const [matchLabels, reason] of cases) {
      fake.objects.put(policy(1, matchLabels));
      expect(await reasonOf(1)).toMatch(reason);
    }
    const withExpressions = policy(1);
    (withExpressions.spec.endpointSelector as Record<string, unknown>)['matchExpressions'] = [
      { key: LABELS.ownerHash, operator: 'Exists' },
    ];
    fake.objects.put(withExpressions);
    expect(await reasonOf(1)).toMatch(/matchExpressions/);
    fake.objects.put({ ...policy(1), spec: { egress: [] } });
    expect(await reasonOf(1)).toMatch(/no spec\.endpointSelector/);
  });

  it('refuses when any policy of the generation mis-selects, or one of the project hides its generation', async () => {
    fake.objects.put(policy(1, undefined, 'egress-dns'));
    fake.objects.put(
      policy(1, { [LABELS.projectHash]: hash, [LABELS.networkPolicyGeneration]: '1' }, 'egress-registry'),
    );
    expect(await verify(1)).toEqual({ verified: true });
    fake.objects.put(policy(1, { [LABELS.projectHash]: hash }, 'egress-registry'));
    expect(await reasonOf(1)).toMatch(/egress-registry does not select/);
    fake.objects.remove(refs.ciliumPolicy('egress-registry'));
    const unlabelled = policy(1, undefined, 'no-generation');
    unlabelled.metadata.labels = { [LABELS.projectHash]: hash } as typeof unlabelled.metadata.labels;
    fake.objects.put(unlabelled);
    expect(await reasonOf(1)).toMatch(
      /no-generation carries no valid sandlot\.dev\/network-policy-generation/,
    );
  });

  it('does not count a policy that is being deleted', () => {
    const deleting = policy(1);
    const verdict = judgePolicies(
      [{ ...deleting, metadata: { ...deleting.metadata, deletionTimestamp: new Date().toISOString() } }],
      { projectHash: hash, generation: 1, namespace: NAMESPACE },
    );
    expect(verdict.verified).toBe(false);
    expect(verdict.verified ? '' : verdict.reason).toMatch(/does not exist/);
    expect(judgePolicies([deleting], { projectHash: hash, generation: 1, namespace: NAMESPACE })).toEqual({
      verified: true,
    });
  });

  it('throws, never answers, when the list fails: a 500, a 403, or no answer in time', async () => {
    fake.objects.put(policy(1));
    for (const status of [500, 403]) {
      fake.faults.listErrors('ciliumnetworkpolicies', 1, status);
      const error = await verify(1).then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ProviderError);
      expect((error as ProviderError).kind).toBe('uncertain');
    }
    fake.faults.latency(300);
    const slow = verifierOn(fake, undefined, 100);
    await expect(slow.verify(tenantId, projectId, 1)).rejects.toMatchObject({
      name: 'ProviderError',
      code: 'timeout',
    });
    fake.faults.clear();
    expect(await verify(1)).toEqual({ verified: true });
  });

  it('refuses a malformed generation without asking the cluster', async () => {
    const before = fake.requests.length;
    expect(await reasonOf(0)).toMatch(/integer ≥ 1/);
    expect(await reasonOf(1.5)).toMatch(/integer ≥ 1/);
    expect(fake.requests.length).toBe(before);
  });

  it('compares the cluster pin the lease recorded on every verification, and lists nothing elsewhere', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sandlot-verifier-'));
    const ca = caFileKubeconfig(fake, dir);
    const pinned = verifierOn(fake, ca.kubeConfig());
    const lease = { providerOptions: adapterOn(fake, {}, ca.kubeConfig()).optionsSnapshot() };
    const recorded = String(lease.providerOptions['clusterPin']).slice(0, 12);
    // A project of its own: a list another case's client may still send under load is not counted.
    const pinProject = 'pin-check';
    const lists = () =>
      fake.requests.filter(
        (r) =>
          r.resource === 'ciliumnetworkpolicies' &&
          (r.query['labelSelector'] ?? '').includes(projectHashOf(tenantId, pinProject)),
      ).length;
    const reasonFor = async (record: typeof lease | undefined) => {
      const verdict = await pinned.verify(tenantId, pinProject, 1, record);
      return verdict.verified ? 'verified' : verdict.reason;
    };
    fake.objects.put(ciliumPolicyObject({ tenantId, projectId: pinProject, generation: 1 }));
    try {
      expect(await reasonFor(lease)).toBe('verified');
      // A lease whose objects live in another cluster: this one is not asked.
      const before = lists();
      const elsewhere = { providerOptions: { ...lease.providerOptions, clusterPin: 'e'.repeat(64) } };
      expect(await reasonFor(elsewhere)).toBe(
        `CiliumNetworkPolicies would be read from cluster ${recorded}…, but the lease's objects live ` +
          `in cluster eeeeeeeeeeee…; nothing was read from it`,
      );
      // The trusted CA set changes under the running verifier: its next verification is elsewhere,
      // for the lease and (no lease given) for the pin the process took at start alike.
      const { caPem: another } = await createCertificateAuthority('another-cluster-ca');
      ca.trust(`${fake.caPem}\n${another}`);
      expect(await reasonFor(lease)).toMatch(
        /^CiliumNetworkPolicies would be read from cluster .*, but the lease's objects live in cluster /,
      );
      expect(await reasonFor(undefined)).toMatch(/would be read from cluster/);
      expect(lists()).toBe(before);
      // A CA that cannot be read now is no verdict either way.
      ca.trust('');
      await expect(pinned.verify(tenantId, pinProject, 1, lease)).rejects.toMatchObject({
        name: 'ProviderError',
        kind: 'uncertain',
        code: 'cluster-pin-unavailable',
      });
      ca.trust(fake.caPem);
      expect(await reasonFor(lease)).toBe('verified');
      // A lease that is not an Agent Sandbox one records no cluster to verify in.
      expect(await reasonFor({ providerOptions: { providerId: 'simulated' } })).toMatch(/options snapshot/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('lists in the namespace the lease recorded, not the one it was started with', async () => {
    const lease = { providerOptions: { ...adapterOn(fake).optionsSnapshot(), namespace: 'elsewhere' } };
    expect((await verifier.verify(tenantId, projectId, 1, lease)).verified).toBe(false);
    const lists = fake.requests.filter((r) => r.verb === 'list' && r.resource === 'ciliumnetworkpolicies');
    expect(lists.at(-1)).toMatchObject({ namespace: 'elsewhere' });
  });

  it('is refused at construction over a cluster it cannot trust', () => {
    const insecure = new KubeConfig();
    insecure.loadFromOptions({
      clusters: [{ name: 'c', server: 'http://127.0.0.1:1', skipTLSVerify: false }],
      users: [{ name: 'u', token: 't' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    expect(() => verifierOn(fake, insecure)).toThrow(ClusterTrustError);
  });

  it('selects exactly the labels of a Pod the adapter made for that project and generation', async () => {
    const provider = adapterOn(fake);
    const owner = newOwner({ tenantId, projectId });
    const request = { ...provisionRequest({ provider }, owner), networkPolicyGeneration: 4 };
    fake.objects.put(workspacePvcObject(request));
    await provider.provision(request, budget(15_000));
    const podRef = refs.pod(objectNames(owner.operationId).claim);
    const until = Date.now() + 10_000;
    while (fake.objects.get(podRef) === undefined && Date.now() < until)
      await new Promise((r) => setTimeout(r, 10));
    const podLabels = fake.objects.get(podRef)?.metadata.labels ?? {};
    expect(podLabels[LABELS.ownerHash]).toBe(owner.ownerHash);
    const planted = policy(4);
    for (const [key, value] of Object.entries(planted.spec.endpointSelector.matchLabels))
      expect(podLabels[key], key).toBe(value);
    fake.objects.put(planted);
    expect(await verify(4)).toEqual({ verified: true });
  });
});
