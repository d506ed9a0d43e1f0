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
