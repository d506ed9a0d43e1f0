// The network policy verifier for Kubernetes: a project's policy generation counts as verified only
// when its CiliumNetworkPolicy can be read back from the sandbox namespace, no newer generation of the
// project's policy exists there, and its endpoint selector selects the Pods the adapter labels for
// that generation. Whoever owns the project's network policy writes them, labelled as below; Sandlot
// itself only copies a generation to the next on resume (cilium-writer.ts). It satisfies the
// NetworkPolicyVerifier port (actors/ports.ts), which this layer may not import; cli/compose.ts
// checks the fit.
//
//   metadata.labels:  sandlot.dev/project-hash: <projectHashOf(tenant, project)>
//                     sandlot.dev/network-policy-generation: "<g>"
//   spec.endpointSelector.matchLabels (exactly these keys; `k8s:`/`any:` prefixes allowed):
//                     sandlot.dev/project-hash: <same hash>
//                     sandlot.dev/network-policy-generation: "<g>"
//                     optionally app.kubernetes.io/managed-by: sandlot,
//                     io.kubernetes.pod.namespace: <namespace>
//
// A failed or partial list throws (a ProviderError): an outage is never read as "verified", nor as
// "no policy".
import type { KubeConfig } from './client-node.ts';
import { ProviderError, uncertain } from '../errors.ts';
import { clusterPinOf } from './cluster-pin.ts';
import { KubeClient } from './kube-client.ts';
import { field, isRecord, type KubeObject } from './kube-object.ts';
import { LABELS, MANAGED_BY, projectHashOf } from './names.ts';
import type { AgentSandboxOptions } from './options.ts';

export type CiliumVerdict = { verified: true } | { verified: false; reason: string };

export interface CiliumNetworkPolicyVerifierDeps {
  /** The namespace the adapter's Pods run in: where the project's policies must live. */
  options: Pick<AgentSandboxOptions, 'namespace'>;
  /** Must select an https:// cluster with a CA to pin (checked at construction, as the adapter does). */
  kubeConfig: KubeConfig;
  /** Budget of one verification's list call (default 5 s). */
  timeoutMs?: number;
}

const GENERATION = /^[1-9][0-9]{0,15}$/;
/** Cilium label sources a selector key may name; Kubernetes Pod labels are `k8s`, `any` matches all. */
const SOURCE_PREFIX = /^(k8s|any):/;
const NAMESPACE_LABEL = 'io.kubernetes.pod.namespace';

export class CiliumNetworkPolicyVerifier {
  private readonly kube: KubeClient;
  private readonly namespace: string;
  private readonly timeoutMs: number;

  constructor(deps: CiliumNetworkPolicyVerifierDeps) {
    // Throws ClusterTrustError for http://, insecure-skip-tls-verify or no CA: refused at start-up.
    clusterPinOf(deps.kubeConfig);
    this.kube = new KubeClient(deps.kubeConfig);
    this.namespace = deps.options.namespace;
    this.timeoutMs = deps.timeoutMs ?? 5_000;
  }

  async verify(tenantId: string, projectId: string, generation: number): Promise<CiliumVerdict> {
    if (!Number.isSafeInteger(generation) || generation < 1) {
      return { verified: false, reason: `network policy generation ${generation} is not an integer ≥ 1` };
    }
    const projectHash = projectHashOf(tenantId, projectId);
    // No caller to cancel it: the deadline alone bounds the list (and reads as a timeout).
    const call = { signal: new AbortController().signal, deadline: new Date(Date.now() + this.timeoutMs) };
    let policies: KubeObject[];
    try {
      policies = await this.kube.listCustom(
        'CiliumNetworkPolicy',
        this.namespace,
        `${LABELS.projectHash}=${projectHash}`,
        call,
      );
    } catch (error) {
      if (error instanceof ProviderError) throw error;
      throw uncertain('adapter-error', 'Listing CiliumNetworkPolicies failed unexpectedly', error);
    }
    return judgePolicies(policies, { projectHash, generation, namespace: this.namespace });
  }
}

export interface PolicyQuestion {
  projectHash: string;
  generation: number;
  namespace: string;
}

const nameOf = (policy: KubeObject) => `CiliumNetworkPolicy ${policy.metadata?.name ?? '(unnamed)'}`;

/** The verdict on one complete list of a project's policies (pure: the rule, apart from the read). */
export function judgePolicies(policies: readonly KubeObject[], question: PolicyQuestion): CiliumVerdict {
  const { projectHash, generation, namespace } = question;
  const unverified = (reason: string): CiliumVerdict => ({ verified: false, reason });
  const ours = policies.filter((p) => p.metadata?.labels?.[LABELS.projectHash] === projectHash);
  const generations: { policy: KubeObject; generation: number }[] = [];
  for (const policy of ours) {
    const label = policy.metadata?.labels?.[LABELS.networkPolicyGeneration];
    if (label === undefined || !GENERATION.test(label)) {
      // Which generation is newest cannot be told while one of the project's policies hides its own.
      return unverified(`${nameOf(policy)} carries no valid ${LABELS.networkPolicyGeneration} label`);
    }
    generations.push({ policy, generation: Number(label) });
  }
  const newest = generations.reduce<{ policy: KubeObject; generation: number } | null>(
    (top, entry) => (top === null || entry.generation > top.generation ? entry : top),
    null,
  );
  if (newest !== null && newest.generation > generation) {
    return unverified(
      `network policy generation ${generation} is not current (newest is ${newest.generation}, ${nameOf(newest.policy)})`,
    );
  }
  // A policy being deleted is on its way out: it does not count as being in force.
  const current = generations
    .filter((entry) => entry.generation === generation && entry.policy.metadata?.deletionTimestamp == null)
    .map((entry) => entry.policy);
  if (current.length === 0) {
    return unverified(
      `network policy generation ${generation} does not exist: no CiliumNetworkPolicy in namespace ` +
        `${namespace} is labelled ${LABELS.projectHash}=${projectHash}, ` +
        `${LABELS.networkPolicyGeneration}=${generation}`,
    );
  }
  const expected = podSelectorLabels(projectHash, generation);
  for (const policy of current) {
    const problem = selectorProblem(policy, expected, namespace);
    if (problem !== null) return unverified(`${nameOf(policy)} ${problem}`);
  }
  return { verified: true };
}

/** What every Pod of the project carries under `generation`, and the policy must select by. */
export function podSelectorLabels(projectHash: string, generation: number): Record<string, string> {
  return {
    [LABELS.projectHash]: projectHash,
    [LABELS.networkPolicyGeneration]: String(generation),
  };
}

/**
 * Why the policy's endpoint selector does not select exactly the generation's Pods, or null. It must
 * name both selector labels with their values, and nothing every such Pod does not carry alike (an
 * owner hash would narrow it to one Environment); matchExpressions cannot be proven, so are refused.
 */
function selectorProblem(
  policy: KubeObject,
  expected: Record<string, string>,
  namespace: string,
): string | null {
  const selector = field(policy.spec, 'endpointSelector');
  if (!isRecord(selector)) return 'has no spec.endpointSelector';
  const expressions = selector['matchExpressions'];
  if (Array.isArray(expressions) ? expressions.length > 0 : expressions !== undefined) {
    return 'selects by matchExpressions, which the verifier cannot prove; select by matchLabels only';
  }
  const raw = selector['matchLabels'];
  if (!isRecord(raw)) return 'has no spec.endpointSelector.matchLabels';
  const labels = new Map<string, unknown>();
  for (const [key, value] of Object.entries(raw)) {
    const bare = key.replace(SOURCE_PREFIX, '');
    if (labels.has(bare) && labels.get(bare) !== value) return `selects ${bare} twice with different values`;
    labels.set(bare, value);
  }
  for (const [key, value] of Object.entries(expected)) {
    if (labels.get(key) !== value) return `does not select ${key}=${value}`;
  }
  const common: Record<string, string> = {
    ...expected,
    [LABELS.managedBy]: MANAGED_BY,
    [NAMESPACE_LABEL]: namespace,
  };
  for (const [key, value] of labels) {
    if (common[key] !== value) {
      return `also selects ${key}=${String(value)}, which not every Pod of the generation carries`;
    }
  }
  return null;
}
