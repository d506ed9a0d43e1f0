// The composition root picks the network policy verifier with the provider: with
// SANDLOT_PROVIDER=agent-sandbox a provision is admitted only on the project's CiliumNetworkPolicy
// read back from the sandbox namespace; the embedded table (which the admin route still writes)
// decides nothing there.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { skipWithoutCrds } from '../support/crd-dir.ts';
import { composeSandlot, type Sandlot } from '../../cli/compose.ts';
import { loadConfig } from '../../config/load.ts';
import { loadOrCreateDevKey } from '../../http/auth/dev-key.ts';
import { mintDevToken } from '../../http/auth/mint.ts';
import { ciliumPolicyObject, NAMESPACE, plantWorkspace } from '../support/fake-cluster-harness.ts';
import { validEnv } from '../support/agent-sandbox-fixtures.ts';
import { startFakeKubeApi, type FakeKubeApi } from '../fakes/kube-api/index.ts';

describe.skipIf(skipWithoutCrds)(
  'composition picks the Cilium network policy verifier for agent-sandbox',
  () => {
    let fake: FakeKubeApi;
    let dir: string;
    let sandlot: Sandlot;
    let token: (subject: string, operator?: boolean) => Promise<string>;

    beforeAll(async () => {
      fake = await startFakeKubeApi({ namespace: NAMESPACE });
      dir = await mkdtemp(join(tmpdir(), 'sandlot-compose-policies-'));
      await writeFile(join(dir, 'kubeconfig'), fake.kubeconfig({ namespace: NAMESPACE }), { mode: 0o600 });
      const env = {
        SANDLOT_DATA_DIR: join(dir, 'data'),
        SANDLOT_PROVIDER: 'agent-sandbox',
        ...validEnv({ SANDLOT_AGENT_SANDBOX_NAMESPACE: NAMESPACE, KUBECONFIG: join(dir, 'kubeconfig') }),
      };
      const config = loadConfig(env);
      sandlot = await composeSandlot(config, pino({ level: 'silent' }), { workers: false, env });
      const key = await loadOrCreateDevKey(join(dir, 'data'));
      token = (subject, operator = false) =>
        mintDevToken({
          key,
          issuer: config.auth.issuer,
          audience: config.auth.audience,
          tenant: 'acme',
          subject,
          operator,
          ttlSeconds: 600,
        });
    });
    afterAll(async () => {
      await sandlot?.close();
      await fake?.close();
      await rm(dir, { recursive: true, force: true });
    });

    const call = async (method: string, path: string, bearer: string, body?: unknown) => {
      const res = await sandlot.app.request(path, {
        method,
        headers: {
          authorization: `Bearer ${bearer}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };

    it('refuses on the table alone, and admits once the Cilium policy is in the namespace', async () => {
      const ops = await token('ops', true);
      const admin = '/admin/tenants/acme/projects/checkout';
      expect(
        (
          await call('PUT', `${admin}/grants/alice`, ops, {
            permissions: ['ReadProjects', 'WriteProjects', 'ReadRunSelection'],
          })
        ).status,
      ).toBe(200);
      const provider = (await call('GET', '/admin/provider', ops)).body;
      expect(
        (
          await call('PUT', `${admin}/runs/run-1/selection`, ops, {
            candidates: [{ ...provider, exclusive: true }],
          })
        ).status,
      ).toBeLessThan(300);
      // The embedded table knows generation 1 …
      expect((await call('PUT', `${admin}/network-policies/1`, ops, { policy: { egress: [] } })).status).toBe(
        201,
      );

      const alice = await token('alice');
      const envs = '/api/projects/checkout/runs/run-1/environments';
      const { environmentId } = (await call('POST', envs, alice, { idempotencyKey: 'k' })).body as {
        environmentId: string;
      };
      const base = `${envs}/${environmentId}`;
      const volume = (await call('POST', `${base}/workspace-volumes`, alice, { idempotencyKey: 'ws' })).body;
      // The Workspace's PVC and PV exist in the cluster: admission reads them back before any lease.
      plantWorkspace(fake, {
        owner: { environmentId },
        workspace: { volumeId: volume['volumeId'] as string, resourceGeneration: 1, dataGeneration: 1 },
      });
      const provision = (key: string) =>
        call('POST', `${base}/sandbox/provision`, alice, {
          idempotencyKey: key,
          workspace: {
            volumeId: volume['volumeId'],
            resourceGeneration: volume['resourceGeneration'],
            dataGeneration: volume['dataGeneration'],
            mountPath: '/workspace',
            readOnly: false,
          },
          networkPolicyGeneration: 1,
        });

      // … but only the CiliumNetworkPolicy counts on Agent Sandbox.
      const refused = await provision('p-1');
      expect(refused.status).toBe(409);
      expect(refused.body).toMatchObject({
        type: 'urn:sandlot:problem:network-policy-unverified',
        detail: expect.stringContaining('no CiliumNetworkPolicy in namespace') as unknown,
      });
      expect(
        fake.requests.some(
          (r) => r.verb === 'list' && r.resource === 'ciliumnetworkpolicies' && r.namespace === NAMESPACE,
        ),
      ).toBe(true);

      fake.objects.put(ciliumPolicyObject({ tenantId: 'acme', projectId: 'checkout', generation: 1 }));
      const admitted = await provision('p-2');
      expect(admitted.status).toBe(202);
      expect(admitted.body).toMatchObject({ networkPolicyGeneration: 1, state: 'Provisioning' });
    });
  },
);
