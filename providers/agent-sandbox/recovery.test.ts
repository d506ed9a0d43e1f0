// Failures on the way: a lost create response, a Pod that lingers through release, a refused read
// during release, a failing list, a lease whose cluster pin is not the live cluster's. None may turn
// into absence or into a second resource; a pin mismatch refuses before any request is sent.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { skipWithoutCrds } from '../../test/support/crd-dir.ts';
import {
  createCertificateAuthority,
  startFakeKubeApi,
  type FakeKubeApi,
} from '../../test/fakes/kube-api/index.ts';
import {
  budget,
  failureOf,
  newOwner,
  ownedBy,
  provisionRequest,
  refTo,
  releaseOf,
} from '../../test/contract/contract-subject.ts';
import { classifyProviderFailure, ProviderError } from '../errors.ts';
import type { ProviderResource, ProvisionRequest, SandboxProvider } from '../provider.ts';
import { P } from '../../test/support/agent-sandbox-fixtures.ts';
import {
  adapterOn,
  kubeConfigOf,
  NAMESPACE,
  runtimeClassObject,
  workspacePvcObject,
} from '../../test/support/fake-cluster-harness.ts';
import { LABELS, objectNames } from './names.ts';

const EXT = 'extensions.agents.x-k8s.io/v1beta1';

async function failure(call: Promise<unknown>): Promise<ProviderError> {
  const error = await failureOf(call);
  expect(error).toBeInstanceOf(ProviderError);
  return error as ProviderError;
}

describe.skipIf(skipWithoutCrds)('Agent Sandbox recovery on the fake Kubernetes API', () => {
  let fake: FakeKubeApi;
  let provider: SandboxProvider;

  beforeAll(async () => {
    fake = await startFakeKubeApi({
      namespace: NAMESPACE,
      controller: { intervalMs: 10, podLingerSteps: 3 },
    });
    fake.objects.put(runtimeClassObject());
    provider = adapterOn(fake);
  });
  afterAll(async () => {
    await fake.close();
  });

  const request = (): ProvisionRequest => {
    const made = provisionRequest({ provider }, newOwner());
    fake.objects.put(workspacePvcObject(made));
    return made;
  };
  const claimsOf = (operationId: string) =>
    fake.objects.list(
      { apiVersion: EXT, kind: 'SandboxClaim' },
      { labelSelector: `${LABELS.operationId}=${operationId}` },
    );

  it('a claim create whose response is dropped is uncertain; listOwned finds it and a retry adopts it', async () => {
    const made = request();
    fake.faults.dropResponseAfterApply({ verb: 'create', resource: 'sandboxclaims' });
    const lost = await failure(provider.provision(made, budget()));
    expect(classifyProviderFailure(lost)).toBe('uncertain');

    const listed = await provider.listOwned(
      ownedBy({ provider }, made.owner, made.owner.operationId),
      budget(),
    );
    expect(listed.map((r) => r.owner)).toEqual([made.owner]);
    const retried = await provider.provision(made, budget());
    expect(retried.resourceId).toBe(listed[0]?.resourceId);
    expect(claimsOf(made.owner.operationId)).toHaveLength(1);
  });

  describe('release', () => {
    let made: ProvisionRequest;
    let resource: ProviderResource;

    beforeAll(async () => {
      made = request();
      resource = await provider.provision(made, budget());
      // Provision may answer `pending` before the controller made the Sandbox: this case needs its Pod.
      await fake.controller.settle();
    });

    it('keeps a 403 on a read an error, never absence, and the claim stays', async () => {
      fake.faults.failNext({ verb: 'get', resource: 'sandboxclaims' }, 403);
      const refused = await failure(provider.release(releaseOf({ provider }, resource), budget()));
      expect(refused).toMatchObject({ kind: 'uncertain', code: 'forbidden-403' });
      expect(claimsOf(made.owner.operationId)).toHaveLength(1);
    });

    it('gives no receipt while the Pod lingers, and one once exact lookups find everything gone', async () => {
      const name = objectNames(made.owner.operationId).claim;
      fake.controller.pause();
      try {
        const short = { signal: new AbortController().signal, deadline: new Date(Date.now() + 800) };
        const early = await failure(provider.release(releaseOf({ provider }, resource), short));
        expect(classifyProviderFailure(early)).toBe('uncertain');
        // Two garbage-collector passes mark the Sandbox, then its Pod, deleted; the Pod lingers.
        await fake.controller.step();
        await fake.controller.step();
        const pod = fake.objects.get({ apiVersion: 'v1', kind: 'Pod', namespace: NAMESPACE, name });
        expect(pod?.metadata.deletionTimestamp).toBeDefined();
        const again = { signal: new AbortController().signal, deadline: new Date(Date.now() + 400) };
        expect(
          classifyProviderFailure(await failure(provider.release(releaseOf({ provider }, resource), again))),
        ).toBe('uncertain');
      } finally {
        fake.controller.resume();
      }
      const receipt = await provider.release(releaseOf({ provider }, resource, 'k-1'), budget());
      expect(receipt).toEqual({
        outcome: 'KnownOwnedAbsent',
        resourceId: resource.resourceId,
        idempotencyKey: 'k-1',
      });
      expect(fake.objects.get({ apiVersion: 'v1', kind: 'Pod', namespace: NAMESPACE, name })).toBeUndefined();
      expect(claimsOf(made.owner.operationId)).toHaveLength(0);
    });
  });

  it('keeps a 403 while waiting for absence an error, though the claim delete went through', async () => {
    const made = request();
    const resource = await provider.provision(made, budget());
    fake.faults.failNext({ verb: 'get', resource: 'pods' }, 403);
    const refused = await failure(provider.release(releaseOf({ provider }, resource), budget()));
    expect(refused).toMatchObject({ kind: 'uncertain', code: 'forbidden-403' });
    const receipt = await provider.release(releaseOf({ provider }, resource), budget());
    expect(receipt.outcome).toBe('KnownOwnedAbsent');
  });

  it('a failing claim list throws; it never reads as nothing owned', async () => {
    const made = request();
    await provider.provision(made, budget());
    fake.faults.listErrors('sandboxclaims', 1, 500);
    const error = await failure(provider.listOwned(ownedBy({ provider }, made.owner), budget()));
    expect(classifyProviderFailure(error)).toBe('uncertain');
  });

  it('listOwned looks in the namespace the lease recorded, not the current setting', async () => {
    const made = request();
    const resource = await provider.provision(made, budget());
    const moved = adapterOn(fake, { [`${P}NAMESPACE`]: 'elsewhere' });
    const listed = await moved.listOwned(ownedBy({ provider }, made.owner), budget());
    expect(listed.map((r) => r.resourceId)).toEqual([resource.resourceId]);
  });

  describe('cluster pin', () => {
    it('a lease pinned to another cluster is refused by every call before any request', async () => {
      const made = request();
      const resource = await provider.provision(made, budget());
      const other = { ...provider.optionsSnapshot(), clusterPin: 'e'.repeat(64) };
      const before = fake.requests.length;
      for (const call of [
        provider.provision({ ...made, options: other }, budget()),
        provider.describe({ ...refTo({ provider }, resource), options: other }, budget()),
        provider.listOwned({ ...ownedBy({ provider }, made.owner), options: other }, budget()),
        provider.release({ ...releaseOf({ provider }, resource), options: other }, budget()),
      ]) {
        expect(await failure(call)).toMatchObject({ kind: 'definitive', code: 'cluster-pin-mismatch' });
      }
      expect(fake.requests.length).toBe(before);
    });

    it('a process trusting another CA is another cluster, even at the same address', async () => {
      const made = request();
      const resource = await provider.provision(made, budget());
      const { caPem } = await createCertificateAuthority('another-cluster-ca');
      const elsewhere = adapterOn(fake, {}, kubeConfigOf(fake, caPem));
      expect(elsewhere.optionsSnapshot().clusterPin).not.toBe(provider.optionsSnapshot().clusterPin);
      const before = fake.requests.length;
      const refused = await failure(elsewhere.release(releaseOf({ provider }, resource), budget()));
      expect(refused).toMatchObject({ kind: 'definitive', code: 'cluster-pin-mismatch' });
      expect(fake.requests.length).toBe(before);
    });
  });
});
