// Read-back checks of the three objects an operation owns. Each must carry the exact owner binding,
// its deterministic name, and the references that tie claim → pool → template; the template must
// still hold the blueprint the lease's snapshot describes. A failure is an ownership error: the
// object is not (or no longer) what we made, and it is never adopted or reported as ours.
import { ownership } from '../errors.ts';
import type { OwnerBinding } from '../provider.ts';
import { CONTAINER_NAME, WORKSPACE_VOLUME, type WorkspacePlan } from './builders.ts';
import { field, isRecord, type KubeObject } from './kube-object.ts';
import { ANNOTATIONS, LABELS, pvcNameOf, type ObjectNames } from './names.ts';
import type { AgentSandboxSnapshot } from './options-snapshot.ts';
import { assertOwned } from './owner-labels.ts';
import { assertAgentHost } from './validate-agent-host.ts';

function expect(condition: boolean, code: string, message: string): asserts condition {
  if (!condition) throw ownership(code, message);
}

function ownedNamed(object: KubeObject, kind: string, name: string, owner: OwnerBinding, uid?: string): void {
  expect(object.kind === undefined || object.kind === kind, 'kind-mismatch', `${name} is not a ${kind}`);
  expect(
    object.metadata?.name === name,
    'name-mismatch',
    `${kind} ${object.metadata?.name ?? ''} is not ${name}`,
  );
  expect(
    typeof object.metadata?.uid === 'string' && object.metadata.uid !== '',
    'uid-missing',
    `${kind} ${name} has no UID`,
  );
  assertOwned(object, owner, uid);
}

export function validateClaim(
  claim: KubeObject,
  owner: OwnerBinding,
  names: ObjectNames,
  uid?: string,
): string {
  ownedNamed(claim, 'SandboxClaim', names.claim, owner, uid);
  expect(
    field(claim.spec, 'warmPoolRef', 'name') === names.pool,
    'claim-pool-mismatch',
    `SandboxClaim ${names.claim} does not reference SandboxWarmPool ${names.pool}`,
  );
  expect(
    field(claim.spec, 'lifecycle', 'shutdownPolicy') === 'DeleteForeground',
    'claim-lifecycle-mismatch',
    `SandboxClaim ${names.claim} does not use the DeleteForeground shutdown policy`,
  );
  return claim.metadata?.uid ?? '';
}

export function validatePool(pool: KubeObject, owner: OwnerBinding, names: ObjectNames): void {
  ownedNamed(pool, 'SandboxWarmPool', names.pool, owner);
  expect(
    field(pool.spec, 'sandboxTemplateRef', 'name') === names.template,
    'pool-template-mismatch',
    `SandboxWarmPool ${names.pool} does not reference SandboxTemplate ${names.template}`,
  );
  expect(
    field(pool.spec, 'replicas') === 0,
    'pool-not-empty',
    `SandboxWarmPool ${names.pool} is not zero-replica`,
  );
}

export interface TemplateFacts {
  workspace: WorkspacePlan;
  networkPolicyGeneration: number;
}

const count = (text: string | undefined): number | undefined =>
  text !== undefined && /^[0-9]{1,15}$/.test(text) ? Number(text) : undefined;

/** Checks the template against the snapshot and returns the Workspace plan recorded on it. */
export function validateTemplate(
  template: KubeObject,
  owner: OwnerBinding,
  names: ObjectNames,
  snapshot: AgentSandboxSnapshot,
): TemplateFacts {
  const name = `SandboxTemplate ${names.template}`;
  ownedNamed(template, 'SandboxTemplate', names.template, owner);
  const annotations = template.metadata?.annotations ?? {};
  const pvcName = annotations[ANNOTATIONS.workspacePvc] ?? '';
  const pvcUid = annotations[ANNOTATIONS.workspacePvcUid] ?? '';
  const resourceGeneration = count(annotations[ANNOTATIONS.volumeResourceGeneration]);
  const dataGeneration = count(annotations[ANNOTATIONS.volumeDataGeneration]);
  const mountPath = annotations[ANNOTATIONS.workspaceMountPath] ?? '';
  const readOnly = annotations[ANNOTATIONS.workspaceReadOnly];
  expect(
    pvcNameOf(pvcName) === pvcName &&
      pvcUid !== '' &&
      resourceGeneration !== undefined &&
      dataGeneration !== undefined &&
      mountPath.startsWith('/') &&
      (readOnly === 'true' || readOnly === 'false'),
    'template-workspace-invalid',
    `${name} does not record a complete Workspace binding`,
  );
  const podTemplate = field(template.spec, 'podTemplate');
  const podSpec = field(podTemplate, 'spec');
  const labels = field(podTemplate, 'metadata', 'labels');
  const generation = count(isRecord(labels) ? (labels[LABELS.networkPolicyGeneration] as string) : undefined);
  expect(
    isRecord(labels) && labels[LABELS.ownerHash] === owner.ownerHash && generation !== undefined,
    'template-labels-mismatch',
    `${name} does not carry the network-policy selector labels`,
  );
  expect(
    field(template.spec, 'envVarsInjectionPolicy') === 'Disallowed' &&
      field(podSpec, 'automountServiceAccountToken') === false &&
      field(podSpec, 'runtimeClassName') === snapshot.runtimeClassName,
    'template-policy-mismatch',
    `${name} does not pin the runtime class, token automount and environment injection`,
  );
  const containers = field(podSpec, 'containers');
  const container = Array.isArray(containers) ? (containers as unknown[]) : [];
  expect(
    container.length === 1 &&
      field(container[0], 'name') === CONTAINER_NAME &&
      field(container[0], 'image') === snapshot.containerImage,
    'template-image-mismatch',
    `${name} does not run exactly the pinned image`,
  );
  const volumes = field(podSpec, 'volumes');
  const workspace = Array.isArray(volumes)
    ? (volumes as unknown[]).find((v) => field(v, 'name') === WORKSPACE_VOLUME)
    : undefined;
  expect(
    field(workspace, 'persistentVolumeClaim', 'claimName') === pvcName,
    'template-pvc-mismatch',
    `${name} does not mount the recorded Workspace PVC ${pvcName}`,
  );
  if (snapshot.agentHost !== undefined) {
    assertAgentHost(podSpec, labels, snapshot.agentHost, mountPath, 'template-agent-host-mismatch', name);
    expect(
      field(template.spec, 'service') === true,
      'template-agent-host-mismatch',
      `${name} does not ask the Sandbox controller for its Service`,
    );
  }
  return {
    workspace: {
      pvcName,
      pvcUid,
      resourceGeneration: resourceGeneration ?? 0,
      dataGeneration: dataGeneration ?? 0,
      mountPath,
      readOnly: readOnly === 'true',
    },
    networkPolicyGeneration: generation ?? 0,
  };
}
