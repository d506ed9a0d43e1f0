// Validates Agent Sandbox objects against the openAPIV3Schema of their CRD version, read at run time
// from the folder SANDLOT_CRD_DIR names (test/support/crd-dir.ts; never copied into the repo).
// Unknown fields are rejected the way the API server rejects them under fieldValidation=Strict;
// schema defaults are applied.
import { readFileSync } from 'node:fs';
import { Ajv, type ErrorObject, type SchemaObject, type ValidateFunction } from 'ajv';
import { parse } from 'yaml';
import { crdPath } from '../../support/crd-dir.ts';
import { cause, type StatusCause } from './errors.ts';
import type { ResourceType } from './resources.ts';
import { isObject, sameJson, type JsonObject } from './types.ts';

const KNOWN_FORMATS = new Set(['int32', 'int64', 'date-time']);

const ajv = new Ajv({
  strict: false,
  allErrors: true,
  useDefaults: true,
  verbose: true,
  unicodeRegExp: false,
  // The pod-spec schemas are large; unoptimised code compiles several times faster.
  code: { optimize: false },
});
ajv.addFormat('int32', {
  type: 'number',
  validate: (n: number) => Number.isInteger(n) && n >= -2147483648 && n <= 2147483647,
});
ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isInteger(n) });
ajv.addFormat('date-time', /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/);

/**
 * Makes a structural CRD schema strict for ajv: objects without `x-kubernetes-preserve-unknown-fields`
 * admit only their declared properties; embedded resources also admit apiVersion/kind/metadata.
 */
function strictSchema(node: unknown, formats: Set<string>): SchemaObject {
  if (!isObject(node)) return {};
  const out: SchemaObject = { ...node };
  if (isObject(node['properties'])) {
    out['properties'] = Object.fromEntries(
      Object.entries(node['properties']).map(([k, v]) => [k, strictSchema(v, formats)]),
    );
  }
  if (node['items'] !== undefined) out['items'] = strictSchema(node['items'], formats);
  if (isObject(node['additionalProperties'])) {
    out['additionalProperties'] = strictSchema(node['additionalProperties'], formats);
  }
  for (const combinator of ['anyOf', 'allOf', 'oneOf']) {
    const branches = node[combinator];
    if (Array.isArray(branches)) out[combinator] = branches.map((b) => strictSchema(b, formats));
  }
  if (typeof node['format'] === 'string') formats.add(node['format']);
  if (node['x-kubernetes-embedded-resource'] === true) {
    const props = isObject(out['properties']) ? out['properties'] : {};
    out['properties'] = {
      apiVersion: { type: 'string' },
      kind: { type: 'string' },
      metadata: { type: 'object' },
      ...props,
    };
  }
  const preserves = node['x-kubernetes-preserve-unknown-fields'] === true;
  if (node['type'] === 'object' && !preserves && node['additionalProperties'] === undefined) {
    out['additionalProperties'] = false;
  }
  return out;
}

interface CrdVersion {
  name: string;
  schema?: { openAPIV3Schema?: unknown };
}

const validators = new Map<string, ValidateFunction>();

function validatorFor(resource: ResourceType): ValidateFunction {
  const file = resource.crdFile;
  if (!file) throw new Error(`${resource.kind} has no CRD schema`);
  const cached = validators.get(file);
  if (cached) return cached;
  const crd = parse(readFileSync(crdPath(file), 'utf8'), { uniqueKeys: false }) as {
    spec: { versions: CrdVersion[] };
  };
  const version = crd.spec.versions.find((v) => v.name === resource.version);
  if (!version?.schema?.openAPIV3Schema) throw new Error(`${file} has no ${resource.version} schema`);
  const formats = new Set<string>();
  const schema = strictSchema(version.schema.openAPIV3Schema, formats);
  // ObjectMeta is validated by meta-validation.ts, as the API server does outside the CRD schema.
  schema['properties'] = { ...(schema['properties'] as JsonObject), metadata: { type: 'object' } };
  for (const format of formats) if (!KNOWN_FORMATS.has(format)) ajv.addFormat(format, true);
  const validate = ajv.compile(schema);
  validators.set(file, validate);
  return validate;
}

/** `/spec/containers/0/image` → `spec.containers[0].image`, the API server's field path notation. */
function fieldPath(pointer: string, child?: string): string {
  const parts = pointer
    .split('/')
    .slice(1)
    .map((p) => p.replaceAll('~1', '/').replaceAll('~0', '~'));
  if (child !== undefined) parts.push(child);
  return parts.reduce(
    (path, part) => (/^\d+$/.test(part) ? `${path}[${part}]` : path ? `${path}.${part}` : part),
    '',
  );
}

function describe(value: unknown): string {
  return Array.isArray(value) ? 'array' : value === null ? 'null' : typeof value;
}

function toCause(error: ErrorObject): StatusCause | undefined {
  if (error.schemaPath.includes('/anyOf/')) return undefined; // branch noise of int-or-string
  const params = error.params as Record<string, unknown>;
  const field = fieldPath(error.instancePath);
  const shown = JSON.stringify(error.data);
  switch (error.keyword) {
    case 'additionalProperties': {
      const unknown = fieldPath(error.instancePath, String(params['additionalProperty']));
      return cause(unknown, 'FieldValueInvalid', `unknown field "${unknown}"`);
    }
    case 'required':
      return cause(
        fieldPath(error.instancePath, String(params['missingProperty'])),
        'FieldValueRequired',
        'Required value',
      );
    case 'type':
      return cause(
        field,
        'FieldValueTypeInvalid',
        `Invalid value: "${describe(error.data)}": ${field} in body must be of type ${String(params['type'])}: ${shown}`,
      );
    case 'anyOf':
      return cause(
        field,
        'FieldValueTypeInvalid',
        `Invalid value: ${shown}: ${field} in body must be of type integer or string`,
      );
    case 'enum': {
      const allowed = (params['allowedValues'] as unknown[]).map((v) => JSON.stringify(v)).join(', ');
      return cause(
        field,
        'FieldValueNotSupported',
        `Unsupported value: ${shown}: supported values: ${allowed}`,
      );
    }
    case 'maxLength':
    case 'maxItems':
      return cause(field, 'FieldValueTooLong', `Too long: ${field} in body ${error.message ?? ''}`);
    default:
      return cause(
        field,
        'FieldValueInvalid',
        `Invalid value: ${shown}: ${field} in body ${error.message ?? ''}`,
      );
  }
}

/** Validates (and defaults, in place) a CRD-backed object; returns the causes of rejection. */
export function validateCrdObject(resource: ResourceType, object: JsonObject): StatusCause[] {
  const validate = validatorFor(resource);
  if (validate(object)) return [];
  const causes = (validate.errors ?? []).map(toCause).filter((c): c is StatusCause => c !== undefined);
  const seen = new Set<string>();
  return causes.filter((c) => {
    const key = `${c.field}|${c.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** The CRDs' x-kubernetes-validations transition rules, hand-evaluated (there is one). */
export function validateCrdTransition(
  resource: ResourceType,
  previous: JsonObject,
  next: JsonObject,
): StatusCause[] {
  if (resource.kind !== 'Sandbox') return [];
  const before = isObject(previous['spec']) ? previous['spec']['volumeClaimTemplates'] : undefined;
  const after = isObject(next['spec']) ? next['spec']['volumeClaimTemplates'] : undefined;
  if (sameJson(before ?? null, after ?? null)) return [];
  return [cause('spec', 'FieldValueInvalid', 'Invalid value: "object": volumeClaimTemplates is immutable')];
}

/** Compiles the validators up front so the first request does not pay for it. */
export function warmUpCrdValidators(resources: readonly ResourceType[]): void {
  for (const r of resources) if (r.crdFile) validatorFor(r);
}
