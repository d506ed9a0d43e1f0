// The adapter's requests reuse kept-alive TLS connections to the API server (client-node alone
// opened one per request), every client over one KubeConfig shares them, and a changed trust root
// gets connections of its own. Counted by the TLS connections the fake API accepted.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { skipWithoutCrds } from '../../test/support/crd-dir.ts';
import { budget } from '../../test/contract/contract-subject.ts';
import {
  kubeConfigOf,
  runtimeClassObject,
  RUNTIME_CLASS_NAME,
} from '../../test/support/fake-cluster-harness.ts';
import {
  createCertificateAuthority,
  startFakeKubeApi,
  type FakeKubeApi,
} from '../../test/fakes/kube-api/index.ts';
import { KubeClient } from './kube-client.ts';
import { openSockets } from './kube-connections.ts';

describe.skipIf(skipWithoutCrds)('connections to the API server', () => {
  let fake: FakeKubeApi;

  beforeAll(async () => {
    fake = await startFakeKubeApi({ controller: { paused: true } });
    fake.objects.put(runtimeClassObject());
  });
  afterAll(async () => {
    await fake.close();
  });

  const read = (kube: KubeClient) => kube.getRuntimeClass(RUNTIME_CLASS_NAME, budget());

  it('sends one request after another over one connection, shared by every client of a KubeConfig', async () => {
    const kubeConfig = kubeConfigOf(fake);
    const before = fake.connections();
    const [first, second] = [new KubeClient(kubeConfig), new KubeClient(kubeConfig)];
    for (let i = 0; i < 10; i += 1) {
      expect(await read(i % 2 === 0 ? first : second)).not.toBeNull();
    }
    expect(fake.connections() - before).toBe(1);
    expect(openSockets(kubeConfig)).toBe(1);
  });

  it('opens as many connections as requests in flight, never queues them, and reuses them after', async () => {
    const kube = new KubeClient(kubeConfigOf(fake));
    const before = fake.connections();
    await Promise.all(Array.from({ length: 8 }, () => read(kube)));
    const opened = fake.connections() - before;
    expect(opened).toBeGreaterThan(1);
    expect(opened).toBeLessThanOrEqual(8);
    await Promise.all(Array.from({ length: 8 }, () => read(kube)));
    await Promise.all(Array.from({ length: 8 }, () => read(kube)));
    expect(fake.connections() - before).toBe(opened);
  });

  it('opens new connections once the trust root it was read with changes', async () => {
    const kubeConfig = kubeConfigOf(fake);
    const kube = new KubeClient(kubeConfig);
    const before = fake.connections();
    await read(kube);
    await read(kube);
    expect(fake.connections() - before).toBe(1);
    // The same server, now trusted through a bundle that also holds another root.
    const other = await createCertificateAuthority();
    kubeConfig.loadFromString(fake.kubeconfig({ caPem: `${fake.caPem}\n${other.caPem}` }));
    await read(kube);
    await read(kube);
    expect(fake.connections() - before).toBe(2);
  });
});
