// Shapes shared by the fake Kubernetes API server, its store and its controllers.

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid: string;
  resourceVersion: string;
  generation: number;
  creationTimestamp: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  generateName?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  finalizers?: string[];
  [field: string]: unknown;
}

/** An object as the store holds it: server-set metadata always present. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
  [field: string]: unknown;
}

/** An object planted by a test: server-set metadata is filled in when missing. */
export interface PlantedObject {
  apiVersion: string;
  kind: string;
  metadata: Partial<ObjectMeta> & { name: string };
  [field: string]: unknown;
}

export interface ObjectRef {
  apiVersion: string;
  kind: string;
  namespace?: string;
  name: string;
}

export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

/**
 * `watch` is a list route asked with `watch=true` (or `1`), named as RBAC names it; faults match it
 * apart from `list`.
 */
export type Verb = 'create' | 'get' | 'list' | 'watch' | 'replace' | 'patch' | 'delete' | 'deletecollection';

export interface RecordedRequest {
  method: string;
  /** URL path without the query string. */
  path: string;
  query: Record<string, string>;
  /** Parsed JSON body, or undefined when the request had none. */
  body: unknown;
  contentType: string | undefined;
  verb?: Verb;
  /** Plural resource name, e.g. `sandboxclaims`. */
  resource?: string;
  namespace?: string;
  name?: string;
  subresource?: string;
  /** HTTP status answered (200 once a watch stream opens); 0 when the socket was dropped unanswered. */
  status?: number;
  /** When the whole request had arrived (epoch milliseconds, fractional). */
  receivedAtMs?: number;
  /**
   * From arrival to the answer written (or the socket dropped): the fake's own service time. For a
   * watch, to the stream opened with its first events, not to its end.
   */
  serviceMs?: number;
}

export type JsonObject = Record<string, unknown>;

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function clone<T>(value: T): T {
  return structuredClone(value);
}

/** JSON with object keys sorted, so two values compare equal whatever order their keys came in. */
export function stableJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    isObject(v)
      ? Object.fromEntries(
          Object.keys(v)
            .sort()
            .map((k) => [k, v[k]]),
        )
      : v,
  );
}

export function sameJson(a: unknown, b: unknown): boolean {
  return stableJson(a) === stableJson(b);
}

/** RFC 3339 with second precision, as the API server writes timestamps. */
export function timestamp(date: Date = new Date()): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}
