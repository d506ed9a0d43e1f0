// The AgentHost launch profile end to end on the fake Kubernetes API: a provisioned sandbox reaches
// `started` only with the Sandbox's own ClusterIP Service resolving to exactly its Pod, and reports
// the HTTPS endpoint in its placement; a Pod or Service that drifted from the profile is refused.
// Renew moves the exact claim's shutdown time and touches no claim that is not ours.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { skipWithoutCrds } from '../../test/support/crd-dir.ts';
import { startFakeKubeApi, type FakeKubeApi, type KubeObject } from '../../test/fakes/kube-api/index.ts';
import {
  budget,
  failureOf,
  instantIn,
  newOwner,
  pollUntil,
  presentResource,
  provisionRequest,
  refTo,
  renewalOf,
} from '../../test/contract/contract-subject.ts';
import { P } from '../../test/support/agent-sandbox-fixtures.ts';
import {
  adapterOn,
  NAMESPACE,
  refs,
  runtimeClassObject,
  wipeNamespace,
  workspacePvcObject,
} from '../../test/support/fake-cluster-harness.ts';
import { ProviderError } from '../errors.ts';
import type { ProviderResource, ProvisionRequest, SandboxProvider } from '../provider.ts';
import { LABELS, objectNames } from './names.ts';

const PROFILE = {
  [`${P}AGENT_HOST_CONFIG_MAP_NAME`]: 'agenthost-config',
  [`${P}AGENT_HOST_TLS_SECRET_NAME`]: 'agenthost-tls',
};
const HOUR = 3_600_000;

interface Mount {
  name: string;
  readOnly?: boolean;
}
interface PodShape {
  containers: { volumeMounts: Mount[]; ports: { containerPort: number }[] }[];
  securityContext: { fsGroup?: number };
}
const podSpec = (pod: KubeObject) => pod.spec as unknown as PodShape;
const servicePorts = (service: KubeObject) => (service.spec as { ports: { port: number }[] }).ports;

async function refusal(call: Promise<unknown>): Promise<{ kind: string; code: string }> {
  const error = await failureOf(call);
  expect(error).toBeInstanceOf(ProviderError);
  return { kind: (error as ProviderError).kind, code: (error as ProviderError).code };
}

describe.skipIf(skipWithoutCrds)('the AgentHost launch profile on the fake Kubernetes API', () => {
  let fake: FakeKubeApi;
  let provider: SandboxProvider;

  beforeAll(async () => {
    fake = await startFakeKubeApi({ namespace: NAMESPACE, controller: { intervalMs: 10 } });
    fake.objects.put(runtimeClassObject());
    provider = adapterOn(fake, PROFILE);
  });
  afterAll(async () => {
    await fake.close();
  });
  afterEach(() => wipeNamespace(fake));

  const request = (): ProvisionRequest => {
    const made = provisionRequest({ provider }, newOwner());
    fake.objects.put(workspacePvcObject(made));
    return made;
  };
  const started = async (resource: ProviderResource): Promise<ProviderResource> => {
    const seen = await pollUntil(
      { waitForPhase: { timeoutMs: 10_000, intervalMs: 20 } },
      async () => presentResource(await provider.describe(refTo({ provider }, resource), budget())),
      (found) => found.phase === 'started',
    );
    return seen.at(-1) ?? resource;
  };

  it('reaches started with its own ClusterIP Service on 8443 selecting exactly its Pod', async () => {
    const made = request();
    const resource = await started(await provider.provision(made, budget()));
    const name = objectNames(made.owner.operationId).claim;
    const pod = fake.objects.get(refs.pod(name));
    const sandbox = fake.objects.get(refs.sandbox(name));
    const service = fake.objects.get(refs.service(name));

    expect(service?.spec).toMatchObject({ type: 'ClusterIP', ports: [{ name: 'https', port: 8443 }] });
    expect(service?.metadata.ownerReferences?.[0]).toMatchObject({
      kind: 'Sandbox',
      uid: sandbox?.metadata.uid,
      controller: true,
    });
    const selector = Object.entries(service?.spec?.['selector'] as Record<string, string>)
      .map(([k, v]) => `${k}=${v}`)
      .join(',');
    const selected = fake.objects.list(
      { apiVersion: 'v1', kind: 'Pod' },
      { namespace: NAMESPACE, labelSelector: selector },
    );
    expect(selected.map((p) => p.metadata.uid)).toEqual([pod?.metadata.uid]);
    expect(pod?.metadata.labels).toMatchObject({
      'agentweaver.io/workload': 'agenthost',
      'agentweaver.io/identity-client': 'true',
    });

    const fqdn = `${name}.${NAMESPACE}.svc.cluster.local`;
    expect(resource.placement).toMatchObject({
      service: name,
      serviceDns: fqdn,
      endpoint: `https://${fqdn}:8443`,
      podUid: pod?.metadata.uid,
      podIP: (pod?.status as { podIP?: string }).podIP,
    });
  });

  it('without the profile the template stays legacy: no Service, no endpoint keys', async () => {
    const legacy = adapterOn(fake);
    const made = provisionRequest({ provider: legacy }, newOwner());
    fake.objects.put(workspacePvcObject(made));
    const resource = await legacy.provision(made, budget());
    const seen = await pollUntil(
      { waitForPhase: { timeoutMs: 10_000, intervalMs: 20 } },
      async () => presentResource(await legacy.describe(refTo({ provider: legacy }, resource), budget())),
      (found) => found.phase === 'started',
    );
    const name = objectNames(made.owner.operationId).claim;
    expect(fake.objects.get(refs.service(name))).toBeUndefined();
    expect(fake.objects.get(refs.template(`${name}-tpl`))?.spec?.['service']).toBeUndefined();
    expect(Object.keys(seen.at(-1)?.placement ?? {}).sort()).toEqual(
      ['claim', 'claimUid', 'namespace', 'node', 'pod', 'podIP', 'podUid', 'sandbox', 'sandboxUid'].sort(),
    );
  });

  describe('describe refuses a Pod or Service that drifted from the profile', () => {
    const cases: [string, (name: string) => void, string][] = [
      [
        'the Pod mounts the TLS Secret writable',
        (n) =>
          fake.objects.mutate(refs.pod(n), (p) => {
            const mount = podSpec(p).containers[0]!.volumeMounts.find((m) => m.name === 'agenthost-tls');
            delete mount!.readOnly;
          }),
        'pod-agent-host-mismatch',
      ],
      [
        'the Pod starts its Host outside the Workspace',
        (n) =>
          fake.objects.mutate(refs.pod(n), (p) => {
            (podSpec(p).containers[0] as { workingDir?: string }).workingDir = '/tmp';
          }),
        'pod-agent-host-mismatch',
      ],
      [
        'the Pod lost its fsGroup',
        (n) => fake.objects.mutate(refs.pod(n), (p) => delete podSpec(p).securityContext.fsGroup),
        'pod-agent-host-mismatch',
      ],
      [
        'the Pod lost the identity-client label',
        (n) =>
          fake.objects.mutate(
            refs.pod(n),
            (p) => delete p.metadata.labels?.['agentweaver.io/identity-client'],
          ),
        'pod-agent-host-mismatch',
      ],
      [
        'the Pod listens on another port',
        (n) =>
          fake.objects.mutate(refs.pod(n), (p) => (podSpec(p).containers[0]!.ports[0]!.containerPort = 8080)),
        'pod-agent-host-mismatch',
      ],
      [
        'the template no longer asks for the Service',
        (n) => fake.objects.mutate(refs.template(`${n}-tpl`), (t) => delete t.spec?.['service']),
        'template-agent-host-mismatch',
      ],
      [
        'the Service exposes another port',
        (n) => fake.objects.mutate(refs.service(n), (s) => (servicePorts(s)[0]!.port = 443)),
        'service-mismatch',
      ],
      [
        'the Service is a NodePort',
        (n) => fake.objects.mutate(refs.service(n), (s) => ((s.spec ??= {})['type'] = 'NodePort')),
        'service-mismatch',
      ],
      [
        'the Service is controlled by another Sandbox UID',
        (n) =>
          fake.objects.mutate(refs.service(n), (s) => {
            for (const reference of s.metadata.ownerReferences ?? []) reference.uid = 'someone-else';
          }),
        'service-owner-mismatch',
      ],
      [
        'the Service selector also resolves to another Pod',
        (n) => {
          const pod = fake.objects.get(refs.pod(n));
          fake.objects.put({
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name: `${n}-intruder`, namespace: NAMESPACE, labels: pod?.metadata.labels ?? {} },
            spec: { containers: [{ name: 'x', image: 'busybox' }] },
          });
        },
        'service-selector-mismatch',
      ],
      [
        'the Service selector resolves to no Pod',
        (n) =>
          fake.objects.mutate(
            refs.service(n),
            (s) => ((s.spec ??= {})['selector'] = { [LABELS.ownerHash]: 'f'.repeat(40) }),
          ),
        'service-selector-mismatch',
      ],
    ];

    it.each(cases)('%s', async (_case, tamper, code) => {
      const made = request();
      const resource = await started(await provider.provision(made, budget()));
      fake.controller.pause();
      try {
        tamper(objectNames(made.owner.operationId).claim);
        expect(await refusal(provider.describe(refTo({ provider }, resource), budget()))).toEqual({
          kind: 'ownership',
          code,
        });
      } finally {
        fake.controller.resume();
      }
    });
  });

  describe('renew', () => {
    const shutdownTime = (name: string) =>
      (fake.objects.get(refs.claim(name))?.spec?.['lifecycle'] as { shutdownTime?: string }).shutdownTime;

    it('sets the shutdown time a day past the expiry at provision, and moves it on renew', async () => {
      const expiresAt = instantIn(HOUR);
      const made = { ...request(), expiresAt };
      const resource = await provider.provision(made, budget());
      const name = objectNames(made.owner.operationId).claim;
      expect(Date.parse(shutdownTime(name) ?? '')).toBe(Date.parse(expiresAt) + 24 * HOUR);

      const later = new Date(Date.parse(expiresAt) + 5 * HOUR).toISOString();
      await provider.renew(renewalOf({ provider }, resource, later), budget());
      expect(Date.parse(shutdownTime(name) ?? '')).toBe(Date.parse(later) + 24 * HOUR);
      // A repeat with the same value writes nothing: no patch reaches the API server (the claim's
      // resourceVersion is no witness here, since the fake controller updates its status meanwhile).
      const patches = () =>
        fake.requests.filter((r) => r.method === 'PATCH' && r.resource === 'sandboxclaims').length;
      const before = patches();
      await provider.renew(renewalOf({ provider }, resource, later), budget());
      expect(patches()).toBe(before);
      expect(Date.parse(shutdownTime(name) ?? '')).toBe(Date.parse(later) + 24 * HOUR);
    });

    it('refuses a claim under another owner binding and leaves its shutdown time alone', async () => {
      const expiresAt = instantIn(HOUR);
      const made = { ...request(), expiresAt };
      const resource = await provider.provision(made, budget());
      const name = objectNames(made.owner.operationId).claim;
      const before = shutdownTime(name);
      fake.objects.mutate(refs.claim(name), (c) => ((c.metadata.labels ??= {})[LABELS.providerFence] = '9'));

      const renewal = renewalOf({ provider }, resource, instantIn(9 * HOUR));
      expect(await refusal(provider.renew(renewal, budget()))).toEqual({
        kind: 'ownership',
        code: 'owner-mismatch',
      });
      expect(shutdownTime(name)).toBe(before);
    });

    it('refuses a resource ID with another claim UID', async () => {
      const resource = await provider.provision({ ...request(), expiresAt: instantIn(HOUR) }, budget());
      const [name] = resource.resourceId.split('/');
      const wrong = { ...resource, resourceId: `${name}/00000000-0000-0000-0000-000000000000` };
      expect(
        await refusal(provider.renew(renewalOf({ provider }, wrong, instantIn(2 * HOUR)), budget())),
      ).toEqual({
        kind: 'ownership',
        code: 'uid-mismatch',
      });
    });

    it('refuses an expiry that is not an instant, definitively', async () => {
      const resource = await provider.provision(request(), budget());
      expect(await refusal(provider.renew(renewalOf({ provider }, resource, 'tomorrow'), budget()))).toEqual({
        kind: 'definitive',
        code: 'invalid-request',
      });
    });
  });
});
