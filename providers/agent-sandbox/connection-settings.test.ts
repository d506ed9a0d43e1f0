// The service-account connection end to end against the fake Kubernetes API over real HTTPS: the API
// server, token file and CA file come from their SANDLOT_KUBERNETES_* settings (as they would from
// the projected in-cluster defaults), the adapter's client presents the file's token and verifies
// the server against the file's CA, pins the cluster by that CA, and refuses a server another CA
// signed. The token never reaches the options or an error.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { budget, failureOf } from '../../test/contract/contract-subject.ts';
import { validEnv } from '../../test/support/agent-sandbox-fixtures.ts';
import { skipWithoutCrds } from '../../test/support/crd-dir.ts';
import { RUNTIME_CLASS_NAME, runtimeClassObject } from '../../test/support/fake-cluster-harness.ts';
import {
  createCertificateAuthority,
  startFakeKubeApi,
  type FakeKubeApi,
} from '../../test/fakes/kube-api/index.ts';
import { clusterPin, clusterPinOf } from './cluster-pin.ts';
import { kubeConfigFor } from './create-provider.ts';
import { KubeClient } from './kube-client.ts';
import { loadAgentSandboxOptions } from './options.ts';

describe.skipIf(skipWithoutCrds)('the service-account connection settings on the fake API', () => {
  let fake: FakeKubeApi;
  let dir: string;

  beforeAll(async () => {
    fake = await startFakeKubeApi({ controller: { paused: true } });
    fake.objects.put(runtimeClassObject());
    dir = await mkdtemp(join(tmpdir(), 'sandlot-kube-settings-'));
    await writeFile(join(dir, 'token'), fake.token, { mode: 0o600 });
    await writeFile(join(dir, 'ca.crt'), fake.caPem);
    await writeFile(join(dir, 'other-ca.crt'), (await createCertificateAuthority('another-ca')).caPem);
  });
  afterAll(async () => {
    await fake?.close();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  const settings = (caFile: string) =>
    validEnv({
      KUBECONFIG: undefined,
      SANDLOT_KUBERNETES_API_SERVER: `${fake.url}/`,
      SANDLOT_KUBERNETES_SERVICE_ACCOUNT_TOKEN_FILE: join(dir, 'token'),
      SANDLOT_KUBERNETES_CERTIFICATE_AUTHORITY_FILE: join(dir, caFile),
    });

  it('reaches the API server with the token file, trusting the CA file, and pins that CA', async () => {
    const options = loadAgentSandboxOptions(settings('ca.crt'));
    expect(JSON.stringify(options)).not.toContain(fake.token);
    const kubeConfig = kubeConfigFor(options.connection);
    const before = fake.requests.length;
    expect(await new KubeClient(kubeConfig).getRuntimeClass(RUNTIME_CLASS_NAME, budget())).not.toBeNull();
    // One request, on the path the API serves (no doubled slash from the setting's trailing '/').
    expect(fake.requests.slice(before).map((r) => r.path)).toEqual([
      `/apis/node.k8s.io/v1/runtimeclasses/${RUNTIME_CLASS_NAME}`,
    ]);
    expect(clusterPinOf(kubeConfig)).toBe(clusterPin(fake.caPem));
  });

  it('refuses the server when the CA file holds another CA', async () => {
    const kubeConfig = kubeConfigFor(loadAgentSandboxOptions(settings('other-ca.crt')).connection);
    const before = fake.requests.length;
    const error = await failureOf(new KubeClient(kubeConfig).getRuntimeClass(RUNTIME_CLASS_NAME, budget()));
    expect(String(error)).not.toContain(fake.token);
    // Refused in the TLS handshake: no request reached the server, so no token was sent.
    expect(fake.requests.length).toBe(before);
  });
});
