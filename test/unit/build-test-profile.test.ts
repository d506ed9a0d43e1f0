// SANDLOT_BUILDTEST_PROFILE_FILE: absent, BuildTest is not offered; a valid profile is frozen and
// hashed; an invalid one stops start-up naming every bad field's path (never a value). Also the
// production rule that a profile needs SANDLOT_CORE_URL, and that URL's own checks.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestAvailable } from '../../config/build-test-profile.ts';
import { ConfigError } from '../../config/errors.ts';
import { loadConfig } from '../../config/load.ts';
import { canonicalJson, sha256Hex } from '../../lib/canonical-json.ts';

const DIGEST = 'a'.repeat(64);
const PROFILE = {
  executables: ['/usr/bin/make', '/usr/local/bin/npm'],
  versions: ['v1', 'v2'],
  images: {
    command: `registry.example.com:5000/build/runner@sha256:${DIGEST}`,
    collector: `registry.example.com/sandlot/agenthost@sha256:${'b'.repeat(64)}`,
  },
  resources: {
    command: { cpu: '2', memory: '4Gi', ephemeralStorage: '8Gi' },
    collector: { cpu: '500m', memory: '512Mi', ephemeralStorage: '1Gi' },
    commandTimeoutSeconds: 3600,
    collectorTimeoutSeconds: 600,
    maxLogBytes: 1048576,
  },
  egress: 'deny-all',
  collector: { executable: '/usr/local/bin/agenthost', args: ['--build-test-output-collector-v1'] },
};
const PRODUCTION = {
  DATABASE_URL: 'postgres://db/sandlot',
  SANDLOT_JWT_ISSUER: 'https://issuer.example',
  SANDLOT_JWKS_URL: 'https://issuer.example/jwks',
  SANDLOT_PROJECTS_URL: 'https://projects.example',
  SANDLOT_RUN_SELECTION_URL: 'https://selection.example',
};

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sandlot-build-test-profile-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

async function fileWith(content: string): Promise<string> {
  const path = join(dir, `p-${Math.random().toString(36).slice(2)}.json`);
  await writeFile(path, content);
  return path;
}

function problems(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems.map((p) => `${p.variable}: ${p.reason}`);
    throw error;
  }
  return [];
}

async function problemsFor(document: unknown): Promise<string[]> {
  return problems({ SANDLOT_BUILDTEST_PROFILE_FILE: await fileWith(JSON.stringify(document)) });
}

const edit = (change: (p: typeof PROFILE & Record<string, unknown>) => void): unknown => {
  const copy = structuredClone(PROFILE) as typeof PROFILE & Record<string, unknown>;
  change(copy);
  return copy;
};

describe('SANDLOT_BUILDTEST_PROFILE_FILE', () => {
  it('is absent unless set, and then BuildTest is not offered (no default profile)', () => {
    const config = loadConfig({});
    expect(config.buildTestProfile).toBeUndefined();
    expect(buildTestAvailable(config)).toBe(false);
  });

  it('reads a valid profile, frozen, with the hash of its canonical JSON', async () => {
    const config = loadConfig({ SANDLOT_BUILDTEST_PROFILE_FILE: await fileWith(JSON.stringify(PROFILE)) });
    expect(buildTestAvailable(config)).toBe(true);
    expect(config.buildTestProfile?.profile).toEqual(PROFILE);
    expect(config.buildTestProfile?.hash).toBe(sha256Hex(canonicalJson(PROFILE)));
    expect(Object.isFrozen(config.buildTestProfile?.profile.images)).toBe(true);
    expect(Object.isFrozen(config.buildTestProfile?.profile.executables)).toBe(true);
  });

  it.each([
    [
      'a tagged command image',
      edit((p) => (p.images.command = 'registry.example.com/build/runner:latest')),
      'images.command',
    ],
    [
      'a tag next to the digest',
      edit((p) => (p.images.collector = `registry.example.com/a:1@sha256:${DIGEST}`)),
      'images.collector',
    ],
    [
      'an upper-case digest',
      edit((p) => (p.images.command = `registry.example.com/a@sha256:${'A'.repeat(64)}`)),
      'images.command',
    ],
    [
      'a short digest',
      edit((p) => (p.images.command = `registry.example.com/a@sha256:${'a'.repeat(63)}`)),
      'images.command',
    ],
    ['a relative executable', edit((p) => (p.executables = ['make'])), 'executables.0'],
    ['an executable with ".."', edit((p) => (p.executables = ['/usr/bin/../bin/sh'])), 'executables.0'],
    ['an empty allow list', edit((p) => (p.executables = [])), 'executables'],
    ['a repeated executable', edit((p) => (p.executables = ['/a', '/a'])), 'executables'],
    ['an open egress', edit((p) => (p.egress = 'allow-all')), 'egress'],
    ['a missing egress', edit((p) => delete (p as Record<string, unknown>)['egress']), 'egress'],
    ['a CPU quantity in words', edit((p) => (p.resources.command.cpu = 'two')), 'resources.command.cpu'],
    [
      'a memory quantity without a unit',
      edit((p) => (p.resources.collector.memory = '512')),
      'resources.collector.memory',
    ],
    [
      'a zero timeout',
      edit((p) => (p.resources.commandTimeoutSeconds = 0)),
      'resources.commandTimeoutSeconds',
    ],
    ['an unknown version', edit((p) => (p.versions = ['v3'])), 'versions.0'],
    ['a collector without its mode flag', edit((p) => (p.collector.args = ['--serve'])), 'collector.args'],
    ['an unknown field', edit((p) => (p['shell'] = '/bin/sh')), '(file)'],
  ])('refuses %s, naming %s', async (_name, document, path) => {
    const found = await problemsFor(document);
    expect(found.length).toBeGreaterThan(0);
    expect(found.join('\n')).toContain(`SANDLOT_BUILDTEST_PROFILE_FILE: ${path}: `);
  });

  it('names every bad field at once', async () => {
    const found = await problemsFor(
      edit((p) => {
        p.images.command = 'nope';
        p.egress = 'allow-all';
        p.resources.command.memory = 'lots';
      }),
    );
    const text = found.join('\n');
    expect(text).toContain('images.command: ');
    expect(text).toContain('egress: ');
    expect(text).toContain('resources.command.memory: ');
  });

  it('refuses a credential-shaped field by path, never showing its value', async () => {
    const found = await problemsFor(edit((p) => (p['registryPassword'] = 'hunter2')));
    expect(found.join('\n')).toContain('registryPassword: looks like a credential');
    expect(found.join('\n')).not.toContain('hunter2');
  });

  it('refuses a file that is missing or not JSON', async () => {
    expect(problems({ SANDLOT_BUILDTEST_PROFILE_FILE: join(dir, 'absent.json') }).join('\n')).toContain(
      'cannot read the file (ENOENT)',
    );
    expect(problems({ SANDLOT_BUILDTEST_PROFILE_FILE: await fileWith('{') }).join('\n')).toContain(
      'not valid JSON',
    );
  });
});

describe('SANDLOT_CORE_URL', () => {
  it('is required in production when a BuildTest profile is set', async () => {
    const path = await fileWith(JSON.stringify(PROFILE));
    // The workers' own Core credential is there, so the Core URL is the one problem
    // (core-token-config.test.ts checks the credential).
    const provider = { SANDLOT_CORE_TOKEN_FILE: await fileWith('worker-token') };
    expect(problems({ ...PRODUCTION, ...provider, SANDLOT_BUILDTEST_PROFILE_FILE: path })).toEqual([
      'SANDLOT_CORE_URL: required in production when SANDLOT_BUILDTEST_PROFILE_FILE is set',
    ]);
    const config = loadConfig({
      ...PRODUCTION,
      ...provider,
      SANDLOT_BUILDTEST_PROFILE_FILE: path,
      SANDLOT_CORE_URL: 'https://core.example/api',
    });
    expect(config.coreUrl).toBe('https://core.example/api');
  });

  it('is not needed without a profile, nor in embedded mode (the embedded Core stands in)', async () => {
    expect(problems(PRODUCTION)).toEqual([]);
    const config = loadConfig({ SANDLOT_BUILDTEST_PROFILE_FILE: await fileWith(JSON.stringify(PROFILE)) });
    expect(config.coreUrl).toBeUndefined();
  });

  it.each([
    'http://core.example/',
    'https://user:pw@core.example/',
    'https://core.example/?a=1',
    'not a url',
  ])('refuses %s in production', (url) => {
    expect(problems({ ...PRODUCTION, SANDLOT_CORE_URL: url }).join('\n')).toContain(
      'SANDLOT_CORE_URL: expected an https://',
    );
  });

  it('accepts http on loopback', () => {
    expect(loadConfig({ ...PRODUCTION, SANDLOT_CORE_URL: 'http://127.0.0.1:9000/' }).coreUrl).toBe(
      'http://127.0.0.1:9000/',
    );
  });
});
