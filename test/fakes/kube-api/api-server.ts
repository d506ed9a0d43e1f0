// The API server's verbs over the store: create/get/list/replace/patch with the checks the real one
// makes (kind and namespace agreement, ObjectMeta and CRD schema validation, admission, optimistic
// concurrency on resourceVersion, status-subresource isolation). Deletion lives in deletion.ts.
import { randomBytes } from 'node:crypto';
import { validateCrdObject, validateCrdTransition } from './crd-schemas.ts';
import {
  KubeError,
  STALE_OBJECT,
  alreadyExists,
  badRequest,
  conflict,
  forbidden,
  invalid,
  notFound,
  cause,
  type StatusCause,
} from './errors.ts';
import { validateCoreBasics, validateMeta } from './meta-validation.ts';
import { applyPatch } from './patch.ts';
import { defaultService } from './service-defaults.ts';
import { RUNTIME_CLASS, apiVersionOf, isCustomResource, type ResourceType } from './resources.ts';
import { fieldMatcher, labelMatcher } from './selectors.ts';
import type { ObjectStore } from './store.ts';
import { clone, isObject, sameJson, type JsonObject, type KubeObject } from './types.ts';

const SERVER_SET_FIELDS = [
  'uid',
  'resourceVersion',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'generation',
  'selfLink',
  'managedFields',
] as const;

const INITIAL_STATUS: Record<string, JsonObject> = {
  Pod: { phase: 'Pending' },
  PersistentVolumeClaim: { phase: 'Pending' },
  Service: { loadBalancer: {} },
};

function generatedSuffix(): string {
  const alphabet = 'bcdfghjklmnpqrstvwxz2456789';
  return [...randomBytes(5)].map((b) => alphabet[b % alphabet.length]).join('');
}

export class KubeApi {
  constructor(private readonly store: ObjectStore) {}

  /** Checks kind and namespace against the request path; returns a copy ready to be stored. */
  private incoming(resource: ResourceType, namespace: string | undefined, body: unknown): KubeObject {
    if (!isObject(body)) throw badRequest('the request body must be a JSON object');
    const object = clone(body);
    const expected = apiVersionOf(resource);
    if (object['kind'] === undefined && !isCustomResource(resource)) object['kind'] = resource.kind;
    if (object['apiVersion'] === undefined && !isCustomResource(resource)) object['apiVersion'] = expected;
    if (typeof object['kind'] !== 'string' || object['kind'] === '') {
      throw badRequest(`Object 'Kind' is missing in '${JSON.stringify(body)}'`);
    }
    if (object['apiVersion'] !== expected || object['kind'] !== resource.kind) {
      throw badRequest(
        `the API version in the data (${String(object['apiVersion'])}) and kind (${object['kind']}) do not match the expected ${expected} ${resource.kind}`,
      );
    }
    if (object['metadata'] === undefined) object['metadata'] = {};
    if (!isObject(object['metadata'])) throw badRequest('metadata must be an object');
    const meta = object['metadata'];
    if (resource.namespaced) {
      if (meta['namespace'] !== undefined && meta['namespace'] !== '' && meta['namespace'] !== namespace) {
        throw badRequest(
          'the namespace of the provided object does not match the namespace sent on the request',
        );
      }
      meta['namespace'] = namespace;
    } else {
      delete meta['namespace'];
    }
    return object as KubeObject;
  }

  private validate(resource: ResourceType, object: KubeObject, previous?: KubeObject): void {
    const causes: StatusCause[] = validateMeta(resource, object);
    if (resource.crdFile) causes.push(...validateCrdObject(resource, object));
    else if (!isCustomResource(resource)) causes.push(...validateCoreBasics(resource, object));
    if (previous && resource.crdFile) causes.push(...validateCrdTransition(resource, previous, object));
    if (causes.length > 0) throw invalid(resource, String(object.metadata.name ?? ''), causes);
  }

  /** Admission the fake models: the RuntimeClass admission plugin rejects pods naming a missing one. */
  private admit(resource: ResourceType, object: KubeObject): void {
    if (resource.kind !== 'Pod') return;
    const runtimeClass = object.spec?.['runtimeClassName'];
    if (typeof runtimeClass === 'string' && !this.store.read(RUNTIME_CLASS, undefined, runtimeClass)) {
      throw forbidden(
        resource,
        object.metadata.name,
        `pod rejected: RuntimeClass "${runtimeClass}" not found`,
      );
    }
  }

  private existing(resource: ResourceType, namespace: string | undefined, name: string): KubeObject {
    const found = this.store.read(resource, namespace, name);
    if (!found) throw notFound(resource, name);
    return found;
  }

  create(resource: ResourceType, namespace: string | undefined, body: unknown): KubeObject {
    const object = this.incoming(resource, namespace, body);
    const meta = object.metadata;
    if (!meta.name && typeof meta.generateName === 'string' && meta.generateName !== '') {
      meta.name = `${meta.generateName}${generatedSuffix()}`;
    }
    for (const field of SERVER_SET_FIELDS) delete meta[field];
    if (resource.statusSubresource) {
      const initial = INITIAL_STATUS[resource.kind];
      if (initial) object.status = clone(initial);
      else delete object.status;
    }
    if (resource.kind === 'Service') defaultService(object);
    this.validate(resource, object);
    this.admit(resource, object);
    if (this.store.read(resource, meta.namespace, meta.name)) throw alreadyExists(resource, meta.name);
    return this.store.insert(resource, object);
  }

  get(resource: ResourceType, namespace: string | undefined, name: string): KubeObject {
    return this.existing(resource, namespace, name);
  }

  list(resource: ResourceType, namespace: string | undefined, query: Record<string, string>): JsonObject {
    const labels = labelMatcher(query['labelSelector']);
    const fields = fieldMatcher(query['fieldSelector'], resource.kind);
    const all = this.store
      .all(resource, namespace, (o) => labels(o) && fields(o))
      .sort((a, b) =>
        `${a.metadata.namespace ?? ''}/${a.metadata.name}`.localeCompare(
          `${b.metadata.namespace ?? ''}/${b.metadata.name}`,
        ),
      );
    const offset = query['continue'] ? Number(Buffer.from(query['continue'], 'base64url').toString()) : 0;
    if (!Number.isInteger(offset) || offset < 0)
      throw new KubeError(410, 'Expired', 'the provided continue parameter is too old');
    const limit = query['limit'] ? Number(query['limit']) : 0;
    const end = limit > 0 ? offset + limit : all.length;
    const items = all.slice(offset, end);
    const metadata: JsonObject = { resourceVersion: String(this.store.revision) };
    if (end < all.length) {
      metadata['continue'] = Buffer.from(String(end)).toString('base64url');
      metadata['remainingItemCount'] = all.length - end;
    }
    // Typed (core) lists omit apiVersion/kind on items; custom resource lists keep them.
    const shown = isCustomResource(resource)
      ? items
      : items.map(({ apiVersion: _a, kind: _k, ...rest }) => rest);
    return { apiVersion: apiVersionOf(resource), kind: `${resource.kind}List`, metadata, items: shown };
  }

  replace(
    resource: ResourceType,
    namespace: string | undefined,
    name: string,
    body: unknown,
    subresource?: string,
  ): KubeObject {
    const proposed = this.incoming(resource, namespace, body);
    if (proposed.metadata.name !== name) {
      throw badRequest(
        `the name of the object (${String(proposed.metadata.name)}) does not match the name on the URL (${name})`,
      );
    }
    const current = this.existing(resource, namespace, name);
    return this.commit(resource, current, proposed, subresource, isCustomResource(resource));
  }

  patch(
    resource: ResourceType,
    namespace: string | undefined,
    name: string,
    body: unknown,
    contentType: string | undefined,
    subresource?: string,
  ): KubeObject {
    const current = this.existing(resource, namespace, name);
    const patched = applyPatch(current, body, contentType);
    const proposed = this.incoming(resource, namespace, patched);
    if (proposed.metadata.name !== name) throw badRequest('metadata.name cannot be changed by a patch');
    return this.commit(resource, current, proposed, subresource, false);
  }

  /** The shared tail of PUT and PATCH: preconditions, subresource isolation, validation, finalization. */
  private commit(
    resource: ResourceType,
    current: KubeObject,
    proposed: KubeObject,
    subresource: string | undefined,
    requireVersion: boolean,
  ): KubeObject {
    const name = current.metadata.name;
    const uid = proposed.metadata.uid;
    if (uid && uid !== current.metadata.uid) {
      throw conflict(
        resource,
        name,
        `Precondition failed: UID in precondition: ${uid}, UID in object meta: ${current.metadata.uid}`,
      );
    }
    const version = proposed.metadata.resourceVersion;
    if (!version && requireVersion) {
      throw invalid(resource, name, [
        cause(
          'metadata.resourceVersion',
          'FieldValueInvalid',
          'Invalid value: 0x0: must be specified for an update',
        ),
      ]);
    }
    if (version && version !== current.metadata.resourceVersion) throw conflict(resource, name, STALE_OBJECT);

    let next: KubeObject;
    if (subresource === 'status') {
      next = clone(current);
      if (proposed.status === undefined) delete next.status;
      else next.status = proposed.status;
    } else {
      next = proposed;
      const meta: Record<string, unknown> = next.metadata;
      for (const field of SERVER_SET_FIELDS) {
        if (current.metadata[field] === undefined) delete meta[field];
        else meta[field] = current.metadata[field];
      }
      if (resource.statusSubresource) {
        if (current.status === undefined) delete next.status;
        else next.status = current.status;
      }
    }
    const added = (next.metadata.finalizers ?? []).filter(
      (f) => !(current.metadata.finalizers ?? []).includes(f),
    );
    if (current.metadata.deletionTimestamp && added.length > 0) {
      throw invalid(resource, name, [
        cause(
          'metadata.finalizers',
          'FieldValueForbidden',
          'Forbidden: no new finalizers can be added if the object is being deleted',
        ),
      ]);
    }
    this.validate(resource, next, current);
    if (sameJson(next, current)) return current; // a no-op write does not move resourceVersion
    if (next.metadata.deletionTimestamp && (next.metadata.finalizers ?? []).length === 0) {
      this.store.delete(resource, next.metadata.namespace, name);
      return next;
    }
    return this.store.write(resource, next);
  }
}
