// The NetworkPolicyWriter contract against CiliumNetworkPolicies on the fake Kubernetes API, judged
// by the Cilium verifier. Rules are accepted as the project's policy owner writes them (one policy
// per generation, named and labelled as test/support/fake-cluster-harness.ts ciliumPolicyObject
// does); an outage is the API server answering 503 to the writer's list. The fake loads the Agent
// Sandbox CRD schemas when it starts, so the suite skips where they are absent.
import type { NetworkPolicyWriter } from '../../actors/sandbox/network-policy-writer.ts';
import { CiliumNetworkPolicyWriter } from '../../providers/agent-sandbox/cilium-writer.ts';
import { LABELS, projectHashOf } from '../../providers/agent-sandbox/names.ts';
import { startFakeKubeApi } from '../fakes/kube-api/index.ts';
import { skipWithoutCrds } from '../support/crd-dir.ts';
import { ciliumPolicyObject, kubeConfigOf, NAMESPACE, verifierOn } from '../support/fake-cluster-harness.ts';
import { defineNetworkPolicyWriterContract } from './network-policy-writer-cases.ts';

defineNetworkPolicyWriterContract(
  'CiliumNetworkPolicy on the fake API',
  async () => {
    const fake = await startFakeKubeApi({ namespace: NAMESPACE, controller: { paused: true } });
    const verifier = verifierOn(fake);
    // Checks the fit with the port here, as cli/compose.ts would.
    const writer: NetworkPolicyWriter = new CiliumNetworkPolicyWriter({
      options: { namespace: NAMESPACE },
      kubeConfig: kubeConfigOf(fake),
    });
    return {
      writer,
      verify: (project, generation) => verifier.verify(project.tenantId, project.projectId, generation),
      accept: (project, generation, rules) => {
        const policy = ciliumPolicyObject({ ...project, generation });
        fake.objects.put({ ...policy, spec: { endpointSelector: policy.spec.endpointSelector, ...rules } });
        return Promise.resolve();
      },
      rulesOf: (project, generation) => {
        const found = fake.objects.list(
          { apiVersion: 'cilium.io/v2', kind: 'CiliumNetworkPolicy' },
          {
            namespace: NAMESPACE,
            labelSelector:
              `${LABELS.projectHash}=${projectHashOf(project.tenantId, project.projectId)},` +
              `${LABELS.networkPolicyGeneration}=${generation}`,
          },
        );
        if (found.length > 1) throw new Error(`generation ${generation} holds ${found.length} policies`);
        const spec = found[0]?.spec;
        if (spec === undefined) return Promise.resolve(null);
        const rules: Record<string, unknown> = { ...spec };
        delete rules['endpointSelector'];
        return Promise.resolve(rules);
      },
      unavailable: () => {
        fake.faults.failNext({ verb: 'list', resource: 'ciliumnetworkpolicies' }, 503);
        return Promise.resolve(writer);
      },
      close: () => fake.close(),
    };
  },
  { skip: skipWithoutCrds },
);
