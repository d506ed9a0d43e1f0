// Reading one claim back as a ProviderResource: every object on the chain claim → pool → template,
// the RuntimeClass and the Workspace PVC, then Sandbox → Pod by controller UID. A claim whose Pod is
// not yet scheduled (just created, or being torn down) has no phase to report, so the read waits,
// polling within the call's budget, until it has one or the claim is gone. With the AgentHost launch
// profile, a Pod is reported only with its Service: the Sandbox's own, resolving to exactly that Pod.
import type { V1Pod } from './client-node.ts';
import { hasTimeLeft, narrowed } from '../call-budget.ts';
import { ownership, uncertain } from '../errors.ts';
import type { CallOptions, OwnerBinding, ProviderResource } from '../provider.ts';
import type { KubeClient } from './kube-client.ts';
import { budget } from './kube-errors.ts';
import { field, type KubeObject } from './kube-object.ts';
import { resourceIdOf, type ObjectNames } from './names.ts';
import type { AgentSandboxSnapshot } from './options-snapshot.ts';
import { AGENT_HOST_PORT } from './agent-host-profile.ts';
import { finishedOf, phaseOf } from './phase.ts';
import { checkRuntimeClass, checkWorkspacePvc } from './preflight.ts';
import { validateClaim, validatePool, validateTemplate } from './validate-objects.ts';
import { validatePod, validateSandbox } from './validate-pod.ts';
import { agentHostService, type ServicePlacement } from './agent-host-service.ts';

export interface AdapterContext {
  kube: KubeClient;
  snapshot: AgentSandboxSnapshot;
}

export type Observation =
  | { state: 'absent' }
  | { state: 'pending'; reason: string }
  | { state: 'observed'; resource: ProviderResource };

function placementOf(
  snapshot: AgentSandboxSnapshot,
  claim: KubeObject,
  sandboxUid: string,
  pod: V1Pod,
  service?: ServicePlacement,
) {
  const placement: Record<string, string> = {
    namespace: snapshot.namespace,
    claim: claim.metadata?.name ?? '',
    claimUid: claim.metadata?.uid ?? '',
    sandbox: claim.metadata?.name ?? '',
    sandboxUid,
    pod: pod.metadata?.name ?? '',
    podUid: pod.metadata?.uid ?? '',
  };
  if (pod.spec?.nodeName) placement.node = pod.spec.nodeName;
  if (pod.status?.podIP) placement.podIP = pod.status.podIP;
  if (service !== undefined) {
    placement.service = service.service;
    placement.serviceDns = service.serviceDns;
    placement.endpoint = `https://${service.serviceDns}:${AGENT_HOST_PORT}`;
  }
  return placement;
}

/** Validates everything a present claim depends on and derives its phase from the Pod. */
export async function observeClaim(
  { kube, snapshot }: AdapterContext,
  claim: KubeObject,
  owner: OwnerBinding,
  names: ObjectNames,
  call: CallOptions,
  expectedUid?: string,
): Promise<Observation> {
  const { namespace } = snapshot;
  const claimUid = validateClaim(claim, owner, names, expectedUid);
  const pool = await kube.getCustom('SandboxWarmPool', namespace, names.pool, call);
  if (pool === null)
    throw ownership('pool-missing', `SandboxWarmPool ${names.pool} of claim ${names.claim} is gone`);
  validatePool(pool, owner, names);
  const template = await kube.getCustom('SandboxTemplate', namespace, names.template, call);
  if (template === null) throw ownership('template-missing', `SandboxTemplate ${names.template} is gone`);
  const { workspace } = validateTemplate(template, owner, names, snapshot);
  await checkRuntimeClass(kube, snapshot, call, ownership);
  await checkWorkspacePvc(
    kube,
    snapshot,
    { ...workspace, environmentId: owner.environmentId, uid: workspace.pvcUid },
    call,
    ownership,
  );

  // A cold-started Sandbox is named after its claim; one under another name was adopted, not ours.
  const reported = field(claim.status, 'sandbox', 'name');
  if (reported !== undefined && reported !== names.claim) {
    throw ownership(
      'sandbox-name-mismatch',
      `SandboxClaim ${names.claim} reports Sandbox ${JSON.stringify(reported)}`,
    );
  }
  // The claim, template, pool, RuntimeClass and PVC are ours and exact: the resource exists. Until
  // the controller made the Sandbox and the scheduler placed its Pod, it is `pending` (not absent).
  const pending = (): Observation => ({
    state: 'observed',
    resource: { resourceId: resourceIdOf(names.claim, claimUid), owner, phase: 'pending', placement: {} },
  });
  const sandbox = await kube.getCustom('Sandbox', namespace, names.claim, call);
  if (sandbox === null) return pending();
  const sandboxUid = validateSandbox(sandbox, names.claim, { name: names.claim, uid: claimUid });
  const pod = await kube.getPod(namespace, names.claim, call);
  if (pod === null) return pending();
  validatePod(pod, names.claim, { name: names.claim, uid: sandboxUid }, snapshot, workspace);
  const phase = phaseOf(pod);
  if (phase === 'pending') return pending();
  let service: ServicePlacement | undefined;
  if (snapshot.agentHost !== undefined) {
    const ids = { sandbox: names.claim, sandboxUid, pod: names.claim, podUid: pod.metadata?.uid ?? '' };
    const found = await agentHostService(kube, namespace, sandbox, ids, call);
    if ('pending' in found) return { state: 'pending', reason: found.pending };
    service = found;
  }

  const resource: ProviderResource = {
    resourceId: resourceIdOf(names.claim, claimUid),
    owner,
    phase,
    placement: placementOf(snapshot, claim, sandboxUid, pod, service),
  };
  const finished = finishedOf(sandbox);
  if (finished !== undefined) resource.finished = finished;
  return { state: 'observed', resource };
}

/**
 * Reads the claim by exact name until it is observed or absent, polling at the snapshot's interval
 * for at most its reconciliation timeout (and the call's deadline); still pending then is uncertain.
 */
export async function awaitObserved(
  context: AdapterContext,
  owner: OwnerBinding,
  names: ObjectNames,
  call: CallOptions,
  expectedUid?: string,
): Promise<Observation & { state: 'absent' | 'observed' }> {
  const { kube, snapshot } = context;
  const bounded = narrowed(call, snapshot.reconciliationTimeoutSeconds * 1000);
  for (;;) {
    const claim = await kube.getCustom('SandboxClaim', snapshot.namespace, names.claim, bounded);
    if (claim === null) return { state: 'absent' };
    const observation = await observeClaim(context, claim, owner, names, bounded, expectedUid);
    if (observation.state !== 'pending') return observation;
    if (!hasTimeLeft(bounded.deadline, Date.now() + snapshot.pollIntervalMilliseconds)) {
      throw uncertain('not-observable', `${observation.reason}; no phase to report before the deadline`);
    }
    await budget.sleep(snapshot.pollIntervalMilliseconds, bounded, `observation of ${names.claim}`);
  }
}
