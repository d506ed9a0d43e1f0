// Test support: the adapter wired to a fake Kubernetes API (test/fakes/kube-api, started by the
// test and passed in), with the cluster objects a real installation would
// already hold: the VM RuntimeClass, and each Workspace PVC, Bound to its PV and annotated, which in production
// the Workspace storage lifecycle provisions before any Sandbox asks for it.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { hasChangeFeed, type ProvisionRequest, type SandboxProvider } from '../../providers/provider.ts';
import { AgentSandboxProvider } from '../../providers/agent-sandbox/agent-sandbox-provider.ts';
import { CiliumNetworkPolicyVerifier } from '../../providers/agent-sandbox/cilium-verifier.ts';
import { KubeConfig } from '../../providers/agent-sandbox/client-node.ts';
import { P, validEnv } from './agent-sandbox-fixtures.ts';
import { ANNOTATIONS, LABELS, pvcNameOf, projectHashOf } from '../../providers/agent-sandbox/names.ts';
import { loadAgentSandboxOptions } from '../../providers/agent-sandbox/options.ts';
import {
  KubernetesWorkspaceStorage,
  STORAGE_ANNOTATIONS,
  storageSelectionOf,
} from '../../providers/workspace-storage/kubernetes-storage.ts';

interface Ref {
  apiVersion: string;
  kind: string;
  name: string;
  namespace?: string;
}

/** What the harness needs of the fake (FakeKubeApi satisfies it). */
export interface FakeClusterLike {
  kubeconfig(options?: { namespace?: string; caPem?: string; token?: string }): string;
  objects: {
    put(object: { apiVersion: string; kind: string; metadata: { name: string } }): unknown;
    list(
      type: { apiVersion: string; kind: string },
      options?: { namespace?: string },
    ): { metadata: { name: string } }[];
    remove(ref: Ref): boolean;
  };
}

export const NAMESPACE = 'sandlot-test';
export const RUNTIME_CLASS_NAME = 'kata-vm-isolation';
export const RUNTIME_HANDLER = 'kata';
/** The Workspace storage provider the adapter's settings name (validEnv's). */
export const WORKSPACE_STORAGE_PROVIDER_ID = 'azure-files-csi';
/** The storage selection those settings configure: what the storage lifecycle annotates PVCs with. */
export const STORAGE_SELECTION = storageSelectionOf({
  workspaceStorageProviderId: WORKSPACE_STORAGE_PROVIDER_ID,
});

const EXT = 'extensions.agents.x-k8s.io/v1beta1';
const CILIUM = 'cilium.io/v2';

/** Exact references into the fake's store, in the test namespace. */
export const refs = {
  claim: (name: string) => ({ apiVersion: EXT, kind: 'SandboxClaim', namespace: NAMESPACE, name }),
  pool: (name: string) => ({ apiVersion: EXT, kind: 'SandboxWarmPool', namespace: NAMESPACE, name }),
  template: (name: string) => ({ apiVersion: EXT, kind: 'SandboxTemplate', namespace: NAMESPACE, name }),
  sandbox: (name: string) => ({
    apiVersion: 'agents.x-k8s.io/v1beta1',
    kind: 'Sandbox',
    namespace: NAMESPACE,
    name,
  }),
  pod: (name: string) => ({ apiVersion: 'v1', kind: 'Pod', namespace: NAMESPACE, name }),
  service: (name: string) => ({ apiVersion: 'v1', kind: 'Service', namespace: NAMESPACE, name }),
  ciliumPolicy: (name: string) => ({
    apiVersion: CILIUM,
    kind: 'CiliumNetworkPolicy',
    namespace: NAMESPACE,
    name,
  }),
  pvc: (request: ProvisionRequest) => ({
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    namespace: NAMESPACE,
    name: pvcNameOf(request.workspace.volumeId) ?? '',
  }),
};

/** Empties the test namespace, so each case starts clean (the fake's passes grow with its objects). */
export function wipeNamespace(fake: FakeClusterLike): void {
  const kinds = [
    [EXT, 'SandboxClaim'],
    [EXT, 'SandboxWarmPool'],
    [EXT, 'SandboxTemplate'],
    ['agents.x-k8s.io/v1beta1', 'Sandbox'],
    ['v1', 'Pod'],
    ['v1', 'Service'],
    ['v1', 'PersistentVolumeClaim'],
    [CILIUM, 'CiliumNetworkPolicy'],
  ] as const;
  for (const [apiVersion, kind] of kinds) {
    for (const object of fake.objects.list({ apiVersion, kind }, { namespace: NAMESPACE })) {
      fake.objects.remove({ apiVersion, kind, namespace: NAMESPACE, name: object.metadata.name });
    }
  }
  for (const pv of fake.objects.list({ apiVersion: 'v1', kind: 'PersistentVolume' })) {
    fake.objects.remove({ apiVersion: 'v1', kind: 'PersistentVolume', name: pv.metadata.name });
  }
}

export function runtimeClassObject(handler = RUNTIME_HANDLER) {
  return {
    apiVersion: 'node.k8s.io/v1',
    kind: 'RuntimeClass',
    metadata: { name: RUNTIME_CLASS_NAME },
    handler,
  };
}

/** What the Workspace objects derive from: a provision request, or a volume and its Environment. */
export interface WorkspaceOf {
  owner: Pick<ProvisionRequest['owner'], 'environmentId'>;
  workspace: Pick<ProvisionRequest['workspace'], 'volumeId' | 'resourceGeneration' | 'dataGeneration'>;
}

/** The Workspace PVC a request names, as the storage lifecycle leaves it: Bound, annotated. */
export function workspacePvcObject(request: WorkspaceOf, annotations: Record<string, string> = {}) {
  const name = pvcNameOf(request.workspace.volumeId);
  if (name === undefined) throw new Error(`volume ${request.workspace.volumeId} has no PVC name`);
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name,
      namespace: NAMESPACE,
      annotations: {
        [ANNOTATIONS.environmentId]: request.owner.environmentId,
        [ANNOTATIONS.volumeResourceGeneration]: String(request.workspace.resourceGeneration),
        [ANNOTATIONS.volumeDataGeneration]: String(request.workspace.dataGeneration),
        [STORAGE_ANNOTATIONS.providerId]: STORAGE_SELECTION.providerId,
        [STORAGE_ANNOTATIONS.optionsRevision]: STORAGE_SELECTION.optionsRevision,
        ...annotations,
      },
    },
    spec: {
      accessModes: ['ReadWriteMany'],
      resources: { requests: { storage: '8Gi' } },
      storageClassName: 'azurefile-csi',
      volumeName: `pv-${name}`,
    },
    status: { phase: 'Bound' },
  };
}

/** The PersistentVolume bound to a stored Workspace PVC: `spec.claimRef` names its namespace, name and UID. */
export function workspacePvObject(pvc: { metadata: { name: string; namespace?: string; uid?: string } }) {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name: `pv-${pvc.metadata.name}` },
    spec: {
      capacity: { storage: '8Gi' },
      accessModes: ['ReadWriteMany'],
      persistentVolumeReclaimPolicy: 'Retain',
      storageClassName: 'azurefile-csi',
      mountOptions: ['dir_mode=0700', 'file_mode=0600', 'uid=1000', 'gid=1000'],
      csi: { driver: 'file.csi.azure.com', volumeHandle: `sandlot-${pvc.metadata.name}` },
      claimRef: {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        namespace: pvc.metadata.namespace ?? NAMESPACE,
        name: pvc.metadata.name,
        uid: pvc.metadata.uid,
      },
    },
    status: { phase: 'Bound' },
  };
}

/** Plants a request's Workspace PVC and the PV bound to it, as the storage lifecycle leaves them. */
export function plantWorkspace(fake: FakeClusterLike, request: WorkspaceOf): void {
  const pvc = fake.objects.put(workspacePvcObject(request)) as { metadata: { name: string; uid?: string } };
  fake.objects.put(workspacePvObject(pvc));
}

/**
 * A kubeconfig file for the fake whose cluster CA is a file beside it, as the in-cluster
 * service-account `ca.crt` is, so a test can change the trusted set under a running process:
 * `trust(pem)` rewrites the file (client-node and the cluster pin read it afresh).
 */
export function caFileKubeconfig(
  fake: FakeClusterLike & { caPem: string },
  dir: string,
): { path: string; kubeConfig: () => KubeConfig; trust(pem: string): void } {
  const caPath = join(dir, 'ca.crt');
  const path = join(dir, 'kubeconfig');
  writeFileSync(caPath, fake.caPem);
  const config = parse(fake.kubeconfig({ namespace: NAMESPACE })) as {
    clusters: { cluster: Record<string, unknown> }[];
  };
  for (const { cluster } of config.clusters) {
    delete cluster['certificate-authority-data'];
    cluster['certificate-authority'] = caPath;
  }
  writeFileSync(path, stringify(config));
  return {
    path,
    kubeConfig: () => {
      const kubeConfig = new KubeConfig();
      kubeConfig.loadFromFile(path);
      return kubeConfig;
    },
    trust: (pem) => writeFileSync(caPath, pem),
  };
}

export function kubeConfigOf(fake: FakeClusterLike, caPem?: string): KubeConfig {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(fake.kubeconfig(caPem === undefined ? { namespace: NAMESPACE } : { caPem }));
  return kubeConfig;
}

/** The production adapter against the fake, with short deletion bounds so tests stay quick. */
export function adapterOn(
  fake: FakeClusterLike,
  settings: Record<string, string> = {},
  kubeConfig = kubeConfigOf(fake),
): AgentSandboxProvider {
  const env = validEnv({
    [`${P}NAMESPACE`]: NAMESPACE,
    [`${P}RUNTIME_CLASS_NAME`]: RUNTIME_CLASS_NAME,
    [`${P}EXPECTED_RUNTIME_HANDLER`]: RUNTIME_HANDLER,
    [`${P}RECONCILIATION_TIMEOUT_SECONDS`]: '10',
    [`${P}POLL_INTERVAL_MILLISECONDS`]: '50',
    // The fake API applies a request before it answers: nothing of a call lands a second later.
    [`${P}API_SERVER_REQUEST_TIMEOUT_SECONDS`]: '1',
    ...settings,
  });
  return new AgentSandboxProvider({ options: loadAgentSandboxOptions(env, () => true), kubeConfig });
}

/** The Workspace storage readback against the fake, under the same settings as `adapterOn`. */
export function storageOn(
  fake: FakeClusterLike,
  kubeConfig = kubeConfigOf(fake),
): KubernetesWorkspaceStorage {
  return new KubernetesWorkspaceStorage({
    options: { workspaceStorageProviderId: WORKSPACE_STORAGE_PROVIDER_ID },
    kubeConfig,
  });
}

/** The network policy verifier against the fake, over the same namespace as `adapterOn`. */
export function verifierOn(
  fake: FakeClusterLike,
  kubeConfig = kubeConfigOf(fake),
  timeoutMs?: number,
): CiliumNetworkPolicyVerifier {
  return new CiliumNetworkPolicyVerifier({
    options: { namespace: NAMESPACE },
    kubeConfig,
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
  });
}

/**
 * A project's CiliumNetworkPolicy for one generation, as its owner would write it: labelled with the
 * project hash and generation, and selecting the Pods the adapter labels for that generation.
 */
export function ciliumPolicyObject(
  p: { tenantId: string; projectId: string; generation: number; name?: string },
  matchLabels?: Record<string, string>,
) {
  const projectHash = projectHashOf(p.tenantId, p.projectId);
  const generation = String(p.generation);
  return {
    apiVersion: CILIUM,
    kind: 'CiliumNetworkPolicy',
    metadata: {
      name: p.name ?? `sandlot-${projectHash.slice(0, 12)}-g${generation}`,
      namespace: NAMESPACE,
      labels: { [LABELS.projectHash]: projectHash, [LABELS.networkPolicyGeneration]: generation },
    },
    spec: {
      endpointSelector: {
        matchLabels: matchLabels ?? {
          [LABELS.projectHash]: projectHash,
          [LABELS.networkPolicyGeneration]: generation,
        },
      },
      egress: [{ toFQDNs: [{ matchName: 'registry.npmjs.org' }] }],
    },
  };
}

/** Plants each request's Workspace PVC (once) before provisioning, as the storage lifecycle would. */
export function withWorkspaces(
  fake: FakeClusterLike,
  provider: SandboxProvider,
  { changeFeed = false } = {},
): SandboxProvider {
  const planted = new Set<string>();
  // The change feed only when asked for: the observer's passes otherwise stay the only observer.
  const feed =
    changeFeed && hasChangeFeed(provider) ? { followChanges: provider.followChanges.bind(provider) } : {};
  return {
    ...feed,
    identity: provider.identity,
    optionsSnapshot: () => provider.optionsSnapshot(),
    provision: (request, options) => {
      if (!planted.has(request.workspace.volumeId)) {
        planted.add(request.workspace.volumeId);
        plantWorkspace(fake, request);
      }
      return provider.provision(request, options);
    },
    describe: (ref, options) => provider.describe(ref, options),
    listOwned: (query, options) => provider.listOwned(query, options),
    renew: (request, options) => provider.renew(request, options),
    release: (request, options) => provider.release(request, options),
    callSettled: (call, listedAt) => provider.callSettled(call, listedAt),
  };
}
