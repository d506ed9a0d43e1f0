// What a BuildTest Pod's eviction says. On Kubernetes the output limit is enforced by the kubelet:
// a container's log counts against its ephemeral-storage limit, and the command container has no
// other ephemeral storage (a read-only root filesystem, no emptyDir; the Workspace is a PVC), so the
// command's output passing the profile's `resources.command.ephemeralStorage` gets the Pod evicted.
// The kubelet says why in the Pod's status (reason `Evicted`, and a message in the eviction
// manager's fixed formats, pkg/kubelet/eviction/helpers.go):
//
//   Container command exceeded its local ephemeral storage limit "8Gi".
//   Pod ephemeral local storage usage exceeds the total limit of containers 9Gi.
//   Usage of EmptyDir volume "helper-state" exceeds the limit "1Gi".
//
// The first, naming the Pod's own container, is an output-limit termination. So is the second once
// the command container started: the helper wrote its private state before it released the
// command, so what grows after that is the command's output. Any other eviction (node pressure, the
// helper's state past its size limit) is a cancellation. Either way the command was killed: an
// evicted Pod's terminated container (exit 137) never counts as the command's own exit code.
import type { InterruptReason } from '../build-test.ts';
import type { V1Pod } from './client-node.ts';

export interface Eviction {
  reason: Extract<InterruptReason, 'output-limit' | 'cancelled'>;
  message: string;
}

const clip = (text: string) => (text.length > 300 ? `${text.slice(0, 300)}…` : text);

function started(pod: V1Pod, container: string): boolean {
  const state = (pod.status?.containerStatuses ?? []).find((s) => s.name === container)?.state;
  return state?.running !== undefined || state?.terminated?.startedAt !== undefined;
}

/** The eviction of `pod`, as it concerns `container` (the Pod's own: command or collector); or null. */
export function evictionOf(pod: V1Pod, container: string): Eviction | null {
  if (pod.status?.reason !== 'Evicted') return null;
  const said = (pod.status.message ?? '').trim();
  const ownLimit = said.includes(`Container ${container} exceeded its local ephemeral storage limit `);
  const podTotal = said.includes('Pod ephemeral local storage usage exceeds the total limit of containers ');
  if (ownLimit || (podTotal && started(pod, container))) {
    return {
      reason: 'output-limit',
      message: `the ${container} passed its output limit and was evicted: ${clip(said)}`,
    };
  }
  return { reason: 'cancelled', message: `the ${container} Pod was evicted: ${clip(said || 'Evicted')}` };
}
