import { describe, expect, it } from 'vitest';
import { parseSnapshot, shutdownGraceOf, snapshotOf } from './options-snapshot.ts';
import { AgentSandboxOptionsError, loadAgentSandboxOptions } from './options.ts';
import { DIGEST, P, validEnv } from '../../test/support/agent-sandbox-fixtures.ts';

const exists = () => true;

function problemsOf(env: Record<string, string | undefined>, fileExists: (p: string) => boolean = exists) {
  try {
    loadAgentSandboxOptions(env, fileExists);
  } catch (error) {
    expect(error).toBeInstanceOf(AgentSandboxOptionsError);
    return Object.fromEntries(
      (error as AgentSandboxOptionsError).problems.map((p) => [p.variable, p.reason]),
    );
  }
  throw new Error('expected the settings to be refused');
}

describe('loadAgentSandboxOptions', () => {
  it('reads every setting', () => {
    const options = loadAgentSandboxOptions(validEnv(), exists);
    expect(options).toMatchObject({
      optionsSchemaVersion: 2,
      optionsRevision: 'rev-2024.06_1',
      namespace: 'sandboxes',
      containerImageCompressedPullBytes: 734003200,
      cpuRequest: '500m',
      memoryRequest: '2Gi',
      reconciliationTimeoutSeconds: 120,
      pollIntervalMilliseconds: 250,
      connection: { kind: 'kubeconfig', path: '/etc/sandlot/kubeconfig' },
    });
  });

  it('names every bad variable in one error', () => {
    const env = validEnv({
      [`${P}OPTIONS_SCHEMA_VERSION`]: '1',
      [`${P}OPTIONS_REVISION`]: 'has space',
      [`${P}NAMESPACE`]: 'Not_A_Label',
      [`${P}WORKSPACE_STORAGE_PROVIDER_ID`]: 'nfs',
      [`${P}CONTAINER_IMAGE`]: 'registry.example.com/agenthost:latest',
      [`${P}CONTAINER_IMAGE_PLATFORM`]: 'linux/arm64',
      [`${P}CONTAINER_IMAGE_COMPRESSED_PULL_BYTES`]: '0',
      [`${P}CPU_REQUEST`]: '1000',
      [`${P}MEMORY_REQUEST`]: '1Mi',
      [`${P}RECONCILIATION_TIMEOUT_SECONDS`]: '3601',
      [`${P}POLL_INTERVAL_MILLISECONDS`]: '10',
      [`${P}RUNTIME_CLASS_NAME`]: undefined,
    });
    const problems = problemsOf(env);
    expect(Object.keys(problems).sort()).toEqual(
      [
        'OPTIONS_SCHEMA_VERSION',
        'OPTIONS_REVISION',
        'NAMESPACE',
        'WORKSPACE_STORAGE_PROVIDER_ID',
        'CONTAINER_IMAGE',
        'CONTAINER_IMAGE_PLATFORM',
        'CONTAINER_IMAGE_COMPRESSED_PULL_BYTES',
        'CPU_REQUEST',
        'MEMORY_REQUEST',
        'RECONCILIATION_TIMEOUT_SECONDS',
        'POLL_INTERVAL_MILLISECONDS',
        'RUNTIME_CLASS_NAME',
      ]
        .map((name) => P + name)
        .sort(),
    );
    expect(problems[`${P}RUNTIME_CLASS_NAME`]).toBe('required');
    expect(problems[`${P}OPTIONS_SCHEMA_VERSION`]).toBe('must be 2');
  });

  it.each([
    ['a tag instead of a digest', 'registry.example.com/agenthost:1.2'],
    ['a short digest', 'registry.example.com/agenthost@sha256:abc'],
    ['a tag and a digest', `registry.example.com/agenthost:1.2@sha256:${DIGEST}`],
    ['no registry path', `agenthost@sha256:${DIGEST}`],
  ])('refuses an image with %s', (_case, image) => {
    expect(problemsOf(validEnv({ [`${P}CONTAINER_IMAGE`]: image }))).toHaveProperty(`${P}CONTAINER_IMAGE`);
  });

  it.each(['10m', '0.5', '64', '2'])('accepts CPU %s', (cpu) => {
    expect(loadAgentSandboxOptions(validEnv({ [`${P}CPU_REQUEST`]: cpu }), exists).cpuRequest).toBe(cpu);
  });

  it.each(['9m', '65', '1.2345', '-1', '1e3'])('refuses CPU %s', (cpu) => {
    expect(problemsOf(validEnv({ [`${P}CPU_REQUEST`]: cpu }))).toHaveProperty(`${P}CPU_REQUEST`);
  });

  it('needs KUBECONFIG or a service account, and never NODE_TLS_REJECT_UNAUTHORIZED=0', () => {
    expect(problemsOf(validEnv(), () => false)).toEqual({ KUBECONFIG: 'file not found' });
    expect(problemsOf(validEnv({ NODE_TLS_REJECT_UNAUTHORIZED: '0' }))).toHaveProperty(
      'NODE_TLS_REJECT_UNAUTHORIZED',
    );
    // Neither KUBECONFIG nor the in-cluster files: not in a cluster, said once, naming both ways.
    const reason = problemsOf(validEnv({ KUBECONFIG: undefined }), () => false)['KUBECONFIG'];
    expect(reason).toMatch(/SANDLOT_KUBERNETES_SERVICE_ACCOUNT_TOKEN_FILE/);
    expect(reason).toMatch(/\/var\/run\/secrets\/kubernetes\.io\/serviceaccount\/token/);
  });
});

describe('the Kubernetes connection settings (without KUBECONFIG)', () => {
  const K = 'SANDLOT_KUBERNETES_';
  const inCluster = (overrides: Record<string, string | undefined> = {}) =>
    validEnv({ KUBECONFIG: undefined, ...overrides });

  it('default to the in-cluster API server, service-account token and CA', () => {
    expect(loadAgentSandboxOptions(inCluster(), exists).connection).toEqual({
      kind: 'in-cluster',
      server: 'https://kubernetes.default.svc',
      tokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token',
      caFile: '/var/run/secrets/kubernetes.io/serviceaccount/ca.crt',
    });
    // KUBERNETES_SERVICE_HOST is not where the server comes from: the setting (or its default) is.
    expect(
      loadAgentSandboxOptions(inCluster({ KUBERNETES_SERVICE_HOST: '10.0.0.1' }), exists).connection,
    ).toMatchObject({ server: 'https://kubernetes.default.svc' });
  });

  it('reads the API server, token file and CA file from their settings', () => {
    const seen: string[] = [];
    const env = inCluster({
      [`${K}API_SERVER`]: 'https://api.cluster.example.com:6443/',
      [`${K}SERVICE_ACCOUNT_TOKEN_FILE`]: '/etc/sandlot/kube/token',
      [`${K}CERTIFICATE_AUTHORITY_FILE`]: '/etc/sandlot/kube/ca.crt',
    });
    const files = (path: string) => {
      seen.push(path);
      return true;
    };
    expect(loadAgentSandboxOptions(env, files).connection).toEqual({
      kind: 'in-cluster',
      server: 'https://api.cluster.example.com:6443',
      tokenFile: '/etc/sandlot/kube/token',
      caFile: '/etc/sandlot/kube/ca.crt',
    });
    expect(seen).toEqual(expect.arrayContaining(['/etc/sandlot/kube/token', '/etc/sandlot/kube/ca.crt']));
    expect(
      loadAgentSandboxOptions(inCluster({ [`${K}API_SERVER`]: 'https://10.0.0.1/k8s/clusters/c-1' }), exists)
        .connection,
    ).toMatchObject({ server: 'https://10.0.0.1/k8s/clusters/c-1' });
  });

  it.each([
    ['plain http', 'http://kubernetes.default.svc/'],
    ['not a URL', 'kubernetes.default.svc'],
    ['credentials in the URL', 'https://admin:secret@kubernetes.default.svc/'],
    ['a query', 'https://kubernetes.default.svc/?insecure=1'],
    ['a fragment', 'https://kubernetes.default.svc/#x'],
  ])('refuse an API server with %s, without echoing it', (_case, server) => {
    const problems = problemsOf(inCluster({ [`${K}API_SERVER`]: server }));
    expect(Object.keys(problems)).toEqual([`${K}API_SERVER`]);
    expect(problems[`${K}API_SERVER`]).toMatch(/https/);
    expect(JSON.stringify(problems)).not.toContain('secret');
  });

  it('name the token or CA setting whose file is missing', () => {
    const env = inCluster({
      [`${K}SERVICE_ACCOUNT_TOKEN_FILE`]: '/etc/sandlot/kube/token',
      [`${K}CERTIFICATE_AUTHORITY_FILE`]: '/etc/sandlot/kube/ca.crt',
    });
    expect(problemsOf(env, (path) => path.endsWith('ca.crt'))).toEqual({
      [`${K}SERVICE_ACCOUNT_TOKEN_FILE`]: 'file not found: /etc/sandlot/kube/token',
    });
    expect(problemsOf(env, (path) => path.endsWith('token'))).toEqual({
      [`${K}CERTIFICATE_AUTHORITY_FILE`]: 'file not found: /etc/sandlot/kube/ca.crt',
    });
    // A default file missing while the other was set: the default's own setting is named.
    const tokenOnly = inCluster({ [`${K}SERVICE_ACCOUNT_TOKEN_FILE`]: '/etc/sandlot/kube/token' });
    expect(problemsOf(tokenOnly, (path) => path === '/etc/sandlot/kube/token')).toEqual({
      [`${K}CERTIFICATE_AUTHORITY_FILE`]:
        'file not found: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt (the in-cluster default)',
    });
  });

  it('refuse them beside KUBECONFIG: one way to reach the cluster', () => {
    expect(problemsOf(validEnv({ [`${K}API_SERVER`]: 'https://api.example.com/' }))).toEqual({
      [`${K}API_SERVER`]: 'set with KUBECONFIG; use one or the other',
    });
  });
});

describe('options snapshot', () => {
  const pin = 'b'.repeat(64);

  it('carries what a lease needs and the cluster pin, and never a credential', () => {
    const snapshot = snapshotOf(loadAgentSandboxOptions(validEnv(), exists), pin);
    expect(snapshot).toMatchObject({ namespace: 'sandboxes', clusterPin: pin, cpu: '500m', memory: '2Gi' });
    expect(JSON.stringify(snapshot)).not.toMatch(/token|kubeconfig|password|secret/i);
    expect(parseSnapshot(JSON.parse(JSON.stringify(snapshot)) as Record<string, unknown>)).toEqual(snapshot);
  });

  it('refuses a snapshot the adapter did not write, definitively', () => {
    const snapshot = snapshotOf(loadAgentSandboxOptions(validEnv(), exists), pin);
    for (const bad of [
      {},
      { ...snapshot, namespace: 'Bad_NS' },
      { ...snapshot, extra: 1 },
      { ...snapshot, clusterPin: 'x' },
    ]) {
      expect(() => parseSnapshot(bad)).toThrow(expect.objectContaining({ kind: 'definitive' }));
    }
  });
});

describe('the AgentHost profile and the shutdown grace', () => {
  const profile = {
    [`${P}AGENT_HOST_CONFIG_MAP_NAME`]: 'agenthost-config',
    [`${P}AGENT_HOST_TLS_SECRET_NAME`]: 'agenthost-tls',
  };

  it('reads both profile names, and the grace (a day unless set)', () => {
    expect(loadAgentSandboxOptions(validEnv(), exists)).not.toHaveProperty('agentHost');
    expect(loadAgentSandboxOptions(validEnv(), exists).shutdownGraceSeconds).toBe(86_400);
    const options = loadAgentSandboxOptions(
      validEnv({ ...profile, [`${P}SHUTDOWN_GRACE_SECONDS`]: '7200' }),
      exists,
    );
    expect(options.agentHost).toEqual({ configMapName: 'agenthost-config', tlsSecretName: 'agenthost-tls' });
    expect(options.shutdownGraceSeconds).toBe(7200);
  });

  it('refuses half a profile, names that are not DNS labels, and a grace out of bounds', () => {
    expect(problemsOf(validEnv({ [`${P}AGENT_HOST_CONFIG_MAP_NAME`]: 'agenthost-config' }))).toEqual({
      [`${P}AGENT_HOST_TLS_SECRET_NAME`]: 'required with the other AgentHost profile name',
    });
    expect(
      Object.keys(problemsOf(validEnv({ ...profile, [`${P}AGENT_HOST_TLS_SECRET_NAME`]: 'Bad.Name' }))),
    ).toEqual([`${P}AGENT_HOST_TLS_SECRET_NAME`]);
    for (const grace of ['59', '2592001', 'day']) {
      expect(problemsOf(validEnv({ [`${P}SHUTDOWN_GRACE_SECONDS`]: grace }))).toHaveProperty(
        `${P}SHUTDOWN_GRACE_SECONDS`,
      );
    }
  });

  it('freezes the profile names and the grace into the snapshot; older snapshots without them still parse', () => {
    const pin = 'b'.repeat(64);
    const snapshot = snapshotOf(loadAgentSandboxOptions(validEnv(profile), exists), pin);
    expect(snapshot).toMatchObject({
      agentHost: { configMapName: 'agenthost-config', tlsSecretName: 'agenthost-tls' },
      shutdownGraceSeconds: 86_400,
    });
    expect(parseSnapshot(JSON.parse(JSON.stringify(snapshot)) as Record<string, unknown>)).toEqual(snapshot);
    const older: Record<string, unknown> = { ...snapshot };
    delete older.agentHost;
    delete older.shutdownGraceSeconds;
    expect(shutdownGraceOf(parseSnapshot(older))).toBe(86_400);
    expect(() => parseSnapshot({ ...snapshot, agentHost: { configMapName: 'x' } })).toThrow(
      expect.objectContaining({ kind: 'definitive' }),
    );
  });
});
