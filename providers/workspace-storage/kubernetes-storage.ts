// Workspace storage on Kubernetes: the volume's PVC (in the lease's namespace, named as the Agent
// Sandbox adapter names it, pvcNameOf) and the PersistentVolume its spec.volumeName names, read back
// through client-node and reported as facts, never judged here (actors/workspace/storage.ts does),
// together with the cluster it answered from and the one the lease recorded (both by cluster pin).
// It implements the WorkspaceStorage port (actors/ports.ts) and passes the same contract suite
// (test/contract/workspace-storage-cases.ts) as the embedded implementation.
//
// The PVC carries, beside the owner-generation annotations the adapter checks (names.ts), the
// storage selection it was made under:
//
//   sandlot.dev/storage-provider:          <providerId>
//   sandlot.dev/storage-options-revision:  <optionsRevision>
//
// The selection configured is the settings' Workspace storage provider
// (SANDLOT_AGENT_SANDBOX_WORKSPACE_STORAGE_PROVIDER_ID, the one the lease's options snapshot records)
// at STORAGE_OPTIONS_REVISION: that provider takes no options of its own yet.
//
// Any failed read throws a ProviderError (a timeout, a 5xx, a 403, a CA that cannot be read now, a
// lease snapshot that is not an Agent Sandbox one): an outage is never a verdict. Only an exact 404
// reads as absence.
import type {
  KubeConfig,
  V1PersistentVolume,
  V1PersistentVolumeClaim,
} from '../agent-sandbox/client-node.ts';
import { canonicalJson, sha256Hex } from '../../lib/canonical-json.ts';
import { ProviderError, uncertain } from '../errors.ts';
import type { CallOptions } from '../provider.ts';
import { clusterPinOf, livePinOf } from '../agent-sandbox/cluster-pin.ts';
import { KubeClient } from '../agent-sandbox/kube-client.ts';
import { ANNOTATIONS, pvcNameOf } from '../agent-sandbox/names.ts';
import { parseSnapshot } from '../agent-sandbox/options-snapshot.ts';
import type { AgentSandboxOptions } from '../agent-sandbox/options.ts';
import type {
  LeaseProviderRecord,
  StorageEvidence,
  StorageSelection,
  WorkspaceStorage,
} from '../../actors/ports.ts';

export const STORAGE_ANNOTATIONS = {
  providerId: 'sandlot.dev/storage-provider',
  optionsRevision: 'sandlot.dev/storage-options-revision',
} as const;

/** The options revision of the Workspace storage provider, which has no options of its own yet. */
export const STORAGE_OPTIONS_REVISION = '1';

/** The storage selection the settings configure. */
export function storageSelectionOf(
  options: Pick<AgentSandboxOptions, 'workspaceStorageProviderId'>,
): StorageSelection {
  return { providerId: options.workspaceStorageProviderId, optionsRevision: STORAGE_OPTIONS_REVISION };
}

export interface KubernetesWorkspaceStorageDeps {
  /** The adapter's settings: the Workspace storage provider PVCs must have been made under. */
  options: Pick<AgentSandboxOptions, 'workspaceStorageProviderId'>;
  /** Must select an https:// cluster with a CA to pin (checked at construction, as the adapter does). */
  kubeConfig: KubeConfig;
  /** Budget of one inspection, both reads together (default 5 s). */
  timeoutMs?: number;
}

export class KubernetesWorkspaceStorage implements WorkspaceStorage {
  readonly selection: StorageSelection;
  private readonly kubeConfig: KubeConfig;
  private readonly kube: KubeClient;
  private readonly timeoutMs: number;

  constructor(deps: KubernetesWorkspaceStorageDeps) {
    // Throws ClusterTrustError for http://, insecure-skip-tls-verify or no CA: refused at start-up.
    clusterPinOf(deps.kubeConfig);
    this.kubeConfig = deps.kubeConfig;
    this.kube = new KubeClient(deps.kubeConfig);
    this.selection = storageSelectionOf(deps.options);
    this.timeoutMs = deps.timeoutMs ?? 5_000;
  }

  /**
   * Reads in the cluster and namespace the lease recorded (its options snapshot), never the ones
   * this process was started with: the live pin is computed afresh first, and when it is not the
   * lease's, nothing is read there.
   */
  async inspect(
    volume: { volumeId: string },
    lease: LeaseProviderRecord,
    signal: AbortSignal,
  ): Promise<StorageEvidence> {
    const { namespace, clusterPin } = parseSnapshot(lease.providerOptions);
    const cluster = { recorded: clusterPin, live: livePinOf(this.kubeConfig) };
    const none = { cluster, selection: null, pvc: null, pv: null };
    if (cluster.live !== cluster.recorded) return none;
    const name = pvcNameOf(volume.volumeId);
    // A volume ID that names no valid PVC cannot have one: absence, not an outage.
    if (name === undefined) return none;
    const call: CallOptions = { signal, deadline: new Date(Date.now() + this.timeoutMs) };
    try {
      const pvc = await this.kube.getPvc(namespace, name, call);
      if (pvc === null) return none;
      const volumeName = pvc.spec?.volumeName || null;
      const pv = volumeName === null ? null : await this.kube.getPv(volumeName, call);
      return { cluster, ...factsOf(namespace, name, pvc, pv) };
    } catch (error) {
      if (error instanceof ProviderError) throw error;
      throw uncertain('adapter-error', 'Reading the Workspace PVC or its PersistentVolume failed', error);
    }
  }
}

/** The digest a binding pins of a claim's whole `spec`, as the API server answered it. */
export const claimSpecSha256Of = (spec: object): string => sha256Hex(canonicalJson(spec));

/** The facts of one PVC and its PV, as read (pure). A PVC without a UID is not a readable answer. */
export function factsOf(
  namespace: string,
  name: string,
  pvc: V1PersistentVolumeClaim,
  pv: V1PersistentVolume | null,
): Omit<StorageEvidence, 'cluster'> {
  const uid = pvc.metadata?.uid;
  if (!uid)
    throw uncertain('adapter-error', `PersistentVolumeClaim ${namespace}/${name} came back without a UID`);
  const annotations = pvc.metadata?.annotations ?? {};
  const providerId = annotations[STORAGE_ANNOTATIONS.providerId];
  const optionsRevision = annotations[STORAGE_ANNOTATIONS.optionsRevision];
  if (pv !== null && !pv.metadata?.uid) {
    throw uncertain('adapter-error', `PersistentVolume ${pv.metadata?.name ?? ''} came back without a UID`);
  }
  const claimRef = pv?.spec?.claimRef;
  return {
    selection:
      providerId === undefined || optionsRevision === undefined ? null : { providerId, optionsRevision },
    pvc: {
      namespace: pvc.metadata?.namespace ?? namespace,
      name: pvc.metadata?.name ?? name,
      uid,
      environmentId: annotations[ANNOTATIONS.environmentId] ?? null,
      resourceGeneration: annotations[ANNOTATIONS.volumeResourceGeneration] ?? null,
      dataGeneration: annotations[ANNOTATIONS.volumeDataGeneration] ?? null,
      phase: pvc.status?.phase ?? null,
      volumeName: pvc.spec?.volumeName || null,
      deleting: pvc.metadata?.deletionTimestamp != null,
      claimSpecSha256: claimSpecSha256Of(pvc.spec ?? {}),
    },
    pv:
      pv === null
        ? null
        : {
            name: pv.metadata?.name ?? '',
            uid: pv.metadata?.uid ?? '',
            claimRef:
              claimRef === undefined
                ? null
                : {
                    namespace: claimRef.namespace ?? null,
                    name: claimRef.name ?? null,
                    uid: claimRef.uid ?? null,
                  },
            mountOptions: [...(pv.spec?.mountOptions ?? [])],
          },
  };
}
