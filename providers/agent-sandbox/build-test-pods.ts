// The BuildTest Pods and their deny-all policy as Kubernetes objects. The command Pod runs the
// accepted executable on the lease's exact Workspace PVC (writable), beside the `preparation`
// helper: a native sidecar (an init container with restartPolicy Always) running the profile's
// collector image, which receives the seed over exec, prepares the repository into the Workspace,
// and passes its startup probe only once the runner released the command after checking the
// receipt. The kubelet starts the command container only after that probe passed, so the command
// never runs on an unchecked repository. The helper's private state is an emptyDir the command
// container does not mount. The collector Pod runs the trusted collector command with the same PVC
// mounted read-only. Both run offline under a per-operation, per-role deny-all NetworkPolicy.
import { canonicalJson } from '../../lib/canonical-json.ts';
import type {
  AcceptedCommandSpec,
  BuildTestBinding,
  BuildTestProfileSnapshot,
  PodRole,
  PreparationReceipt,
} from '../build-test.ts';
import type { OwnerBinding } from '../provider.ts';
import { RUN_AS, WORKSPACE_VOLUME, type WorkspacePlan } from './builders.ts';
import type { V1Container, V1Pod } from './client-node.ts';
import type { KubeObject } from './kube-object.ts';
import {
  BUILD_TEST_ANNOTATIONS as A,
  buildTestPodName,
  buildTestPolicyName,
  COLLECTOR_CONTAINER,
  COMMAND_CONTAINER,
  PREPARATION_CONTAINER,
  repositoryPathOf,
  roleLabels,
  STATE_MOUNT,
  STATE_VOLUME,
} from './build-test-names.ts';
import { ownerAnnotations, ownerLabels } from './owner-labels.ts';

/** What the helpers need to know, carried by both Pods as canonical JSON in an annotation. */
export interface HelperRequest {
  operationId: string;
  checkpointId: string;
  requestFingerprint: string;
  version: 1 | 2;
  /** The prepared repository's path inside the Pods. */
  repositoryPath: string;
  workingDirectory: string;
  timeoutSeconds: number;
  outputs: string[];
  source: { seedSha256: string; seedLength: number; baseSha: string } | null;
  /** Collector only: the command Pod it reads after, and that Pod's checked receipt. */
  commandPodUid?: string;
  preparation?: PreparationReceipt | null;
}

/** The helper's argv for one exec action: the trusted collector command, then the action. */
export const helperCommand = (profile: BuildTestProfileSnapshot, ...action: string[]): string[] => [
  profile.collector.executable,
  ...profile.collector.args,
  ...action,
];

export interface PodPlan {
  binding: BuildTestBinding;
  owner: OwnerBinding;
  leaseResourceId: string;
  namespace: string;
  runtimeClassName: string;
  profile: BuildTestProfileSnapshot;
  workspace: WorkspacePlan;
}

function metadata(plan: PodPlan, name: string, role: PodRole, extra: Record<string, string>) {
  const { binding } = plan;
  return {
    name,
    namespace: plan.namespace,
    labels: { ...ownerLabels(plan.owner), ...roleLabels(binding.operationId, role) },
    annotations: {
      ...ownerAnnotations(plan.owner),
      [A.requestFingerprint]: binding.requestFingerprint,
      [A.operationId]: binding.operationId,
      [A.checkpointId]: binding.checkpoint.checkpointId,
      [A.acceptedCommandHash]: binding.acceptedCommandHash,
      [A.leaseResourceId]: plan.leaseResourceId,
      ...extra,
    },
  };
}

const hardened = {
  allowPrivilegeEscalation: false,
  privileged: false,
  readOnlyRootFilesystem: true,
  runAsNonRoot: true,
  capabilities: { drop: ['ALL'] },
};

function resourcesOf(r: BuildTestProfileSnapshot['resources']['command']) {
  const amounts = { cpu: r.cpu, memory: r.memory, 'ephemeral-storage': r.ephemeralStorage };
  return { requests: amounts, limits: amounts };
}

function podSpec(
  plan: PodPlan,
  role: PodRole,
  containers: V1Container[],
  init: V1Container[],
  deadline: number,
) {
  const { workspace } = plan;
  return {
    runtimeClassName: plan.runtimeClassName,
    restartPolicy: 'Never',
    activeDeadlineSeconds: deadline,
    automountServiceAccountToken: false,
    enableServiceLinks: false,
    hostNetwork: false,
    hostPID: false,
    hostIPC: false,
    nodeSelector: { 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64' },
    securityContext: {
      runAsNonRoot: true,
      runAsUser: RUN_AS,
      runAsGroup: RUN_AS,
      fsGroup: RUN_AS,
      seccompProfile: { type: 'RuntimeDefault' },
    },
    ...(init.length > 0 ? { initContainers: init } : {}),
    containers,
    volumes: [
      {
        name: WORKSPACE_VOLUME,
        persistentVolumeClaim: { claimName: workspace.pvcName, readOnly: role === 'collector' },
      },
      { name: STATE_VOLUME, emptyDir: { sizeLimit: '1Gi' } },
    ],
  };
}

const workspaceMount = (workspace: WorkspacePlan, readOnly: boolean) => ({
  name: WORKSPACE_VOLUME,
  mountPath: workspace.mountPath,
  readOnly,
});
const stateMount = { name: STATE_VOLUME, mountPath: STATE_MOUNT };

/** The helper request of a command Pod. */
export function commandRequest(plan: PodPlan, command: AcceptedCommandSpec): HelperRequest {
  return {
    operationId: plan.binding.operationId,
    checkpointId: plan.binding.checkpoint.checkpointId,
    requestFingerprint: plan.binding.requestFingerprint,
    version: command.version,
    repositoryPath: repositoryPathOf(plan.workspace.mountPath, plan.binding.operationId),
    workingDirectory: command.workingDirectory,
    timeoutSeconds: command.timeoutSeconds,
    outputs: [...command.outputs],
    source: command.source === null ? null : { ...command.source },
  };
}

export function buildCommandPod(plan: PodPlan, command: AcceptedCommandSpec): V1Pod {
  const { profile, workspace } = plan;
  const request = commandRequest(plan, command);
  const name = buildTestPodName(plan.binding.operationId, 'command');
  const timeout = Math.min(command.timeoutSeconds, profile.resources.commandTimeoutSeconds);
  const probeSeconds = 2;
  const preparation: V1Container = {
    name: PREPARATION_CONTAINER,
    image: profile.images.collector,
    imagePullPolicy: 'IfNotPresent',
    command: helperCommand(profile, 'serve-preparation'),
    restartPolicy: 'Always',
    // Passes only once the runner released the command: until then the command container waits.
    startupProbe: {
      exec: { command: helperCommand(profile, 'released') },
      periodSeconds: probeSeconds,
      failureThreshold: Math.ceil(profile.resources.collectorTimeoutSeconds / probeSeconds) + 1,
    },
    resources: resourcesOf(profile.resources.collector),
    securityContext: hardened,
    volumeMounts: [workspaceMount(workspace, false), stateMount],
  };
  const main: V1Container = {
    name: COMMAND_CONTAINER,
    image: profile.images.command,
    imagePullPolicy: 'IfNotPresent',
    command: [command.executable],
    args: [...command.args],
    env: Object.entries(command.environment).map(([key, value]) => ({ name: key, value })),
    workingDir:
      command.workingDirectory === '.'
        ? request.repositoryPath
        : `${request.repositoryPath}/${command.workingDirectory}`,
    resources: resourcesOf(profile.resources.command),
    securityContext: hardened,
    // The Workspace only: never the helper's private state.
    volumeMounts: [workspaceMount(workspace, false)],
  };
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: metadata(plan, name, 'command', {
      [A.request]: canonicalJson(request),
      [A.maxLogBytes]: String(profile.resources.maxLogBytes),
    }),
    spec: podSpec(
      plan,
      'command',
      [main],
      [preparation],
      timeout + profile.resources.collectorTimeoutSeconds,
    ),
  };
}

export function buildCollectorPod(plan: PodPlan, request: HelperRequest): V1Pod {
  const { profile, workspace } = plan;
  const name = buildTestPodName(plan.binding.operationId, 'collector');
  const collector: V1Container = {
    name: COLLECTOR_CONTAINER,
    image: profile.images.collector,
    imagePullPolicy: 'IfNotPresent',
    command: helperCommand(profile),
    resources: resourcesOf(profile.resources.collector),
    securityContext: hardened,
    volumeMounts: [workspaceMount(workspace, true), stateMount],
  };
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: metadata(plan, name, 'collector', { [A.request]: canonicalJson(request) }),
    spec: podSpec(plan, 'collector', [collector], [], profile.resources.collectorTimeoutSeconds),
  };
}

/** No rules and both policy types: the selected Pod may neither receive nor send anything. */
export function buildDenyAllPolicy(plan: PodPlan, role: PodRole): KubeObject {
  const { binding } = plan;
  const name = buildTestPolicyName(binding.operationId, role);
  const meta = metadata(plan, name, role, {});
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: meta,
    spec: {
      podSelector: { matchLabels: roleLabels(binding.operationId, role) },
      policyTypes: ['Ingress', 'Egress'],
    },
  };
}
