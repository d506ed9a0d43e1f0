// Test support for deploy/: render an overlay with `kubectl kustomize`, parse the YAML stream, and
// check each object the way an API server with strict field validation would: the kubernetes-models
// JSON schema of its apiVersion/kind (types, required fields, formats), plus a walk over the
// client-node model attribute maps that refuses any field the Kubernetes API does not define
// (kubernetes-models accepts unknown fields; `kubectl apply` refuses them by default).
import * as k8s from '@kubernetes/client-node';
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as apps from 'kubernetes-models/apps/v1';
import * as batch from 'kubernetes-models/batch/v1';
import * as networking from 'kubernetes-models/networking.k8s.io/v1';
import * as policy from 'kubernetes-models/policy/v1';
import * as rbac from 'kubernetes-models/rbac.authorization.k8s.io/v1';
import * as core from 'kubernetes-models/v1';
import { parseAllDocuments } from 'yaml';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

export interface RenderedObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [field: string]: unknown;
}

/** Why kubectl cannot render here, or undefined when it can. */
export function kubectlMissing(): string | undefined {
  const probe = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8', timeout: 20_000 });
  if (probe.error !== undefined) return `kubectl is not on PATH (${probe.error.message})`;
  if (probe.status !== 0) return `\`kubectl version --client\` failed: ${probe.stderr.trim()}`;
  return undefined;
}

/** `kubectl kustomize deploy/overlays/<overlay>`, parsed into its objects. */
export function renderOverlay(overlay: string): RenderedObject[] {
  const dir = resolve(repoRoot, 'deploy/overlays', overlay);
  const run = spawnSync('kubectl', ['kustomize', dir], { encoding: 'utf8', timeout: 60_000 });
  if (run.status !== 0)
    throw new Error(`kubectl kustomize ${dir} failed: ${run.stderr || run.error?.message}`);
  return parseAllDocuments(run.stdout).map((document) => {
    if (document.errors.length > 0)
      throw new Error(`bad YAML from kustomize: ${document.errors[0]?.message}`);
    return document.toJS() as RenderedObject;
  });
}

type ModelClass = new (data: unknown) => { validate(): void };

/** The kubernetes-models modules of the API versions deploy/ uses; a new one is added here. */
const MODEL_MODULES: Record<string, Record<string, unknown>> = {
  v1: core,
  'apps/v1': apps,
  'batch/v1': batch,
  'networking.k8s.io/v1': networking,
  'policy/v1': policy,
  'rbac.authorization.k8s.io/v1': rbac,
};

/** Validates one object with the kubernetes-models class of its apiVersion and kind; throws its errors. */
export function validateWithModel(object: RenderedObject): void {
  const Model = MODEL_MODULES[object.apiVersion]?.[object.kind] as ModelClass | undefined;
  if (Model === undefined)
    throw new Error(`no kubernetes-models class for ${object.apiVersion} ${object.kind}`);
  new Model(object).validate();
}

interface Attribute {
  baseName: string;
  type: string;
}
const models = k8s as unknown as Record<string, { attributeTypeMap?: Attribute[] } | undefined>;

/** The client-node model name of a top-level kind: `apps/v1` Deployment is V1Deployment. */
function modelNameOf(object: RenderedObject): string {
  const version = object.apiVersion.split('/').at(-1) ?? '';
  return `${version.charAt(0).toUpperCase()}${version.slice(1)}${object.kind}`;
}

function walk(value: unknown, type: string, path: string, unknown: string[]): void {
  if (value === null || value === undefined) return;
  const array = /^Array<(.+)>$/.exec(type);
  if (array?.[1] !== undefined) {
    if (Array.isArray(value)) value.forEach((item, i) => walk(item, array[1]!, `${path}[${i}]`, unknown));
    return;
  }
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (map?.[1] !== undefined) {
    if (typeof value === 'object') {
      for (const [key, item] of Object.entries(value)) walk(item, map[1], `${path}.${key}`, unknown);
    }
    return;
  }
  const attributes = models[type]?.attributeTypeMap;
  if (attributes === undefined || typeof value !== 'object' || Array.isArray(value)) return;
  for (const [key, item] of Object.entries(value)) {
    const attribute = attributes.find((a) => a.baseName === key);
    if (attribute === undefined) unknown.push(`${path}.${key}`.replace(/^\./, ''));
    else walk(item, attribute.type, `${path}.${key}`, unknown);
  }
}

/** Paths of fields the Kubernetes API does not define for this kind, e.g. `spec.template.spec.foo`. */
export function unknownFields(object: RenderedObject): string[] {
  const name = modelNameOf(object);
  if (models[name]?.attributeTypeMap === undefined) throw new Error(`client-node has no model ${name}`);
  const unknown: string[] = [];
  walk(object, name, '', unknown);
  return unknown;
}

/** The objects of one kind, by name. */
export function ofKind(objects: RenderedObject[], kind: string): RenderedObject[] {
  return objects.filter((o) => o.kind === kind);
}

export function named(objects: RenderedObject[], kind: string, name: string): RenderedObject {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (found === undefined) throw new Error(`no ${kind} ${name} in the rendered manifests`);
  return found;
}

export interface Probe {
  httpGet?: { path: string; port: string };
  periodSeconds?: number;
  timeoutSeconds?: number;
  failureThreshold?: number;
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
}

/** The parts of a container and a Pod template the checks read. */
export interface Container {
  name: string;
  args?: string[];
  env?: { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }[];
  envFrom?: { configMapRef?: { name: string } }[];
  ports?: { name: string; containerPort: number }[];
  image?: string;
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  startupProbe?: Probe;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: {
    allowPrivilegeEscalation?: boolean;
    readOnlyRootFilesystem?: boolean;
    capabilities?: { drop?: string[] };
  };
  volumeMounts?: { name: string; mountPath: string }[];
}

export interface PodSpec {
  serviceAccountName?: string;
  automountServiceAccountToken?: boolean;
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number; seccompProfile?: { type: string } };
  containers: Container[];
  volumes?: { name: string; emptyDir?: unknown }[];
  topologySpreadConstraints?: {
    maxSkew: number;
    topologyKey: string;
    whenUnsatisfiable: string;
    labelSelector?: LabelSelector;
    matchLabelKeys?: string[];
  }[];
}

/** Whether a matchLabels selector selects these labels (an empty or absent one selects all). */
export function selects(selector: LabelSelector | undefined, labels: Record<string, string>): boolean {
  return Object.entries(selector?.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
}

/** The parts of a NetworkPolicy the checks read. */
export interface NetworkPolicyPeer {
  podSelector?: LabelSelector;
  namespaceSelector?: LabelSelector;
  ipBlock?: { cidr: string };
}
export interface NetworkPolicyRule {
  ports?: { port?: number | string; protocol?: string }[];
  from?: NetworkPolicyPeer[];
  to?: NetworkPolicyPeer[];
}
export interface NetworkPolicySpec {
  podSelector: LabelSelector;
  policyTypes?: string[];
  ingress?: NetworkPolicyRule[];
  egress?: NetworkPolicyRule[];
}

export const networkPolicySpec = (policy: RenderedObject): NetworkPolicySpec =>
  policy['spec'] as NetworkPolicySpec;

/** A Deployment or Job with its Pod template. */
export interface Workload {
  object: RenderedObject;
  labels: Record<string, string>;
  pod: PodSpec;
}

export function workloads(objects: RenderedObject[]): Workload[] {
  return objects
    .filter((o) => o.kind === 'Deployment' || o.kind === 'Job')
    .map((object) => {
      const template = (
        object['spec'] as { template: { metadata?: { labels?: Record<string, string> }; spec: PodSpec } }
      ).template;
      return { object, labels: template.metadata?.labels ?? {}, pod: template.spec };
    });
}

export function workload(objects: RenderedObject[], kind: string, name: string): Workload {
  const found = workloads(objects).find((w) => w.object.kind === kind && w.object.metadata.name === name);
  if (found === undefined) throw new Error(`no ${kind} ${name} in the rendered manifests`);
  return found;
}

/** The settings every Pod reads (`envFrom`): the overlay's one ConfigMap, as rendered. */
export function settingsOf(objects: RenderedObject[]): Record<string, string> {
  const maps = ofKind(objects, 'ConfigMap');
  if (maps.length !== 1) throw new Error(`expected one ConfigMap, rendered ${maps.length}`);
  return maps[0]!['data'] as Record<string, string>;
}
