// ObjectMeta rules every kind shares (names, labels, annotations, owner references) and the few
// core-object basics the fake checks. CRD bodies are checked by crd-schemas.ts on top of this.
import { cause, type StatusCause } from './errors.ts';
import { validatePersistentVolume } from './persistent-volumes.ts';
import type { ResourceType } from './resources.ts';
import { isObject, type JsonObject } from './types.ts';

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

const OBJECT_META_FIELDS = new Set([
  'name',
  'generateName',
  'namespace',
  'selfLink',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'labels',
  'annotations',
  'ownerReferences',
  'finalizers',
  'managedFields',
]);

/** Services need DNS-1035 labels; everything else served here takes DNS-1123 subdomains. */
export function nameProblem(resource: ResourceType, name: string): string | undefined {
  if (resource.kind === 'Service') {
    if (name.length > 63 || !DNS1035_LABEL.test(name)) {
      return `a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')`;
    }
    return undefined;
  }
  if (name.length > 253) return 'must be no more than 253 characters';
  if (!DNS1123_SUBDOMAIN.test(name)) {
    return `a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`;
  }
  return undefined;
}

function qualifiedNameProblem(key: string): string | undefined {
  const slash = key.indexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (prefix !== undefined && (prefix.length > 253 || !DNS1123_SUBDOMAIN.test(prefix))) {
    return 'prefix part must be a lowercase RFC 1123 subdomain';
  }
  if (name.length === 0 || name.length > 63)
    return 'name part must be no more than 63 characters and non-empty';
  if (!QUALIFIED_NAME.test(name)) {
    return "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
  }
  return undefined;
}

function stringMap(meta: JsonObject, field: 'labels' | 'annotations', causes: StatusCause[]): void {
  const map = meta[field];
  if (map === undefined || map === null) return;
  if (!isObject(map)) {
    causes.push(cause(`metadata.${field}`, 'FieldValueTypeInvalid', 'must be a map of strings'));
    return;
  }
  for (const [key, value] of Object.entries(map)) {
    const keyProblem = qualifiedNameProblem(key);
    if (keyProblem)
      causes.push(cause(`metadata.${field}`, 'FieldValueInvalid', `Invalid value: "${key}": ${keyProblem}`));
    if (typeof value !== 'string') {
      causes.push(cause(`metadata.${field}[${key}]`, 'FieldValueTypeInvalid', 'must be a string'));
    } else if (field === 'labels' && (value.length > 63 || !LABEL_VALUE.test(value))) {
      causes.push(
        cause(
          `metadata.labels`,
          'FieldValueInvalid',
          `Invalid value: "${value}": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character, and be no more than 63 characters`,
        ),
      );
    }
  }
}

function ownerReferences(meta: JsonObject, causes: StatusCause[]): void {
  const refs = meta['ownerReferences'];
  if (refs === undefined || refs === null) return;
  if (!Array.isArray(refs)) {
    causes.push(cause('metadata.ownerReferences', 'FieldValueTypeInvalid', 'must be a list'));
    return;
  }
  let controllers = 0;
  refs.forEach((ref: unknown, i) => {
    const field = `metadata.ownerReferences[${i}]`;
    if (!isObject(ref)) return causes.push(cause(field, 'FieldValueTypeInvalid', 'must be an object'));
    for (const required of ['apiVersion', 'kind', 'name', 'uid']) {
      if (typeof ref[required] !== 'string' || ref[required] === '') {
        causes.push(cause(`${field}.${required}`, 'FieldValueRequired', 'Required value'));
      }
    }
    if (ref['controller'] === true) controllers += 1;
  });
  if (controllers > 1) {
    causes.push(
      cause(
        'metadata.ownerReferences',
        'FieldValueInvalid',
        'Only one reference can have Controller set to true',
      ),
    );
  }
}

/** Checks metadata of an object about to be stored. Namespace/path agreement is checked by the caller. */
export function validateMeta(resource: ResourceType, object: JsonObject): StatusCause[] {
  const causes: StatusCause[] = [];
  const meta = object['metadata'];
  if (!isObject(meta)) return [cause('metadata', 'FieldValueRequired', 'Required value')];
  for (const field of Object.keys(meta)) {
    if (!OBJECT_META_FIELDS.has(field))
      causes.push(cause(`metadata.${field}`, 'FieldValueInvalid', `unknown field "metadata.${field}"`));
  }
  const name = meta['name'];
  if (typeof name !== 'string' || name === '') {
    causes.push(
      cause('metadata.name', 'FieldValueRequired', 'Required value: name or generateName is required'),
    );
  } else {
    const problem = nameProblem(resource, name);
    if (problem)
      causes.push(cause('metadata.name', 'FieldValueInvalid', `Invalid value: "${name}": ${problem}`));
  }
  stringMap(meta, 'labels', causes);
  stringMap(meta, 'annotations', causes);
  ownerReferences(meta, causes);
  const finalizers = meta['finalizers'];
  if (
    finalizers !== undefined &&
    !(Array.isArray(finalizers) && finalizers.every((f) => typeof f === 'string'))
  ) {
    causes.push(cause('metadata.finalizers', 'FieldValueTypeInvalid', 'must be a list of strings'));
  }
  return causes;
}

/** The core-object basics the fake enforces beyond metadata. */
export function validateCoreBasics(resource: ResourceType, object: JsonObject): StatusCause[] {
  const spec = isObject(object['spec']) ? object['spec'] : undefined;
  if (resource.kind === 'Pod') {
    const containers = spec?.['containers'];
    if (!Array.isArray(containers) || containers.length === 0) {
      return [cause('spec.containers', 'FieldValueRequired', 'Required value')];
    }
    return containers.flatMap((c: unknown, i) =>
      isObject(c) && typeof c['name'] === 'string' && DNS1123_LABEL.test(c['name'])
        ? []
        : [cause(`spec.containers[${i}].name`, 'FieldValueRequired', 'Required value')],
    );
  }
  if (resource.kind === 'PersistentVolume') return validatePersistentVolume(object);
  if (resource.kind === 'RuntimeClass' && typeof object['handler'] !== 'string') {
    return [cause('handler', 'FieldValueRequired', 'Required value')];
  }
  return [];
}
