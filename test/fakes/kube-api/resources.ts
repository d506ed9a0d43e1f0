// The resource kinds the fake serves, with the REST coordinates client-node uses for them.

export interface ResourceType {
  group: string;
  version: string;
  plural: string;
  singular: string;
  kind: string;
  namespaced: boolean;
  /** Has a `/status` subresource: writes to the main resource keep the stored status. */
  statusSubresource: boolean;
  /** CRD file in the agent-sandbox reference directory whose schema validates this kind. */
  crdFile?: string;
}

const AGENTS = 'agents.x-k8s.io';
const EXTENSIONS = 'extensions.agents.x-k8s.io';

export const RESOURCES: readonly ResourceType[] = [
  {
    group: AGENTS,
    version: 'v1beta1',
    plural: 'sandboxes',
    singular: 'sandbox',
    kind: 'Sandbox',
    namespaced: true,
    statusSubresource: true,
    crdFile: 'agents.x-k8s.io_sandboxes.yaml',
  },
  {
    group: EXTENSIONS,
    version: 'v1beta1',
    plural: 'sandboxtemplates',
    singular: 'sandboxtemplate',
    kind: 'SandboxTemplate',
    namespaced: true,
    statusSubresource: false,
    crdFile: 'extensions.agents.x-k8s.io_sandboxtemplates.yaml',
  },
  {
    group: EXTENSIONS,
    version: 'v1beta1',
    plural: 'sandboxclaims',
    singular: 'sandboxclaim',
    kind: 'SandboxClaim',
    namespaced: true,
    statusSubresource: true,
    crdFile: 'extensions.agents.x-k8s.io_sandboxclaims.yaml',
  },
  {
    group: EXTENSIONS,
    version: 'v1beta1',
    plural: 'sandboxwarmpools',
    singular: 'sandboxwarmpool',
    kind: 'SandboxWarmPool',
    namespaced: true,
    statusSubresource: true,
    crdFile: 'extensions.agents.x-k8s.io_sandboxwarmpools.yaml',
  },
  core('pods', 'pod', 'Pod', true),
  core('services', 'service', 'Service', true),
  core('persistentvolumeclaims', 'persistentvolumeclaim', 'PersistentVolumeClaim', true),
  // Cluster-scoped, as in Kubernetes: a PV is bound to its claim by spec.claimRef (namespace/name/uid).
  { ...core('persistentvolumes', 'persistentvolume', 'PersistentVolume', true), namespaced: false },
  {
    group: 'node.k8s.io',
    version: 'v1',
    plural: 'runtimeclasses',
    singular: 'runtimeclass',
    kind: 'RuntimeClass',
    namespaced: false,
    statusSubresource: false,
  },
  // Only stored and served (the BuildTest Pods' deny-all policies); nothing enforces it.
  {
    group: 'networking.k8s.io',
    version: 'v1',
    plural: 'networkpolicies',
    singular: 'networkpolicy',
    kind: 'NetworkPolicy',
    namespaced: true,
    statusSubresource: false,
  },
  {
    group: 'cilium.io',
    version: 'v2',
    plural: 'ciliumnetworkpolicies',
    singular: 'ciliumnetworkpolicy',
    kind: 'CiliumNetworkPolicy',
    namespaced: true,
    statusSubresource: true,
  },
];

function core(plural: string, singular: string, kind: string, statusSubresource: boolean): ResourceType {
  return { group: '', version: 'v1', plural, singular, kind, namespaced: true, statusSubresource };
}

export function apiVersionOf(resource: ResourceType): string {
  return resource.group === '' ? resource.version : `${resource.group}/${resource.version}`;
}

/** `sandboxes.agents.x-k8s.io`, or `pods` for the core group: how Status messages name a resource. */
export function qualifiedResource(resource: ResourceType): string {
  return resource.group === '' ? resource.plural : `${resource.plural}.${resource.group}`;
}

export function findResource(group: string, version: string, plural: string): ResourceType | undefined {
  return RESOURCES.find((r) => r.group === group && r.version === version && r.plural === plural);
}

export function resourceForKind(apiVersion: string, kind: string): ResourceType {
  const found = RESOURCES.find((r) => apiVersionOf(r) === apiVersion && r.kind === kind);
  if (!found) throw new Error(`the fake Kubernetes API does not serve ${apiVersion} ${kind}`);
  return found;
}

export function resourceByPlural(plural: string): ResourceType {
  const found = RESOURCES.find((r) => r.plural === plural);
  if (!found) throw new Error(`the fake Kubernetes API does not serve ${plural}`);
  return found;
}

export const SANDBOX = resourceByPlural('sandboxes');
export const SANDBOX_TEMPLATE = resourceByPlural('sandboxtemplates');
export const SANDBOX_CLAIM = resourceByPlural('sandboxclaims');
export const SANDBOX_WARM_POOL = resourceByPlural('sandboxwarmpools');
export const POD = resourceByPlural('pods');
export const SERVICE = resourceByPlural('services');
export const PVC = resourceByPlural('persistentvolumeclaims');
export const RUNTIME_CLASS = resourceByPlural('runtimeclasses');

/** Custom resources need a resourceVersion on PUT; core kinds allow unconditional updates. */
export function isCustomResource(resource: ResourceType): boolean {
  return resource.crdFile !== undefined || resource.group === 'cilium.io';
}

export const EXTENSIONS_GROUP = EXTENSIONS;
