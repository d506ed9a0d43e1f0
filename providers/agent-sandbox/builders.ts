// The three objects one owner operation creates: an owner-specific SandboxTemplate (the Pod blueprint
// with the exact Workspace PVC), a zero-replica SandboxWarmPool naming it (so a claim cold-starts
// its own Sandbox, never adopting a pre-warmed one), and the SandboxClaim. Every field here is in the
// CRD schemas; the API server rejects unknown fields, and builders.test.ts checks them against those
// schemas. The AgentHost launch profile (agent-host-profile.ts) is added only when the snapshot pins one.
import type { OwnerBinding } from '../provider.ts';
import { AGENT_HOST_LABELS, profileContainer, profileVolumeSources } from './agent-host-profile.ts';
import type { KubeObject } from './kube-object.ts';
import { ANNOTATIONS, GROUP, LABELS, MANAGED_BY, projectHashOf, VERSION, type ObjectNames } from './names.ts';
import { shutdownGraceOf, type AgentSandboxSnapshot } from './options-snapshot.ts';
import { ownerAnnotations, ownerLabels } from './owner-labels.ts';
import { shutdownTimeFor } from './shutdown-time.ts';

export const CONTAINER_NAME = 'agent';
export const WORKSPACE_VOLUME = 'workspace';
export const TMP_VOLUME = 'tmp';
export const RUN_AS = 1000;

/** The Workspace PVC as verified before creation; recorded on the template for later read-back. */
export interface WorkspacePlan {
  pvcName: string;
  pvcUid: string;
  resourceGeneration: number;
  dataGeneration: number;
  mountPath: string;
  readOnly: boolean;
}

export interface Blueprint {
  owner: OwnerBinding;
  names: ObjectNames;
  snapshot: AgentSandboxSnapshot;
  workspace: WorkspacePlan;
  networkPolicyGeneration: number;
  /** The lease's expiry; a string sets the claim's backstop shutdown time, null/absent sets none. */
  expiresAt?: string | null;
}

const API_VERSION = `${GROUP}/${VERSION}`;

function metadata(name: string, blueprint: Blueprint, annotations: Record<string, string> = {}) {
  return {
    name,
    namespace: blueprint.snapshot.namespace,
    labels: ownerLabels(blueprint.owner),
    annotations: { ...ownerAnnotations(blueprint.owner), ...annotations },
  };
}

export function workspaceAnnotations(workspace: WorkspacePlan): Record<string, string> {
  return {
    [ANNOTATIONS.workspacePvc]: workspace.pvcName,
    [ANNOTATIONS.workspacePvcUid]: workspace.pvcUid,
    [ANNOTATIONS.volumeResourceGeneration]: String(workspace.resourceGeneration),
    [ANNOTATIONS.volumeDataGeneration]: String(workspace.dataGeneration),
    [ANNOTATIONS.workspaceMountPath]: workspace.mountPath,
    [ANNOTATIONS.workspaceReadOnly]: String(workspace.readOnly),
  };
}

/**
 * Labels the Pod carries. The project's Cilium policy for a generation selects its Pods by
 * `sandlot.dev/project-hash` and `sandlot.dev/network-policy-generation` (cilium-verifier.ts checks
 * that it does); the owner hash tells one Environment's Pod from another's.
 */
export function podLabels(
  blueprint: Pick<Blueprint, 'owner' | 'networkPolicyGeneration'>,
): Record<string, string> {
  return {
    [LABELS.managedBy]: MANAGED_BY,
    [LABELS.ownerHash]: blueprint.owner.ownerHash,
    [LABELS.projectHash]: projectHashOf(blueprint.owner.tenantId, blueprint.owner.projectId),
    [LABELS.networkPolicyGeneration]: String(blueprint.networkPolicyGeneration),
  };
}

export function buildTemplate(blueprint: Blueprint): KubeObject {
  const { snapshot, workspace } = blueprint;
  const resources = { cpu: snapshot.cpu, memory: snapshot.memory };
  const profile = snapshot.agentHost;
  const host = profile === undefined ? undefined : profileContainer(profile, workspace.mountPath);
  return {
    apiVersion: API_VERSION,
    kind: 'SandboxTemplate',
    metadata: metadata(blueprint.names.template, blueprint, workspaceAnnotations(workspace)),
    spec: {
      podTemplate: {
        metadata: {
          labels: { ...podLabels(blueprint), ...(profile === undefined ? {} : AGENT_HOST_LABELS) },
        },
        spec: {
          runtimeClassName: snapshot.runtimeClassName,
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          hostNetwork: false,
          hostPID: false,
          hostIPC: false,
          restartPolicy: 'Never',
          nodeSelector: { 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64' },
          securityContext: {
            runAsNonRoot: true,
            runAsUser: RUN_AS,
            runAsGroup: RUN_AS,
            fsGroup: RUN_AS,
            seccompProfile: { type: 'RuntimeDefault' },
          },
          containers: [
            {
              name: CONTAINER_NAME,
              image: snapshot.containerImage,
              imagePullPolicy: 'IfNotPresent',
              resources: { requests: resources, limits: resources },
              securityContext: {
                allowPrivilegeEscalation: false,
                privileged: false,
                readOnlyRootFilesystem: true,
                runAsNonRoot: true,
                capabilities: { drop: ['ALL'] },
              },
              ...(host === undefined
                ? {}
                : {
                    // The SDK's working directory is the exact negotiated Workspace.
                    workingDir: host.workingDir,
                    ports: host.ports,
                    readinessProbe: host.readinessProbe,
                    livenessProbe: host.livenessProbe,
                  }),
              volumeMounts: [
                { name: WORKSPACE_VOLUME, mountPath: workspace.mountPath, readOnly: workspace.readOnly },
                { name: TMP_VOLUME, mountPath: '/tmp' },
                ...(host?.volumeMounts ?? []),
              ],
            },
          ],
          volumes: [
            {
              name: WORKSPACE_VOLUME,
              persistentVolumeClaim: { claimName: workspace.pvcName, readOnly: workspace.readOnly },
            },
            { name: TMP_VOLUME, emptyDir: { sizeLimit: '1Gi' } },
            ...(profile === undefined ? [] : profileVolumeSources(profile)),
          ],
        },
      },
      // Only the profile asks the Sandbox controller for the Sandbox's own private Service.
      ...(profile === undefined ? {} : { service: true }),
      // Cilium policies select the Pod by its labels; the controller's own NetworkPolicy would fight them.
      networkPolicyManagement: 'Unmanaged',
      envVarsInjectionPolicy: 'Disallowed',
      volumeClaimTemplatesPolicy: 'Disallowed',
    },
  };
}

export function buildPool(blueprint: Blueprint): KubeObject {
  return {
    apiVersion: API_VERSION,
    kind: 'SandboxWarmPool',
    metadata: metadata(blueprint.names.pool, blueprint),
    spec: { replicas: 0, sandboxTemplateRef: { name: blueprint.names.template } },
  };
}

export function buildClaim(blueprint: Blueprint): KubeObject {
  const { expiresAt } = blueprint;
  return {
    apiVersion: API_VERSION,
    kind: 'SandboxClaim',
    metadata: metadata(blueprint.names.claim, blueprint),
    spec: {
      warmPoolRef: { name: blueprint.names.pool },
      lifecycle: {
        // Foreground: the claim stays visible until its Sandbox and Pod are gone, so absence is provable.
        shutdownPolicy: 'DeleteForeground',
        // A backstop far past the lease's expiry (shutdown-time.ts), never how a lease ends.
        ...(typeof expiresAt === 'string'
          ? { shutdownTime: shutdownTimeFor(expiresAt, shutdownGraceOf(blueprint.snapshot)) }
          : {}),
      },
    },
  };
}
