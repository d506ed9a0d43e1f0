// Read-back checks of what the controllers made from our claim. Names are not trusted: the Sandbox
// must name our claim's UID as its controller, and the Pod our Sandbox's UID. The Pod must actually
// run what the template asked for: the RuntimeClass, the security settings, the exact Workspace
// mount and resources, and, when the snapshot pins one, the AgentHost launch profile. A failure is an
// ownership error (an invariant violation, never adopted).
import type { V1Container, V1Pod } from './client-node.ts';
import { ownership } from '../errors.ts';
import { CONTAINER_NAME, RUN_AS, WORKSPACE_VOLUME, type WorkspacePlan } from './builders.ts';
import type { KubeObject, OwnerReference } from './kube-object.ts';
import type { AgentSandboxSnapshot } from './options-snapshot.ts';
import { quantityValue } from './quantity.ts';
import { assertAgentHost } from './validate-agent-host.ts';

function expect(condition: boolean, code: string, message: string): asserts condition {
  if (!condition) throw ownership(code, message);
}

export function controllerOf(references: OwnerReference[] | undefined): OwnerReference | undefined {
  const controllers = (references ?? []).filter((reference) => reference.controller === true);
  return controllers.length === 1 ? controllers[0] : undefined;
}

/** The Sandbox must be controlled by exactly our claim (by UID); returns the Sandbox's UID. */
export function validateSandbox(
  sandbox: KubeObject,
  name: string,
  claim: { name: string; uid: string },
): string {
  const uid = sandbox.metadata?.uid;
  expect(
    sandbox.metadata?.name === name && typeof uid === 'string' && uid !== '',
    'sandbox-invalid',
    `Sandbox ${name} has no identity`,
  );
  const controller = controllerOf(sandbox.metadata?.ownerReferences);
  expect(
    controller?.kind === 'SandboxClaim' && controller.uid === claim.uid && controller.name === claim.name,
    'sandbox-owner-mismatch',
    `Sandbox ${name} is not controlled by SandboxClaim ${claim.name} (${claim.uid})`,
  );
  return uid;
}

function sameQuantity(actual: unknown, wanted: string, unit: 'cpu' | 'memory'): boolean {
  const a = quantityValue(actual, unit);
  const w = quantityValue(wanted, unit);
  return a !== undefined && w !== undefined && Math.abs(a - w) < 1e-9;
}

function validateContainer(
  container: V1Container | undefined,
  pod: string,
  snapshot: AgentSandboxSnapshot,
  workspace: WorkspacePlan,
): void {
  expect(container !== undefined, 'pod-container-missing', `Pod ${pod} has no ${CONTAINER_NAME} container`);
  const security = container.securityContext;
  expect(
    security?.allowPrivilegeEscalation === false &&
      security.privileged !== true &&
      (security.capabilities?.drop ?? []).includes('ALL') &&
      (security.capabilities?.add ?? []).length === 0,
    'pod-security-mismatch',
    `Pod ${pod}: container ${CONTAINER_NAME} may escalate privileges or keeps capabilities`,
  );
  expect(
    container.image === snapshot.containerImage,
    'pod-image-mismatch',
    `Pod ${pod} does not run the pinned image`,
  );
  const { requests, limits } = container.resources ?? {};
  expect(
    sameQuantity(requests?.cpu, snapshot.cpu, 'cpu') &&
      sameQuantity(limits?.cpu, snapshot.cpu, 'cpu') &&
      sameQuantity(requests?.memory, snapshot.memory, 'memory') &&
      sameQuantity(limits?.memory, snapshot.memory, 'memory'),
    'pod-resources-mismatch',
    `Pod ${pod} does not request and limit ${snapshot.cpu} CPU and ${snapshot.memory} memory`,
  );
  const mounts = (container.volumeMounts ?? []).filter((mount) => mount.name === WORKSPACE_VOLUME);
  expect(
    mounts.length === 1 &&
      mounts[0]?.mountPath === workspace.mountPath &&
      (mounts[0].readOnly === true) === workspace.readOnly,
    'pod-mount-mismatch',
    `Pod ${pod} does not mount the Workspace at ${workspace.mountPath} exactly once`,
  );
}

/** The Pod must be controlled by our Sandbox (by UID) and run exactly the pinned blueprint. */
export function validatePod(
  pod: V1Pod,
  name: string,
  sandbox: { name: string; uid: string },
  snapshot: AgentSandboxSnapshot,
  workspace: WorkspacePlan,
): void {
  expect(pod.metadata?.name === name && !!pod.metadata.uid, 'pod-invalid', `Pod ${name} has no identity`);
  const controller = controllerOf(pod.metadata.ownerReferences);
  expect(
    controller?.kind === 'Sandbox' && controller.uid === sandbox.uid && controller.name === sandbox.name,
    'pod-owner-mismatch',
    `Pod ${name} is not controlled by Sandbox ${sandbox.name} (${sandbox.uid})`,
  );
  const spec = pod.spec;
  expect(
    spec?.runtimeClassName === snapshot.runtimeClassName,
    'pod-runtime-class-mismatch',
    `Pod ${name} runs under RuntimeClass ${spec?.runtimeClassName ?? '(none)'}, not ${snapshot.runtimeClassName}`,
  );
  const security = spec.securityContext;
  expect(
    spec.automountServiceAccountToken === false &&
      spec.hostNetwork !== true &&
      spec.hostPID !== true &&
      spec.hostIPC !== true &&
      security?.runAsNonRoot === true &&
      security.runAsUser === RUN_AS &&
      security.seccompProfile?.type === 'RuntimeDefault',
    'pod-security-mismatch',
    `Pod ${name} does not keep the required security settings`,
  );
  const claims = (spec.volumes ?? []).filter((volume) => volume.persistentVolumeClaim !== undefined);
  expect(
    claims.length === 1 &&
      claims[0]?.name === WORKSPACE_VOLUME &&
      claims[0].persistentVolumeClaim?.claimName === workspace.pvcName,
    'pod-pvc-mismatch',
    `Pod ${name} does not mount exactly the Workspace PVC ${workspace.pvcName}`,
  );
  const containers = spec.containers;
  expect(containers.length === 1, 'pod-container-mismatch', `Pod ${name} runs other containers`);
  expect(
    (spec.initContainers ?? []).length === 0,
    'pod-container-mismatch',
    `Pod ${name} runs init containers`,
  );
  validateContainer(
    containers.find((c) => c.name === CONTAINER_NAME),
    name,
    snapshot,
    workspace,
  );
  if (snapshot.agentHost !== undefined) {
    assertAgentHost(
      spec,
      pod.metadata.labels,
      snapshot.agentHost,
      workspace.mountPath,
      'pod-agent-host-mismatch',
      `Pod ${name}`,
    );
  }
}
