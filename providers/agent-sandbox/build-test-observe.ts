// Reading a BuildTest Pod back: it is the operation's only when it carries the lease's exact owner
// binding, the operation's role labels and every binding annotation the runner stamped (request
// fingerprint, operation, checkpoint, accepted command hash, lease resource). A same-named Pod that
// does not is refused, never adopted. Then its status maps to an observation: the runner's refusal
// annotation is a preparation failure; an active deadline, an eviction (an output-limit one
// included, build-test-evictions.ts) or an OOM kill is an interruption; a terminated command
// container is an exit code; anything else is still running. The log of an exited command is read
// by the runner afterwards (build-test-log.ts); this mapping only reads the Pod.
import { definitive } from '../errors.ts';
import type { ResourceRef } from '../provider.ts';
import type { BuildTestBinding, CommandLog, CommandObservation, PodRef, PodRole } from '../build-test.ts';
import type { V1Pod } from './client-node.ts';
import {
  BUILD_TEST_ANNOTATIONS as A,
  BUILD_TEST_LABELS,
  COMMAND_CONTAINER,
  operationLabelOf,
} from './build-test-names.ts';
import { evictionOf } from './build-test-evictions.ts';
import type { HelperRequest } from './build-test-pods.ts';
import { storedPreparation } from './build-test-receipts.ts';
import type { KubeObject } from './kube-object.ts';
import { assertOwned } from './owner-labels.ts';

/** The log of an exited command before the runner read it (observeCommand always reads it). */
const NOT_READ: CommandLog = { bytes: 0, truncated: false, tail: '', unavailable: 'not-read' };
/** The highest maxLogBytes a profile may set (config/build-test-profile.ts). */
const MAX_LOG_BYTES = 16 * 1024 * 1024;

export function assertOurPod(
  pod: V1Pod,
  binding: BuildTestBinding,
  lease: Pick<ResourceRef, 'owner' | 'resourceId'>,
  role: PodRole,
): void {
  const name = pod.metadata?.name ?? '(unnamed)';
  const refuse = (why: string) =>
    definitive('pod-not-ours', `Pod ${name} is not operation ${binding.operationId}'s ${role} Pod: ${why}`);
  try {
    const { labels, annotations: notes } = pod.metadata ?? {};
    const meta: KubeObject = {
      kind: 'Pod',
      metadata: { name, ...(labels ? { labels } : {}), ...(notes ? { annotations: notes } : {}) },
    };
    assertOwned(meta, lease.owner);
  } catch (error) {
    throw refuse(error instanceof Error ? error.message : 'another owner');
  }
  const labels = pod.metadata?.labels ?? {};
  const annotations = pod.metadata?.annotations ?? {};
  if (
    labels[BUILD_TEST_LABELS.operation] !== operationLabelOf(binding.operationId) ||
    labels[BUILD_TEST_LABELS.role] !== role
  ) {
    throw refuse('its operation or role labels differ');
  }
  const wanted: Record<string, string> = {
    [A.requestFingerprint]: binding.requestFingerprint,
    [A.operationId]: binding.operationId,
    [A.checkpointId]: binding.checkpoint.checkpointId,
    [A.acceptedCommandHash]: binding.acceptedCommandHash,
    [A.leaseResourceId]: lease.resourceId,
  };
  const differing = Object.keys(wanted).filter((key) => annotations[key] !== wanted[key]);
  if (differing.length > 0) throw refuse(`${differing.join(', ')} differ`);
  if (!pod.metadata?.uid) throw refuse('it has no UID');
}

export const podRefOf = (pod: V1Pod, role: PodRole): PodRef => ({
  role,
  name: pod.metadata?.name ?? '',
  uid: pod.metadata?.uid ?? '',
});

/** The helper request the runner stamped on the Pod (its own writing, read back as written). */
export function helperRequestOf(pod: V1Pod): HelperRequest {
  const text = pod.metadata?.annotations?.[A.request];
  try {
    const parsed = JSON.parse(text ?? '') as HelperRequest;
    if (typeof parsed === 'object' && parsed !== null && typeof parsed.operationId === 'string')
      return parsed;
  } catch {
    // Refused below.
  }
  throw definitive('pod-not-ours', `Pod ${pod.metadata?.name ?? ''} carries no readable helper request`);
}

const isTerminal = (pod: V1Pod) => pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';

type ContainerStatus = NonNullable<NonNullable<V1Pod['status']>['containerStatuses']>[number];

function containerStatus(pod: V1Pod, name: string): ContainerStatus | undefined {
  return (pod.status?.containerStatuses ?? []).find((status) => status.name === name);
}

/** The profile's maxLogBytes the runner stamped on the command Pod; null when it is not readable. */
export function maxLogBytesOf(pod: V1Pod): number | null {
  const text = pod.metadata?.annotations?.[A.maxLogBytes] ?? '';
  const value = /^[1-9][0-9]{0,8}$/.test(text) ? Number(text) : NaN;
  return value <= MAX_LOG_BYTES ? value : null;
}

export function commandObservationOf(pod: V1Pod, log: CommandLog = NOT_READ): CommandObservation {
  const ref = podRefOf(pod, 'command');
  const annotations = pod.metadata?.annotations ?? {};
  const refused = annotations[A.preparationRefused];
  if (refused !== undefined) {
    return { state: 'failed', pod: ref, reason: 'preparation-failed', message: refused };
  }
  const preparation = storedPreparation(annotations[A.preparationReceipt]);
  if (pod.status?.reason === 'DeadlineExceeded') {
    return { state: 'interrupted', pod: ref, reason: 'timeout', message: 'the command passed its deadline' };
  }
  const eviction = evictionOf(pod, COMMAND_CONTAINER);
  if (eviction !== null) return { state: 'interrupted', pod: ref, ...eviction };
  const terminated = containerStatus(pod, COMMAND_CONTAINER)?.state?.terminated;
  if (terminated !== undefined && (isTerminal(pod) || pod.metadata?.deletionTimestamp)) {
    if (terminated.reason === 'OOMKilled') {
      return {
        state: 'interrupted',
        pod: ref,
        reason: 'cancelled',
        message: 'the command ran out of memory',
      };
    }
    return { state: 'exited', pod: ref, preparation, exitCode: terminated.exitCode, log };
  }
  if (isTerminal(pod) || pod.metadata?.deletionTimestamp) {
    // Ended (failed, deleted) before the command ran to an exit code.
    const why = pod.status?.reason ?? (pod.metadata?.deletionTimestamp ? 'Deleting' : 'Ended');
    return { state: 'interrupted', pod: ref, reason: 'cancelled', message: `the command Pod ended: ${why}` };
  }
  return { state: 'running', pod: ref, preparation };
}

export { isTerminal };
