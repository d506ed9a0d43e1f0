// The AgentHost configuration is read and validated at start, with every other setting: a profile
// with a field named or shaped like a credential is refused by path (never by value), as are bad
// receiver settings, non-identifier profile IDs and a CA file that is not (only) certificates.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { namesCredential } from '../../config/agenthost.ts';
import { ConfigError } from '../../config/errors.ts';
import { loadConfig } from '../../config/load.ts';

const RECEIVER = { configurePath: '/runtime/v1/configure', audience: 'agenthost-receiver' };
const CERT = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sandlot-agenthost-config-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

async function fileWith(name: string, content: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, content);
  return path;
}

async function problemsFor(document: unknown): Promise<string[]> {
  const path = await fileWith(`c-${Math.random().toString(36).slice(2)}.json`, JSON.stringify(document));
  try {
    loadConfig({ SANDLOT_AGENTHOST_CONFIG_FILE: path });
  } catch (error) {
    if (error instanceof ConfigError) return error.problems.map((p) => `${p.variable}: ${p.reason}`);
    throw error;
  }
  return [];
}

describe('SANDLOT_AGENTHOST_CONFIG_FILE', () => {
  it('is absent unless set, and frozen when read', async () => {
    expect(loadConfig({}).agentHostProfiles).toBeUndefined();
    const path = await fileWith(
      'ok.json',
      JSON.stringify({ receiver: RECEIVER, profiles: { codex: { maxTokens: 10 } } }),
    );
    const configuration = loadConfig({ SANDLOT_AGENTHOST_CONFIG_FILE: path }).agentHostProfiles;
    expect(configuration).toEqual({ receiver: RECEIVER, profiles: { codex: { maxTokens: 10 } } });
    expect(Object.isFrozen(configuration?.profiles['codex'])).toBe(true);
  });

  it('refuses credential-named fields at any depth, naming the path and never the value', async () => {
    const problems = await problemsFor({
      receiver: RECEIVER,
      profiles: {
        codex: { model: { provider: { apiKey: 'sk-live-123' } }, headers: [{ Authorization: 'x' }] },
        other: { client_secret: 'hunter2', note: 'Bearer abc.def' },
      },
    });
    const text = problems.join('\n');
    expect(text).toContain('profiles.codex.model.provider.apiKey');
    expect(text).toContain('profiles.codex.headers.0.Authorization');
    expect(text).toContain('profiles.other.client_secret');
    expect(text).toContain('profiles.other.note');
    expect(text).not.toMatch(/sk-live-123|hunter2|abc\.def/);
    expect(problems.every((p) => p.startsWith('SANDLOT_AGENTHOST_CONFIG_FILE: '))).toBe(true);
  });

  it.each([
    ['a profile ID that is not an identifier', { receiver: RECEIVER, profiles: { '../x': {} } }],
    ['no profiles', { receiver: RECEIVER, profiles: {} }],
    [
      'a configure path that leaves the path',
      { receiver: { ...RECEIVER, configurePath: '//evil.example/x' }, profiles: { a: {} } },
    ],
    [
      'a configure path with a query',
      { receiver: { ...RECEIVER, configurePath: '/c?x=1' }, profiles: { a: {} } },
    ],
    ['an empty audience', { receiver: { ...RECEIVER, audience: '' }, profiles: { a: {} } }],
    ['an unknown member', { receiver: RECEIVER, profiles: { a: {} }, extra: true }],
  ])('refuses %s', async (_what, document) => {
    expect(await problemsFor(document)).not.toEqual([]);
  });

  it('refuses a missing or non-JSON file', () => {
    expect(() => loadConfig({ SANDLOT_AGENTHOST_CONFIG_FILE: join(dir, 'missing.json') })).toThrow(/ENOENT/);
  });

  it('tells credential names from look-alikes', () => {
    for (const name of [
      'token',
      'accessToken',
      'api_key',
      'apiKey',
      'PASSWORD',
      'client-secret',
      'privateKey',
      'cookie',
    ]) {
      expect(namesCredential(name), name).toBe(true);
    }
    for (const name of ['maxTokens', 'tokenizer', 'model', 'keyboard', 'audience', 'auth']) {
      expect(namesCredential(name), name).toBe(false);
    }
  });
});

describe('SANDLOT_AGENTHOST_CA_FILE', () => {
  it('holds CA certificates only', async () => {
    const ok = await fileWith('ca.pem', CERT);
    expect(loadConfig({ SANDLOT_AGENTHOST_CA_FILE: ok }).agentHostCaPem).toBe(CERT);
    const empty = await fileWith('empty.pem', 'nothing');
    expect(() => loadConfig({ SANDLOT_AGENTHOST_CA_FILE: empty })).toThrow(/no PEM certificate/);
    const withKey = await fileWith(
      'key.pem',
      `${CERT}-----BEGIN PRIVATE KEY-----\nAAA\n-----END PRIVATE KEY-----\n`,
    );
    expect(() => loadConfig({ SANDLOT_AGENTHOST_CA_FILE: withKey })).toThrow(/private key/);
  });
});

describe('an AgentHost on Agent Sandbox without SANDLOT_AGENTHOST_CA_FILE', () => {
  const LAUNCH_PROFILE = {
    SANDLOT_AGENT_SANDBOX_AGENT_HOST_CONFIG_MAP_NAME: 'agenthost-config',
    SANDLOT_AGENT_SANDBOX_AGENT_HOST_TLS_SECRET_NAME: 'agenthost-tls',
  };
  const problemsOf = (env: Record<string, string>): Record<string, string> => {
    try {
      loadConfig(env);
    } catch (error) {
      if (error instanceof ConfigError) {
        return Object.fromEntries(error.problems.map((p) => [p.variable, p.reason]));
      }
      throw error;
    }
    return {};
  };

  it('is refused at start, naming the setting, with the launch profile or the receiver profiles', async () => {
    const withLaunch = problemsOf({ SANDLOT_PROVIDER: 'agent-sandbox', ...LAUNCH_PROFILE });
    expect(Object.keys(withLaunch)).toEqual(['SANDLOT_AGENTHOST_CA_FILE']);
    expect(withLaunch['SANDLOT_AGENTHOST_CA_FILE']).toMatch(
      /SANDLOT_AGENT_SANDBOX_AGENT_HOST_CONFIG_MAP_NAME/,
    );
    const profiles = await fileWith(
      'profiles-for-ca.json',
      JSON.stringify({ receiver: RECEIVER, profiles: { codex: {} } }),
    );
    const withReceiver = problemsOf({
      SANDLOT_PROVIDER: 'agent-sandbox',
      SANDLOT_AGENTHOST_CONFIG_FILE: profiles,
    });
    expect(withReceiver['SANDLOT_AGENTHOST_CA_FILE']).toMatch(/SANDLOT_AGENTHOST_CONFIG_FILE/);
    // Production names it beside the other missing services, in one message.
    const production = problemsOf({
      DATABASE_URL: 'postgres://db.example.com/sandlot',
      SANDLOT_PROVIDER: 'agent-sandbox',
      ...LAUNCH_PROFILE,
    });
    expect(production).toHaveProperty('SANDLOT_AGENTHOST_CA_FILE');
    expect(production).toHaveProperty('SANDLOT_JWKS_URL');
  });

  it('starts with the CA file; and without it on the legacy template or another provider', async () => {
    const ca = await fileWith('service-backend-ca.pem', CERT);
    expect(
      loadConfig({ SANDLOT_PROVIDER: 'agent-sandbox', ...LAUNCH_PROFILE, SANDLOT_AGENTHOST_CA_FILE: ca })
        .agentHostCaPem,
    ).toBe(CERT);
    expect(() => loadConfig({ SANDLOT_PROVIDER: 'agent-sandbox' })).not.toThrow();
    expect(() => loadConfig({ SANDLOT_PROVIDER: 'simulated', ...LAUNCH_PROFILE })).not.toThrow();
  });
});
