// Phases are read from what Kubernetes observed of the Pod, never from a Ready condition (which lags,
// and can carry a stale generation): scheduled once the scheduler bound it, image-ready once the
// kubelet resolved the image, started once the container ran. Finished comes only from the Sandbox's
// Finished condition, and only when that condition describes the Sandbox's current generation.
import type { V1Pod } from './client-node.ts';
import type { ProviderPhase, ProviderResource } from '../provider.ts';
import { CONTAINER_NAME } from './builders.ts';
import type { KubeObject } from './kube-object.ts';

/** The Pod's phase; `pending` while it is not yet scheduled. */
export function phaseOf(pod: V1Pod): ProviderPhase {
  const scheduled = (pod.status?.conditions ?? []).some(
    (condition) => condition.type === 'PodScheduled' && condition.status === 'True',
  );
  if (!scheduled) return 'pending';
  const status = (pod.status?.containerStatuses ?? []).find((s) => s.name === CONTAINER_NAME);
  const startedAt = status?.state?.running?.startedAt ?? status?.state?.terminated?.startedAt;
  if (startedAt !== undefined && startedAt !== null) return 'started';
  if (status?.imageID) return 'image-ready';
  return 'scheduled';
}

const FINISHED_REASONS = new Set(['PodSucceeded', 'PodFailed']);

export function finishedOf(sandbox: KubeObject): ProviderResource['finished'] | undefined {
  const generation = sandbox.metadata?.generation;
  const condition = (sandbox.status?.conditions ?? []).find((c) => c.type === 'Finished');
  if (
    condition?.status !== 'True' ||
    !FINISHED_REASONS.has(condition.reason ?? '') ||
    typeof generation !== 'number' ||
    condition.observedGeneration !== generation
  ) {
    return undefined;
  }
  return { reason: condition.reason as 'PodSucceeded' | 'PodFailed' };
}
