import { describe, expect, it } from 'vitest';
import { describeConfig } from '../../config/describe.ts';
import { ConfigError } from '../../config/errors.ts';
import { loadConfig } from '../../config/load.ts';
import { displayValue } from '../../config/redact.ts';
import {
  loadSandboxHostSettings,
  parseListen,
  SandboxHostSettingsError,
} from '../../providers/sandbox-host/settings.ts';

const PRODUCTION = {
  DATABASE_URL: 'postgres://sandlot@db.internal:5432/sandlot',
  SANDLOT_JWT_ISSUER: 'https://id.example.com/',
  SANDLOT_JWKS_URL: 'https://id.example.com/.well-known/jwks.json',
  SANDLOT_PROJECTS_URL: 'https://projects.internal/',
  SANDLOT_RUN_SELECTION_URL: 'http://run-selection.internal:8081/',
};

function configError(env: Record<string, string | undefined>): ConfigError {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected loadConfig to throw ConfigError');
}

describe('loadConfig', () => {
  it('runs embedded with documented defaults when nothing is set', () => {
    expect(loadConfig({ PATH: '/usr/bin' })).toEqual({
      mode: 'embedded',
      host: '127.0.0.1',
      port: 8080,
      dataDir: '.sandlot',
      migrateOnStart: true,
      logLevel: 'info',
      auth: { issuer: 'sandlot-embedded', audience: 'sandlot', algorithms: ['RS256', 'ES256'] },
      provider: { id: 'simulated', optionsRevision: '1' },
      simulated: { seed: 1 },
      workers: {
        callTimeoutMs: 30_000,
        reconcileEveryMs: 5_000,
        observeEveryMs: 15_000,
        observeResyncMs: 300_000,
        backoffMaxMs: 30_000,
        pruneEveryMs: 600_000,
        retentionDays: 30,
        queueLockMs: 5_000,
        prefix: 'sandlot',
      },
    });
  });

  it('treats blank variables as unset', () => {
    expect(loadConfig({ DATABASE_URL: '', PORT: '  ', LOG_LEVEL: '' })).toMatchObject({
      mode: 'embedded',
      port: 8080,
      logLevel: 'info',
    });
  });

  it('runs in production when DATABASE_URL is set, listening on all interfaces', () => {
    expect(
      loadConfig({ ...PRODUCTION, REDIS_URL: 'rediss://cache:6380', SANDLOT_MIGRATE_ON_START: '0' }),
    ).toEqual({
      mode: 'production',
      host: '0.0.0.0',
      port: 8080,
      dataDir: '.sandlot',
      databaseUrl: PRODUCTION.DATABASE_URL,
      redisUrl: 'rediss://cache:6380',
      migrateOnStart: false,
      logLevel: 'info',
      auth: {
        issuer: PRODUCTION.SANDLOT_JWT_ISSUER,
        audience: 'sandlot',
        jwksUrl: PRODUCTION.SANDLOT_JWKS_URL,
        algorithms: ['RS256', 'ES256'],
      },
      projectsUrl: PRODUCTION.SANDLOT_PROJECTS_URL,
      runSelectionUrl: PRODUCTION.SANDLOT_RUN_SELECTION_URL,
      provider: { id: 'simulated', optionsRevision: '1' },
      simulated: { seed: 1 },
      workers: {
        callTimeoutMs: 30_000,
        reconcileEveryMs: 5_000,
        observeEveryMs: 15_000,
        observeResyncMs: 300_000,
        backoffMaxMs: 30_000,
        pruneEveryMs: 600_000,
        retentionDays: 30,
        queueLockMs: 5_000,
        prefix: 'sandlot',
      },
    });
  });

  it('production without its external services names every missing variable in one error', () => {
    const error = configError({ DATABASE_URL: PRODUCTION.DATABASE_URL });

    expect(error.code).toBe('config-invalid');
    expect(error.problems.map((p) => p.variable)).toEqual([
      'SANDLOT_JWT_ISSUER',
      'SANDLOT_JWKS_URL',
      'SANDLOT_PROJECTS_URL',
      'SANDLOT_RUN_SELECTION_URL',
    ]);
    expect(error.message).toMatch(
      /^Invalid configuration:\n {2}- SANDLOT_JWT_ISSUER: required in production/,
    );
  });

  it('embedded mode ignores the production-only service URLs', () => {
    const config = loadConfig({ SANDLOT_PROJECTS_URL: 'not a url', SANDLOT_RUN_SELECTION_URL: 'https://x/' });
    expect(config).not.toHaveProperty('projectsUrl');
    expect(config).not.toHaveProperty('runSelectionUrl');
  });

  it.each([
    ['127.0.0.1', 'http://127.0.0.1:9000/jwks'],
    ['localhost', 'http://localhost/jwks'],
    ['::1', 'http://[::1]:9000/jwks'],
  ])('accepts a plain-http JWKS URL on loopback (%s)', (_host, url) => {
    expect(loadConfig({ SANDLOT_JWKS_URL: url }).auth.jwksUrl).toBe(url);
  });

  it('accepts true/false/1/0 in any case for SANDLOT_MIGRATE_ON_START', () => {
    expect(loadConfig({ SANDLOT_MIGRATE_ON_START: 'FALSE' }).migrateOnStart).toBe(false);
    expect(loadConfig({ SANDLOT_MIGRATE_ON_START: '1' }).migrateOnStart).toBe(true);
  });

  it('parses and deduplicates the algorithm list', () => {
    expect(loadConfig({ SANDLOT_JWT_ALGORITHMS: ' EdDSA, PS256,EdDSA' }).auth.algorithms).toEqual([
      'EdDSA',
      'PS256',
    ]);
  });

  it.each([
    ['1. a word for PORT', { PORT: 'abc' }, 'PORT: expected an integer between 1 and 65535, got "abc"'],
    ['2. PORT zero', { PORT: '0' }, 'PORT: expected an integer between 1 and 65535, got "0"'],
    ['3. PORT above 65535', { PORT: '65536' }, 'PORT: expected an integer between 1 and 65535'],
    ['4. a fractional PORT', { PORT: '80.5' }, 'PORT: expected an integer'],
    ['5. a MySQL DATABASE_URL', { DATABASE_URL: 'mysql://db/x' }, 'DATABASE_URL: expected a postgres://'],
    ['6. DATABASE_URL not a URL', { DATABASE_URL: 'db.internal' }, 'DATABASE_URL: expected a postgres://'],
    [
      '7. an http REDIS_URL',
      { REDIS_URL: 'http://cache' },
      'REDIS_URL: expected a redis:// or rediss:// URL',
    ],
    ['8. plain-http JWKS off loopback', { SANDLOT_JWKS_URL: 'http://id.example.com/' }, 'SANDLOT_JWKS_URL'],
    ['9. HS256 in the algorithms', { SANDLOT_JWT_ALGORITHMS: 'RS256,HS256' }, 'unsupported HS256'],
    ['10. an empty algorithm list', { SANDLOT_JWT_ALGORITHMS: ',' }, 'SANDLOT_JWT_ALGORITHMS: expected'],
    ['11. an unknown LOG_LEVEL', { LOG_LEVEL: 'verbose' }, 'LOG_LEVEL: expected one of fatal'],
    [
      '12. "yes" for a boolean',
      { SANDLOT_MIGRATE_ON_START: 'yes' },
      'SANDLOT_MIGRATE_ON_START: expected true',
    ],
    [
      '13. an unknown provider',
      { SANDLOT_PROVIDER: 'kubernetes' },
      'SANDLOT_PROVIDER: expected one of simulated',
    ],
    [
      '14. a revision with a space',
      { SANDLOT_PROVIDER_OPTIONS_REVISION: 'v 2' },
      'SANDLOT_PROVIDER_OPTIONS_REVISION',
    ],
    [
      '15. a 65-character revision',
      { SANDLOT_PROVIDER_OPTIONS_REVISION: 'r'.repeat(65) },
      'REVISION: expected 1 to 64',
    ],
    [
      '16. an ftp Projects URL',
      { ...PRODUCTION, SANDLOT_PROJECTS_URL: 'ftp://p/' },
      'SANDLOT_PROJECTS_URL: expected an http',
    ],
  ])('refuses %s', (_case, env, expected) => {
    expect(configError(env).message).toContain(expected);
  });

  it('lists every bad and missing variable together', () => {
    const error = configError({
      DATABASE_URL: PRODUCTION.DATABASE_URL,
      PORT: 'abc',
      SANDLOT_MIGRATE_ON_START: 'yes',
    });
    expect(error.problems.map((p) => p.variable).sort()).toEqual([
      'PORT',
      'SANDLOT_JWKS_URL',
      'SANDLOT_JWT_ISSUER',
      'SANDLOT_MIGRATE_ON_START',
      'SANDLOT_PROJECTS_URL',
      'SANDLOT_RUN_SELECTION_URL',
    ]);
  });
});

describe('secrets in configuration', () => {
  const password = 'hunter2-s3cret';

  it.each([
    ['a wrong scheme', { DATABASE_URL: `mysql://app:${password}@db/x` }],
    ['a valid URL beside other problems', { DATABASE_URL: `postgres://app:${password}@db/x`, PORT: 'x' }],
    ['a password query parameter', { DATABASE_URL: `mysql://db/x?password=${password}` }],
    ['an unparseable URL', { DATABASE_URL: `postgres://app:${password}@` }],
    ['a URL pasted into HOST', { HOST: `postgres://app:${password}@db/x`, PORT: 'x' }],
    ['a token query parameter', { SANDLOT_JWKS_URL: `http://id.example.com/?token=${password}` }],
  ])('never shows a password in error messages (%s)', (_case, env) => {
    const error = configError(env);
    expect(error.message).not.toContain(password);
    expect(JSON.stringify(error.problems)).not.toContain(password);
  });

  it('shows nothing of a variable whose name suggests a secret', () => {
    expect(displayValue('SANDLOT_API_KEY', password)).toBeUndefined();
    expect(displayValue('WEBHOOK_SECRET', password)).toBeUndefined();
    expect(displayValue('PORT', 'abc')).toBe('abc');
  });

  it('describeConfig strips credentials from every URL', () => {
    const config = loadConfig({
      ...PRODUCTION,
      DATABASE_URL: `postgres://app:${password}@db.internal:5432/sandlot?sslmode=require&password=${password}`,
      REDIS_URL: `rediss://default:${password}@cache:6380`,
    });

    const summary = describeConfig(config);
    expect(JSON.stringify(summary)).not.toContain(password);
    expect(summary.databaseUrl).toBe('postgres://db.internal:5432/sandlot?sslmode=require&password=redacted');
    expect(summary.redisUrl).toBe('rediss://cache:6380');
    expect(config.databaseUrl).toContain(password);
  });
});

describe('SANDLOT_WORKER_HEALTH_PORT and _HOST', () => {
  it('has no probe listener when the port is unset or 0', () => {
    expect(loadConfig(PRODUCTION).workerHealth).toBeUndefined();
    expect(loadConfig({ ...PRODUCTION, SANDLOT_WORKER_HEALTH_PORT: '0' }).workerHealth).toBeUndefined();
  });

  it('listens on loopback by default, and where the host says', () => {
    expect(loadConfig({ ...PRODUCTION, SANDLOT_WORKER_HEALTH_PORT: '8081' }).workerHealth).toEqual({
      host: '127.0.0.1',
      port: 8081,
    });
    expect(
      loadConfig({ ...PRODUCTION, SANDLOT_WORKER_HEALTH_PORT: '8081', SANDLOT_WORKER_HEALTH_HOST: '0.0.0.0' })
        .workerHealth,
    ).toEqual({ host: '0.0.0.0', port: 8081 });
  });

  it('refuses a port that is not one', () => {
    expect(configError({ ...PRODUCTION, SANDLOT_WORKER_HEALTH_PORT: '70000' }).message).toContain(
      'SANDLOT_WORKER_HEALTH_PORT',
    );
  });
});

describe('SANDLOT_EVENTS_URL', () => {
  it('is kept in production only (embedded mode stands in for Events)', () => {
    const url = 'https://events.internal/api/';
    expect(loadConfig({ ...PRODUCTION, SANDLOT_EVENTS_URL: url }).eventsUrl).toBe(url);
    expect(loadConfig({ SANDLOT_EVENTS_URL: url }).eventsUrl).toBeUndefined();
    expect(loadConfig(PRODUCTION).eventsUrl).toBeUndefined();
  });

  it.each([
    'http://events.internal/',
    'https://u:p@events.internal/',
    'https://events.internal/?a=1',
    'nope',
  ])('refuses %s in production', (url) => {
    expect(configError({ ...PRODUCTION, SANDLOT_EVENTS_URL: url }).message).toContain(
      'SANDLOT_EVENTS_URL: expected an https://',
    );
  });

  it('accepts http on loopback', () => {
    const url = 'http://127.0.0.1:9100/';
    expect(loadConfig({ ...PRODUCTION, SANDLOT_EVENTS_URL: url }).eventsUrl).toBe(url);
  });
});

describe('SANDLOT_PROVIDER=sandbox-host', () => {
  it('is an accepted provider', () => {
    expect(loadConfig({ SANDLOT_PROVIDER: 'sandbox-host' }).provider.id).toBe('sandbox-host');
    expect(configError({ SANDLOT_PROVIDER: 'hosts' }).message).toContain('sandbox-host');
  });

  function settingsError(env: Record<string, string>, read?: (path: string) => Buffer) {
    try {
      loadSandboxHostSettings(env, read);
    } catch (error) {
      if (error instanceof SandboxHostSettingsError) return error;
      throw error;
    }
    throw new Error('expected SandboxHostSettingsError');
  }

  it('names every missing setting, and takes the default listen address', () => {
    const variables = settingsError({}).problems.map((p) => p.variable);
    expect(variables).toEqual([
      'SANDLOT_HOST_CONTROL_CERT_FILE',
      'SANDLOT_HOST_CONTROL_KEY_FILE',
      'SANDLOT_HOST_CLIENT_CA_FILE',
      'SANDLOT_HOST_SIGNING_KEY_FILE',
      'SANDLOT_HOST_SIGNING_KEY_VERSION',
    ]);
  });

  it('names a bad listen address, a bad version and unreadable or wrong files without their contents', () => {
    const secret = '-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWJ5dGVz\n-----END PRIVATE KEY-----\n';
    const error = settingsError(
      {
        SANDLOT_HOST_CONTROL_LISTEN: '127.0.0.1',
        SANDLOT_HOST_CONTROL_CERT_FILE: '/nope/cert.pem',
        SANDLOT_HOST_CONTROL_KEY_FILE: '/keys/key.pem',
        SANDLOT_HOST_CLIENT_CA_FILE: '/keys/key.pem',
        SANDLOT_HOST_SIGNING_KEY_FILE: '/keys/key.pem',
        SANDLOT_HOST_SIGNING_KEY_VERSION: '0',
      },
      (path) => {
        if (path.startsWith('/nope')) throw Object.assign(new Error('gone'), { code: 'ENOENT' });
        return Buffer.from(secret);
      },
    );
    expect(error.message).toContain('SANDLOT_HOST_CONTROL_LISTEN: expected host:port');
    expect(error.message).toContain('SANDLOT_HOST_CONTROL_CERT_FILE: cannot read the file (ENOENT)');
    expect(error.message).toContain('SANDLOT_HOST_CONTROL_KEY_FILE: expected a PEM private key');
    expect(error.message).toContain('SANDLOT_HOST_CLIENT_CA_FILE: expected PEM CA certificate(s)');
    expect(error.message).toContain('SANDLOT_HOST_SIGNING_KEY_FILE: expected an Ed25519 private key');
    expect(error.message).toContain('SANDLOT_HOST_SIGNING_KEY_VERSION: expected a positive integer');
    expect(error.message).not.toContain('c2VjcmV0');
  });

  it.each([
    ['127.0.0.1:7443', { host: '127.0.0.1', port: 7443 }],
    ['0.0.0.0:0', { host: '0.0.0.0', port: 0 }],
    ['[::1]:7443', { host: '::1', port: 7443 }],
    ['control.internal:443', { host: 'control.internal', port: 443 }],
  ])('parses the listen address %s', (value, expected) => {
    expect(parseListen(value)).toEqual(expected);
  });

  it.each(['7443', 'host:65536', 'host:-1', ':7443', 'a b:1'])('refuses the listen address %s', (value) => {
    expect(typeof parseListen(value)).toBe('string');
  });
});
