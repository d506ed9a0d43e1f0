// The provider contract, unchanged, against the production Agent Sandbox adapter talking HTTPS to the
// fake Kubernetes API (CRD-validated objects, a controller playing agent-sandbox, scheduler, kubelet
// and garbage collector). A lost response is a real dropped socket after the server applied the
// change: the claim's create for provision, the claim's delete for release. The renew case reads the
// claim's shutdownTime straight from the fake's store.
import { startFakeKubeApi } from '../fakes/kube-api/index.ts';
import { skipWithoutCrds } from '../support/crd-dir.ts';
import { adapterOn, refs, runtimeClassObject, withWorkspaces } from '../support/fake-cluster-harness.ts';
import { defineProviderContract } from './provider-contract.ts';

defineProviderContract(
  'agent-sandbox on the fake Kubernetes API',
  async () => {
    const fake = await startFakeKubeApi({ namespace: 'sandlot-test', controller: { intervalMs: 10 } });
    fake.objects.put(runtimeClassObject());
    const provider = withWorkspaces(fake, adapterOn(fake));
    return {
      provider,
      faults: {
        loseNextResponse: (operation) =>
          fake.faults.dropResponseAfterApply({
            verb: operation === 'provision' ? 'create' : 'delete',
            resource: 'sandboxclaims',
          }),
      },
      waitForPhase: { timeoutMs: 10_000, intervalMs: 10, advance: () => fake.controller.step() },
      // The claim's backstop shutdown time, as the API server holds it.
      recordedTerm: (resource) => {
        const claim = fake.objects.get(refs.claim(resource.resourceId.split('/')[0] ?? ''));
        const time = (claim?.spec?.['lifecycle'] as { shutdownTime?: string } | undefined)?.shutdownTime;
        return Promise.resolve(time ?? null);
      },
      close: () => fake.close(),
    };
  },
  { skip: skipWithoutCrds },
);
