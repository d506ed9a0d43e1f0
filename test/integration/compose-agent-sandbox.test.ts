// SANDLOT_PROVIDER=agent-sandbox through the composition root: settings are validated at start-up
// with every bad variable named, and a good configuration serves the adapter's identity.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { skipWithoutCrds } from '../support/crd-dir.ts';
import { composeSandlot } from '../../cli/compose.ts';
import { loadConfig } from '../../config/load.ts';
import { NAMESPACE } from '../support/fake-cluster-harness.ts';
import { validEnv } from '../support/agent-sandbox-fixtures.ts';
import { mintDevToken } from '../../http/auth/mint.ts';
import { loadOrCreateDevKey } from '../../http/auth/dev-key.ts';
import { startFakeKubeApi, type FakeKubeApi } from '../fakes/kube-api/index.ts';

describe.skipIf(skipWithoutCrds)('composition with SANDLOT_PROVIDER=agent-sandbox', () => {
  let fake: FakeKubeApi;
  let dir: string;

  beforeAll(async () => {
    fake = await startFakeKubeApi({ namespace: NAMESPACE });
    dir = await mkdtemp(join(tmpdir(), 'sandlot-compose-'));
    await writeFile(join(dir, 'kubeconfig'), fake.kubeconfig({ namespace: NAMESPACE }), { mode: 0o600 });
  });
  afterAll(async () => {
    await fake.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('refuses to start with every bad Agent Sandbox variable named in one message', async () => {
    const env = {
      SANDLOT_DATA_DIR: join(dir, 'bad'),
      SANDLOT_PROVIDER: 'agent-sandbox',
      ...validEnv({
        SANDLOT_AGENT_SANDBOX_OPTIONS_SCHEMA_VERSION: '1',
        SANDLOT_AGENT_SANDBOX_CONTAINER_IMAGE: 'registry.example.com/agenthost:latest',
        KUBECONFIG: join(dir, 'kubeconfig'),
      }),
    };
    const error = await composeSandlot(loadConfig(env), pino({ level: 'silent' }), {
      workers: false,
      env,
    }).then(
      () => null,
      (e: unknown) => e as Error,
    );
    expect(error?.message).toMatch(/SANDLOT_AGENT_SANDBOX_OPTIONS_SCHEMA_VERSION/);
    expect(error?.message).toMatch(/SANDLOT_AGENT_SANDBOX_CONTAINER_IMAGE/);
    expect(error?.message).not.toContain(fake.token);
  });

  it('refuses to start an AgentHost launch profile without SANDLOT_AGENTHOST_CA_FILE, naming it', async () => {
    const env = {
      SANDLOT_DATA_DIR: join(dir, 'no-ca'),
      SANDLOT_PROVIDER: 'agent-sandbox',
      ...validEnv({
        SANDLOT_AGENT_SANDBOX_NAMESPACE: NAMESPACE,
        SANDLOT_AGENT_SANDBOX_AGENT_HOST_CONFIG_MAP_NAME: 'agenthost-config',
        SANDLOT_AGENT_SANDBOX_AGENT_HOST_TLS_SECRET_NAME: 'agenthost-tls',
        KUBECONFIG: join(dir, 'kubeconfig'),
      }),
    };
    expect(() => loadConfig(env)).toThrow(/SANDLOT_AGENTHOST_CA_FILE/);
    // A Config built without the start-up check (here: from settings that lack the profile) is
    // refused by the composition root all the same, before anything is served.
    const config = loadConfig({
      ...env,
      SANDLOT_AGENT_SANDBOX_AGENT_HOST_CONFIG_MAP_NAME: undefined,
      SANDLOT_AGENT_SANDBOX_AGENT_HOST_TLS_SECRET_NAME: undefined,
    });
    const error = await composeSandlot(config, pino({ level: 'silent' }), { workers: false, env }).then(
      () => null,
      (e: unknown) => e as Error,
    );
    expect(error?.message).toMatch(/SANDLOT_AGENTHOST_CA_FILE/);
    expect(error?.message).not.toContain(fake.token);
  });

  it('serves the adapter identity and pins the cluster when the settings are good', async () => {
    const env = {
      SANDLOT_DATA_DIR: join(dir, 'good'),
      SANDLOT_PROVIDER: 'agent-sandbox',
      ...validEnv({ SANDLOT_AGENT_SANDBOX_NAMESPACE: NAMESPACE, KUBECONFIG: join(dir, 'kubeconfig') }),
    };
    const config = loadConfig(env);
    const sandlot = await composeSandlot(config, pino({ level: 'silent' }), { workers: false, env });
    try {
      const key = await loadOrCreateDevKey(join(dir, 'good'));
      const token = await mintDevToken({
        key,
        issuer: config.auth.issuer,
        audience: config.auth.audience,
        tenant: 't',
        subject: 'ops',
        operator: true,
        ttlSeconds: 60,
      });
      const res = await sandlot.app.request('/admin/provider', {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ providerId: 'agent-sandbox', optionsSchemaVersion: 2 });
      const snapshot = sandlot.provider.optionsSnapshot();
      expect(snapshot['namespace']).toBe(NAMESPACE);
      expect(JSON.stringify(snapshot)).not.toContain(fake.token);
      // Migrated on start without the simulated provider's set: its table is not in this deployment.
      const { rows } = await sandlot.db.query<{ oid: string | null }>(
        `SELECT to_regclass('simulated_resources')::text AS oid`,
      );
      expect(rows[0]?.oid ?? null).toBeNull();
    } finally {
      await sandlot.close();
    }
  });
});
