// What must hold in the cluster before a Sandbox may use it, and must still hold whenever one is read
// back: the RuntimeClass resolves to the expected (VM) handler, and the Workspace PVC is the exact
// one the request names: Bound, for this Environment, at this volume and a data generation no newer
// than the request's (a suspend flush moves the volume's data generation on, not the annotation).
import type { ProviderError } from '../errors.ts';
import type { CallOptions } from '../provider.ts';
import type { KubeClient } from './kube-client.ts';
import { ANNOTATIONS } from './names.ts';
import type { AgentSandboxSnapshot } from './options-snapshot.ts';

/** Builds the error a failed check raises: definitive before creation, ownership on read-back. */
export type Refuse = (code: string, message: string) => ProviderError;

export async function checkRuntimeClass(
  kube: KubeClient,
  snapshot: AgentSandboxSnapshot,
  call: CallOptions,
  refuse: Refuse,
): Promise<void> {
  const runtimeClass = await kube.getRuntimeClass(snapshot.runtimeClassName, call);
  if (runtimeClass === null) {
    throw refuse('runtime-class-missing', `RuntimeClass ${snapshot.runtimeClassName} does not exist`);
  }
  if (runtimeClass.handler !== snapshot.expectedRuntimeHandler) {
    throw refuse(
      'runtime-handler-mismatch',
      `RuntimeClass ${snapshot.runtimeClassName} has handler ${runtimeClass.handler || '(none)'}, ` +
        `not ${snapshot.expectedRuntimeHandler}`,
    );
  }
}

export interface PvcExpectation {
  pvcName: string;
  environmentId: string;
  resourceGeneration: number;
  dataGeneration: number;
  /** Known once recorded on the template: the read-back must find the very same PVC. */
  uid?: string;
}

/**
 * The PVC's data generation annotation is written when storage makes the claim, and a verified
 * suspend flush does not rewrite it: the volume record moves on (docs/suspend-resume.md "Workspace
 * flush"). So a request at data generation `d` accepts an annotated count `a ≤ d`. Whether the
 * volume's own verified flushes chain `a` to `d` is the admission's storage check
 * (actors/workspace/storage.ts), made before the lease is reserved; the adapter cannot see flushes.
 * An annotation ahead of the request, or one that is not a count, is refused.
 */
function dataGenerationHolds(annotated: string | undefined, requested: number): boolean {
  if (annotated === undefined || !/^(0|[1-9][0-9]{0,15})$/.test(annotated)) return false;
  const value = Number(annotated);
  return Number.isSafeInteger(value) && value <= requested;
}

/** Returns the PVC's UID once it is Bound and carries exactly the expected annotations. */
export async function checkWorkspacePvc(
  kube: KubeClient,
  snapshot: AgentSandboxSnapshot,
  expected: PvcExpectation,
  call: CallOptions,
  refuse: Refuse,
): Promise<string> {
  const pvc = await kube.getPvc(snapshot.namespace, expected.pvcName, call);
  const name = `PersistentVolumeClaim ${snapshot.namespace}/${expected.pvcName}`;
  if (pvc === null) throw refuse('workspace-pvc-missing', `${name} does not exist`);
  const uid = pvc.metadata?.uid;
  if (!uid) throw refuse('workspace-pvc-invalid', `${name} has no UID`);
  if (expected.uid !== undefined && uid !== expected.uid) {
    throw refuse('workspace-pvc-replaced', `${name} has UID ${uid}, not the recorded ${expected.uid}`);
  }
  if (pvc.status?.phase !== 'Bound' || !pvc.spec?.volumeName) {
    throw refuse('workspace-pvc-unbound', `${name} is ${pvc.status?.phase ?? 'in no phase'}, not Bound`);
  }
  if (pvc.metadata?.deletionTimestamp) throw refuse('workspace-pvc-deleting', `${name} is being deleted`);
  const annotations = pvc.metadata?.annotations ?? {};
  const wanted: Record<string, string> = {
    [ANNOTATIONS.environmentId]: expected.environmentId,
    [ANNOTATIONS.volumeResourceGeneration]: String(expected.resourceGeneration),
  };
  const wrong = Object.keys(wanted).filter((key) => annotations[key] !== wanted[key]);
  if (!dataGenerationHolds(annotations[ANNOTATIONS.volumeDataGeneration], expected.dataGeneration)) {
    wrong.push(ANNOTATIONS.volumeDataGeneration);
  }
  if (wrong.length > 0) {
    throw refuse('workspace-pvc-mismatch', `${name} does not carry the expected ${wrong.join(', ')}`);
  }
  return uid;
}
