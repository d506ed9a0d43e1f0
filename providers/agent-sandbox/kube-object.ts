// The few shapes the adapter reads from Kubernetes objects. Custom objects arrive as untyped JSON, so
// every field is optional here and every reader checks what it relies on.

export interface OwnerReference {
  apiVersion?: string;
  kind?: string;
  name?: string;
  uid?: string;
  controller?: boolean;
}

export interface ObjectMeta {
  name?: string;
  namespace?: string;
  uid?: string;
  generation?: number;
  resourceVersion?: string;
  deletionTimestamp?: string | Date;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
}

export interface Condition {
  type?: string;
  status?: string;
  reason?: string;
  observedGeneration?: number;
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  spec?: Record<string, unknown>;
  status?: Record<string, unknown> & { conditions?: Condition[] };
}

export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Reads `path` under `value` (numeric steps index arrays), or undefined once a step is missing. */
export function field(value: unknown, ...path: string[]): unknown {
  let current = value;
  for (const key of path) {
    if (Array.isArray(current) && /^[0-9]+$/.test(key)) current = current[Number(key)] as unknown;
    else if (isRecord(current)) current = current[key];
    else return undefined;
  }
  return current;
}

export function asObject(value: unknown): KubeObject {
  return isRecord(value) ? value : {};
}
