// The Cilium network policy writer against the fake Kubernetes API, beyond the shared contract
// (test/contract/network-policy-writer.kubernetes.test.ts): what the copies look like (names, labels,
// selector), a source generation of several policies, a lost create answer, AlreadyExists read back,
// and a source the verifier would not accept.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { skipWithoutCrds } from '../../test/support/crd-dir.ts';
import { startFakeKubeApi, type FakeKubeApi } from '../../test/fakes/kube-api/index.ts';
import {
  ciliumPolicyObject,
  kubeConfigOf,
  NAMESPACE,
  refs,
  verifierOn,
  wipeNamespace,
} from '../../test/support/fake-cluster-harness.ts';
import { ProviderError } from '../errors.ts';
import type { CiliumNetworkPolicyVerifier } from './cilium-verifier.ts';
import { CiliumNetworkPolicyWriter, rulesDigest } from './cilium-writer.ts';
import { LABELS, projectHashOf } from './names.ts';

const tenantId = 'acme';
const projectId = 'checkout';
const hash = projectHashOf(tenantId, projectId);
const policy = (generation: number, name?: string, matchLabels?: Record<string, string>) =>
  ciliumPolicyObject(
    { tenantId, projectId, generation, ...(name === undefined ? {} : { name }) },
    matchLabels,
  );
const signal = () => AbortSignal.timeout(10_000);

describe.skipIf(skipWithoutCrds)('CiliumNetworkPolicyWriter on the fake Kubernetes API', () => {
  let fake: FakeKubeApi;
  let writer: CiliumNetworkPolicyWriter;
  let verifier: CiliumNetworkPolicyVerifier;

  beforeAll(async () => {
    fake = await startFakeKubeApi({ namespace: NAMESPACE, controller: { paused: true } });
    writer = new CiliumNetworkPolicyWriter({
      options: { namespace: NAMESPACE },
      kubeConfig: kubeConfigOf(fake),
    });
    verifier = verifierOn(fake);
  });
  afterEach(() => {
    fake.faults.clear();
    wipeNamespace(fake);
  });
  afterAll(async () => {
    await fake.close();
  });

  const reapply = (from: number) => writer.reapply(tenantId, projectId, from, from + 1, signal());
  const stored = (name: string) => fake.objects.get(refs.ciliumPolicy(name));

  it('copies every policy of the generation under the naming scheme, keeping labels and selector but the generation', async () => {
    const planted = policy(1, 'egress-dns-g1', {
      [`k8s:${LABELS.projectHash}`]: hash,
      [`any:${LABELS.networkPolicyGeneration}`]: '1',
      [LABELS.managedBy]: 'sandlot',
    });
    const dns = {
      ...planted,
      metadata: { ...planted.metadata, labels: { ...planted.metadata.labels, team: 'payments' } },
    };
    fake.objects.put(dns);
    fake.objects.put(policy(1, 'egress-registry'));
    const before = fake.requests.length;

    const answer = await reapply(1);
    expect(answer).toEqual({
      outcome: 'applied',
      generation: 2,
      digest: rulesDigest([policy(1, 'egress-dns-g1', dns.spec.endpointSelector.matchLabels), policy(1)]),
    });
    expect(stored('egress-dns-g2')).toMatchObject({
      metadata: {
        labels: { [LABELS.projectHash]: hash, [LABELS.networkPolicyGeneration]: '2', team: 'payments' },
      },
      spec: {
        endpointSelector: {
          matchLabels: {
            [`k8s:${LABELS.projectHash}`]: hash,
            [`any:${LABELS.networkPolicyGeneration}`]: '2',
            [LABELS.managedBy]: 'sandlot',
          },
        },
        egress: dns.spec.egress,
      },
    });
    expect(stored('egress-registry-g2')?.spec).toEqual({
      ...policy(1).spec,
      endpointSelector: {
        matchLabels: { [LABELS.projectHash]: hash, [LABELS.networkPolicyGeneration]: '2' },
      },
    });
    // The sources stay as they were; only creates wrote, in the sandbox namespace.
    expect(stored('egress-dns-g1')?.metadata.labels?.[LABELS.networkPolicyGeneration]).toBe('1');
    const writes = fake.requests.slice(before).filter((r) => r.verb !== 'list' && r.verb !== 'get');
    expect(writes.map((r) => [r.verb, r.resource, r.namespace])).toEqual([
      ['create', 'ciliumnetworkpolicies', NAMESPACE],
      ['create', 'ciliumnetworkpolicies', NAMESPACE],
    ]);
    expect(await verifier.verify(tenantId, projectId, 2)).toEqual({ verified: true });
    expect(await reapply(1)).toEqual(answer);
  });

  it('a create whose answer was lost throws (uncertain); the retry creates only what is missing', async () => {
    fake.objects.put(policy(1, 'egress-dns'));
    fake.objects.put(policy(1, 'egress-registry'));
    fake.faults.dropResponseAfterApply({ verb: 'create', resource: 'ciliumnetworkpolicies' });
    const lost = await reapply(1).catch((error: unknown) => error);
    expect(lost).toBeInstanceOf(ProviderError);
    expect((lost as ProviderError).kind).toBe('uncertain');
    const before = fake.requests.length;
    expect(await reapply(1)).toMatchObject({ outcome: 'applied', generation: 2 });
    const creates = fake.requests.slice(before).filter((r) => r.verb === 'create');
    expect(creates).toHaveLength(1);
    expect(stored('egress-dns-g2')).toBeDefined();
    expect(stored('egress-registry-g2')).toBeDefined();
  });

  it('AlreadyExists is read back and compared: a same-named policy that is not the copy is refused, not overwritten', async () => {
    fake.objects.put(policy(1));
    // Not listed under the project's hash, so only the create meets it.
    const copyName = policy(2).metadata.name;
    const squatter = {
      ...policy(2),
      metadata: { name: copyName, namespace: NAMESPACE, labels: { team: 'other' } },
    };
    fake.objects.put(squatter);
    const answer = await reapply(1);
    expect(answer).toMatchObject({ outcome: 'refused', code: 'target-conflict' });
    expect(answer.outcome === 'refused' && answer.reason).toMatch(/belongs to another project/);
    expect(stored(copyName)?.metadata.labels).toEqual({ team: 'other' });
  });

  it('refuses a target generation that holds a policy that is no copy, and a source the verifier refuses', async () => {
    fake.objects.put(policy(1));
    fake.objects.put(policy(2, 'hand-written'));
    expect(await reapply(1)).toMatchObject({ outcome: 'refused', code: 'target-conflict' });
    wipeNamespace(fake);

    // Narrowed to one Environment's Pod: the verifier does not accept it, so it is not copied.
    fake.objects.put(
      policy(1, undefined, {
        [LABELS.projectHash]: hash,
        [LABELS.networkPolicyGeneration]: '1',
        [LABELS.ownerHash]: 'f'.repeat(40),
      }),
    );
    const before = fake.requests.length;
    const answer = await reapply(1);
    expect(answer).toMatchObject({ outcome: 'refused', code: 'source-unverified' });
    expect(answer.outcome === 'refused' && answer.reason).toMatch(/also selects sandlot\.dev\/owner-hash/);
    expect(fake.requests.slice(before).filter((r) => r.verb === 'create')).toEqual([]);
  });
});
