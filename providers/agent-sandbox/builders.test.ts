// The objects the adapter creates, checked against the real CRD schemas (read at run time from the
// folder SANDLOT_CRD_DIR names, test/support/crd-dir.ts) with unknown fields refused, as the API
// server does under Strict.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Ajv, type ValidateFunction } from 'ajv';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { newOwner } from '../../test/contract/contract-subject.ts';
import { buildClaim, buildPool, buildTemplate, type Blueprint } from './builders.ts';
import { field, type KubeObject } from './kube-object.ts';
import { isLabelValue, LABELS, objectNames, projectHashOf } from './names.ts';
import { snapshotOf } from './options-snapshot.ts';
import { loadAgentSandboxOptions } from './options.ts';
import { validEnv } from '../../test/support/agent-sandbox-fixtures.ts';
import { validateClaim, validatePool, validateTemplate } from './validate-objects.ts';
import { crdPath, skipWithoutCrds } from '../../test/support/crd-dir.ts';

/** Objects admit only declared properties unless the schema preserves unknown fields. */
function strict(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(strict);
  if (typeof node !== 'object' || node === null) return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    out[key] =
      key === 'properties'
        ? Object.fromEntries(Object.entries(value as object).map(([k, v]) => [k, strict(v)]))
        : strict(value);
  }
  const schema = node as Record<string, unknown>;
  if (
    schema.type === 'object' &&
    schema['x-kubernetes-preserve-unknown-fields'] !== true &&
    schema.additionalProperties === undefined
  ) {
    out.additionalProperties = false;
  }
  return out;
}

const ajv = new Ajv({
  strict: false,
  allErrors: true,
  validateFormats: false,
  unicodeRegExp: false,
  code: { optimize: false },
});

function validatorFor(file: string): ValidateFunction {
  const crd = parse(readFileSync(crdPath(file), 'utf8')) as {
    spec: {
      group: string;
      versions: { name: string; schema: { openAPIV3Schema: Record<string, unknown> } }[];
    };
  };
  const version = crd.spec.versions.find((v) => v.name === 'v1beta1');
  if (version === undefined) throw new Error(`${file} serves no v1beta1`);
  const schema = strict(version.schema.openAPIV3Schema) as Record<string, unknown>;
  // ObjectMeta is validated by the API server outside the CRD schema.
  schema.properties = { ...(schema.properties as object), metadata: { type: 'object' } };
  return ajv.compile(schema);
}

const crdFiles = {
  SandboxTemplate: 'extensions.agents.x-k8s.io_sandboxtemplates.yaml',
  SandboxWarmPool: 'extensions.agents.x-k8s.io_sandboxwarmpools.yaml',
  SandboxClaim: 'extensions.agents.x-k8s.io_sandboxclaims.yaml',
};
// Compiled on first use, so the file loads (and its other tests run) without the schemas.
const validators = new Map<string, ValidateFunction>();

function schemaErrors(object: KubeObject): string[] {
  const file = crdFiles[object.kind as keyof typeof crdFiles];
  const validate = validators.get(file) ?? validatorFor(file);
  validators.set(file, validate);
  return validate(structuredClone(object))
    ? []
    : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message ?? ''}`);
}

const owner = newOwner({ operationId: `op_${'q'.repeat(32)}`, resourceGeneration: 4, providerFence: 4 });
const snapshot = snapshotOf(
  loadAgentSandboxOptions(validEnv(), () => true),
  'c'.repeat(64),
);
const blueprint: Blueprint = {
  owner,
  names: objectNames(owner.operationId),
  snapshot,
  workspace: {
    pvcName: 'vol-0123abcd',
    pvcUid: '6a1e0c1e-0000-4000-8000-000000000001',
    resourceGeneration: 4,
    dataGeneration: 0,
    mountPath: '/workspace',
    readOnly: false,
  },
  networkPolicyGeneration: 7,
};

describe.skipIf(skipWithoutCrds)('object builders against the v1beta1 CRD schemas', () => {
  it.each([
    ['SandboxTemplate', buildTemplate(blueprint)],
    ['SandboxWarmPool', buildPool(blueprint)],
    ['SandboxClaim', buildClaim(blueprint)],
  ])('build a %s the v1beta1 CRD schema accepts', (kind, object) => {
    expect(object.kind).toBe(kind);
    expect(object.apiVersion).toBe('extensions.agents.x-k8s.io/v1beta1');
    expect(schemaErrors(object)).toEqual([]);
  });

  it('would catch a field the schema does not know', () => {
    const claim = buildClaim(blueprint);
    expect(schemaErrors({ ...claim, spec: { ...claim.spec, priority: 1 } })).not.toEqual([]);
  });
});

describe('object builders', () => {
  it('stamp every ownership label, each a valid label value, on every object', () => {
    for (const object of [buildTemplate(blueprint), buildPool(blueprint), buildClaim(blueprint)]) {
      const labels = object.metadata?.labels ?? {};
      expect(labels[LABELS.ownerHash]).toBe(owner.ownerHash);
      expect(labels[LABELS.lifecycleGeneration]).toBe('1');
      expect(labels[LABELS.resourceGeneration]).toBe('4');
      expect(labels[LABELS.providerFence]).toBe('4');
      expect(labels[LABELS.operationId]).toBe(owner.operationId);
      for (const value of Object.values(labels)) expect(isLabelValue(value)).toBe(true);
      expect(object.metadata?.namespace).toBe(snapshot.namespace);
    }
  });

  it('pin the template: no token, no env injection, the runtime class, the PVC, resources as limits', () => {
    const spec = buildTemplate(blueprint).spec;
    const pod = field(spec, 'podTemplate', 'spec');
    const container = field(pod, 'containers', '0');
    expect(field(spec, 'envVarsInjectionPolicy')).toBe('Disallowed');
    expect(field(pod, 'automountServiceAccountToken')).toBe(false);
    expect(field(pod, 'runtimeClassName')).toBe(snapshot.runtimeClassName);
    expect(field(pod, 'volumes', '0', 'persistentVolumeClaim')).toEqual({
      claimName: 'vol-0123abcd',
      readOnly: false,
    });
    expect(field(container, 'resources', 'requests')).toEqual(field(container, 'resources', 'limits'));
    expect(field(container, 'securityContext')).toMatchObject({
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
    });
    expect(field(spec, 'podTemplate', 'metadata', 'labels')).toEqual({
      [LABELS.managedBy]: 'sandlot',
      [LABELS.networkPolicyGeneration]: '7',
      [LABELS.ownerHash]: owner.ownerHash,
      [LABELS.projectHash]: projectHashOf(owner.tenantId, owner.projectId),
    });
  });

  it('label the Pod with the project hash: the first 40 hex of SHA-256 over canonical [tenant, project]', () => {
    const labels = field(buildTemplate(blueprint).spec, 'podTemplate', 'metadata', 'labels') as Record<
      string,
      string
    >;
    const expected = createHash('sha256')
      .update(JSON.stringify([owner.tenantId, owner.projectId]))
      .digest('hex')
      .slice(0, 40);
    expect(labels[LABELS.projectHash]).toBe(expected);
    expect(isLabelValue(expected)).toBe(true);
    // Another project of the same tenant, or the same project name in another tenant, differs.
    expect(projectHashOf(owner.tenantId, `${owner.projectId}-2`)).not.toBe(expected);
    expect(projectHashOf(`${owner.tenantId}-2`, owner.projectId)).not.toBe(expected);
  });

  it('make a zero-replica pool naming the template and a DeleteForeground claim naming the pool', () => {
    expect(buildPool(blueprint).spec).toEqual({
      replicas: 0,
      sandboxTemplateRef: { name: blueprint.names.template },
    });
    expect(buildClaim(blueprint).spec).toEqual({
      warmPoolRef: { name: blueprint.names.pool },
      lifecycle: { shutdownPolicy: 'DeleteForeground' },
    });
  });

  it('pass their own read-back validation (with server-set UIDs)', () => {
    const withUid = (object: KubeObject) => ({ ...object, metadata: { ...object.metadata, uid: 'u-1' } });
    expect(validateTemplate(withUid(buildTemplate(blueprint)), owner, blueprint.names, snapshot)).toEqual({
      workspace: blueprint.workspace,
      networkPolicyGeneration: 7,
    });
    expect(() => validatePool(withUid(buildPool(blueprint)), owner, blueprint.names)).not.toThrow();
    expect(validateClaim(withUid(buildClaim(blueprint)), owner, blueprint.names)).toBe('u-1');
  });
});

const PROFILE_ENV = {
  SANDLOT_AGENT_SANDBOX_AGENT_HOST_CONFIG_MAP_NAME: 'agenthost-config',
  SANDLOT_AGENT_SANDBOX_AGENT_HOST_TLS_SECRET_NAME: 'agenthost-tls',
};
const profiled: Blueprint = {
  ...blueprint,
  snapshot: snapshotOf(
    loadAgentSandboxOptions(validEnv(PROFILE_ENV), () => true),
    'c'.repeat(64),
  ),
};
const withUid = (object: KubeObject) => ({ ...object, metadata: { ...object.metadata, uid: 'u-1' } });
const containerOf = (template: KubeObject) => field(template.spec, 'podTemplate', 'spec', 'containers', '0');

describe.skipIf(skipWithoutCrds)('object builders with the AgentHost profile and an expiry', () => {
  it.each([
    ['SandboxTemplate', buildTemplate(profiled)],
    ['SandboxClaim', buildClaim({ ...profiled, expiresAt: '2026-12-01T10:00:00.250Z' })],
  ])('build a %s the v1beta1 CRD schema accepts', (_kind, object) => {
    expect(schemaErrors(object)).toEqual([]);
  });
});

describe('the AgentHost launch profile in the template', () => {
  it('adds private state, read-only config/TLS/CA mounts, HTTPS 8443 with probes, labels and the Service', () => {
    const template = buildTemplate(profiled);
    const pod = field(template.spec, 'podTemplate', 'spec');
    const container = containerOf(template);
    expect(field(template.spec, 'service')).toBe(true);
    expect(field(pod, 'securityContext')).toMatchObject({ runAsUser: 1000, runAsGroup: 1000, fsGroup: 1000 });
    expect(field(pod, 'volumes')).toEqual(
      expect.arrayContaining([
        { name: 'agenthost-state', emptyDir: { sizeLimit: '1Gi' } },
        { name: 'agenthost-config', configMap: { name: 'agenthost-config' } },
        { name: 'agenthost-tls', secret: { secretName: 'agenthost-tls', defaultMode: 0o440 } },
        { name: 'service-backend-ca', configMap: { name: 'service-backend-ca' } },
      ]),
    );
    expect(field(container, 'volumeMounts')).toEqual(
      expect.arrayContaining([
        { name: 'agenthost-state', mountPath: '/var/lib/agenthost' },
        { name: 'agenthost-config', mountPath: '/etc/agenthost/config', readOnly: true },
        { name: 'agenthost-tls', mountPath: '/etc/agenthost/tls', readOnly: true },
        { name: 'service-backend-ca', mountPath: '/var/run/service-backend-ca', readOnly: true },
        { name: 'tmp', mountPath: '/tmp' },
      ]),
    );
    expect(field(container, 'ports')).toEqual([{ name: 'https', containerPort: 8443, protocol: 'TCP' }]);
    expect(field(container, 'readinessProbe', 'httpGet')).toEqual({
      path: '/health/ready',
      port: 8443,
      scheme: 'HTTPS',
    });
    expect(field(container, 'livenessProbe', 'httpGet')).toEqual({
      path: '/health/live',
      port: 8443,
      scheme: 'HTTPS',
    });
    expect(field(template.spec, 'podTemplate', 'metadata', 'labels')).toMatchObject({
      'agentweaver.io/workload': 'agenthost',
      'agentweaver.io/identity-client': 'true',
    });
  });

  it('runs the Host (the SDK) in the negotiated Workspace: workingDir is the Workspace mount path', () => {
    expect(field(containerOf(buildTemplate(profiled)), 'workingDir')).toBe('/workspace');
    const elsewhere = { ...profiled, workspace: { ...profiled.workspace, mountPath: '/srv/work' } };
    expect(field(containerOf(buildTemplate(elsewhere)), 'workingDir')).toBe('/srv/work');
    // Read back: a template whose Host starts anywhere else is not the lease's.
    for (const workingDir of [undefined, '/tmp']) {
      const drifted = withUid(buildTemplate(profiled));
      const container = containerOf(drifted) as Record<string, unknown>;
      if (workingDir === undefined) delete container['workingDir'];
      else container['workingDir'] = workingDir;
      expect(() => validateTemplate(drifted, owner, blueprint.names, profiled.snapshot)).toThrow(
        /working directory \/workspace/,
      );
    }
  });

  it('absent, leaves the legacy template: no Service, ports, probes or profile volumes', () => {
    const template = buildTemplate(blueprint);
    const container = containerOf(template);
    expect(field(template.spec, 'service')).toBeUndefined();
    expect(field(container, 'ports')).toBeUndefined();
    expect(field(container, 'readinessProbe')).toBeUndefined();
    expect(field(container, 'workingDir')).toBeUndefined();
    expect((field(template.spec, 'podTemplate', 'spec', 'volumes') as unknown[]).length).toBe(2);
  });

  it('passes its own read-back; a template without the profile, or with a writable TLS mount, is refused', () => {
    expect(() =>
      validateTemplate(withUid(buildTemplate(profiled)), owner, blueprint.names, profiled.snapshot),
    ).not.toThrow();
    expect(() =>
      validateTemplate(withUid(buildTemplate(blueprint)), owner, blueprint.names, profiled.snapshot),
    ).toThrow(expect.objectContaining({ kind: 'ownership', code: 'template-agent-host-mismatch' }));
    const drifted = withUid(buildTemplate(profiled));
    const mounts = field(containerOf(drifted), 'volumeMounts') as { name: string; readOnly?: boolean }[];
    delete mounts.find((m) => m.name === 'agenthost-tls')?.readOnly;
    expect(() => validateTemplate(drifted, owner, blueprint.names, profiled.snapshot)).toThrow(
      /read-only mount of agenthost-tls/,
    );
  });
});

describe('the claim’s backstop shutdown time', () => {
  const lifecycle = (expiresAt: string | null | undefined, b: Blueprint = blueprint) =>
    field(buildClaim(expiresAt === undefined ? b : { ...b, expiresAt }).spec, 'lifecycle');

  it('is the expiry plus the grace (a day by default), in whole seconds rounded up', () => {
    expect(lifecycle('2026-12-01T10:00:00Z')).toEqual({
      shutdownPolicy: 'DeleteForeground',
      shutdownTime: '2026-12-02T10:00:00Z',
    });
    expect(field(lifecycle('2026-12-01T10:00:00.001Z'), 'shutdownTime')).toBe('2026-12-02T10:00:01Z');
  });

  it('follows the snapshot’s grace', () => {
    const options = loadAgentSandboxOptions(
      validEnv({ SANDLOT_AGENT_SANDBOX_SHUTDOWN_GRACE_SECONDS: '7200' }),
      () => true,
    );
    const b = { ...blueprint, snapshot: snapshotOf(options, 'c'.repeat(64)) };
    expect(field(lifecycle('2026-12-01T10:00:00Z', b), 'shutdownTime')).toBe('2026-12-01T12:00:00Z');
  });

  it('is not set for a lease that never expires', () => {
    expect(lifecycle(null)).toEqual({ shutdownPolicy: 'DeleteForeground' });
    expect(lifecycle(undefined)).toEqual({ shutdownPolicy: 'DeleteForeground' });
  });
});
