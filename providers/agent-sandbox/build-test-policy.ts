// The deny-all NetworkPolicy of one operation's Pod of one role, created before the Pod so the Pod
// never runs a moment online. AlreadyExists adopts only a policy carrying the lease's owner binding
// and selecting exactly the operation's role labels with both policy types and no rules; deletion is
// UID-preconditioned like every other delete of the adapter.
import { canonicalJson } from '../../lib/canonical-json.ts';
import type { BuildTestBinding, BuildTestPlacement, PodRole } from '../build-test.ts';
import { definitive, uncertain } from '../errors.ts';
import type { CallOptions } from '../provider.ts';
import type { BuildTestKube } from './build-test-kube.ts';
import { BUILD_TEST_ANNOTATIONS as A, buildTestPolicyName, roleLabels } from './build-test-names.ts';
import { buildDenyAllPolicy, type PodPlan } from './build-test-pods.ts';
import type { KubeObject } from './kube-object.ts';
import { assertOwned } from './owner-labels.ts';

function assertOurPolicy(
  policy: KubeObject,
  binding: BuildTestBinding,
  lease: { owner: BuildTestPlacement['lease']['owner']; resourceId: string },
  role: PodRole,
): void {
  const name = policy.metadata?.name ?? '';
  try {
    assertOwned(policy, lease.owner);
  } catch (error) {
    throw definitive(
      'policy-not-ours',
      `NetworkPolicy ${name}: ${error instanceof Error ? error.message : ''}`,
    );
  }
  const annotations = policy.metadata?.annotations ?? {};
  const wanted = {
    podSelector: { matchLabels: roleLabels(binding.operationId, role) },
    policyTypes: ['Ingress', 'Egress'],
  };
  // The request fingerprint is the Pod's to check: the policy is the operation's, whatever request.
  if (
    canonicalJson(policy.spec ?? {}) !== canonicalJson(wanted) ||
    annotations[A.operationId] !== binding.operationId ||
    annotations[A.leaseResourceId] !== lease.resourceId
  ) {
    throw definitive(
      'policy-not-ours',
      `NetworkPolicy ${name} is not operation ${binding.operationId}'s deny-all`,
    );
  }
}

export async function ensureOffline(
  kube: BuildTestKube,
  plan: PodPlan,
  role: PodRole,
  call: CallOptions,
): Promise<void> {
  const body = buildDenyAllPolicy(plan, role);
  const created = await kube.createPolicy(plan.namespace, body, call);
  const policy = created.created
    ? created.object
    : await kube.getPolicy(plan.namespace, body.metadata?.name ?? '', call);
  if (policy === null)
    throw uncertain('already-exists-unreadable', `NetworkPolicy ${body.metadata?.name ?? ''} cannot be read`);
  assertOurPolicy(policy, plan.binding, { owner: plan.owner, resourceId: plan.leaseResourceId }, role);
}

/** Deletes the role's policy if it is ours; an absent one is already gone. */
export async function deleteOffline(
  kube: BuildTestKube,
  namespace: string,
  binding: BuildTestBinding,
  placement: BuildTestPlacement,
  role: PodRole,
  call: CallOptions,
): Promise<void> {
  const name = buildTestPolicyName(binding.operationId, role);
  const policy = await kube.getPolicy(namespace, name, call);
  if (policy === null) return;
  assertOurPolicy(policy, binding, placement.lease, role);
  await kube.deletePolicy(namespace, name, policy.metadata?.uid ?? '', call);
}
