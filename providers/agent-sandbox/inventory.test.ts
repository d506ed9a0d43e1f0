// The Agent Sandbox adapter's inventory (`sandlot audit`'s orphan check) on the fake Kubernetes API:
// every managed SandboxClaim in the namespace, whoever owns it, with the owner its labels carry; a
// released claim is gone from it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { skipWithoutCrds } from '../../test/support/crd-dir.ts';
import { startFakeKubeApi, type FakeKubeApi } from '../../test/fakes/kube-api/index.ts';
import { budget, newOwner, provisionRequest, releaseOf } from '../../test/contract/contract-subject.ts';
import {
  adapterOn,
  NAMESPACE,
  runtimeClassObject,
  workspacePvcObject,
} from '../../test/support/fake-cluster-harness.ts';
import type { AgentSandboxProvider } from './agent-sandbox-provider.ts';

describe.skipIf(skipWithoutCrds)('Agent Sandbox inventory on the fake Kubernetes API', () => {
  let fake: FakeKubeApi;
  let provider: AgentSandboxProvider;

  beforeAll(async () => {
    fake = await startFakeKubeApi({ namespace: NAMESPACE, controller: { intervalMs: 10 } });
    fake.objects.put(runtimeClassObject());
    provider = adapterOn(fake);
  });
  afterAll(async () => {
    await fake.close();
  });

  it('lists every managed claim with its owner, and drops a released one', async () => {
    const made = [newOwner(), newOwner()].map((owner) => {
      const request = provisionRequest({ provider }, owner);
      fake.objects.put(workspacePvcObject(request));
      return request;
    });
    const resources = await Promise.all(made.map((request) => provider.provision(request, budget())));

    const listed = await provider.inventory(budget());
    expect(listed.map((e) => e.resourceId).sort()).toEqual(resources.map((r) => r.resourceId).sort());
    for (const request of made) {
      expect(listed.find((e) => e.owner.operationId === request.owner.operationId)?.owner).toEqual(
        request.owner,
      );
    }

    await provider.release(releaseOf({ provider }, resources[0]!), budget());
    const after = await provider.inventory(budget());
    expect(after.map((e) => e.resourceId)).toEqual([resources[1]!.resourceId]);
  });
});
