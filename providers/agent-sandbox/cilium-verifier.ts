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
// A verification is made for a lease: the policies are listed in the namespace its options snapshot
// recorded, and only once the live cluster pin (computed afresh, every time) is the one it recorded.
// Reached through another cluster, nothing is listed and the generation is not verified, with both
// pins named. Without a lease (the dispatch check of workers/effect-processor.ts, which passes
// none yet) the verifier compares with the pin and namespace it was built with, those a new lease
// of the provider beside it records.
//
// A failed or partial list throws (a ProviderError), and so does a live pin that cannot be
// computed: an outage is never read as "verified", nor as "no policy".
import type { KubeConfig } from './client-node.ts';
import { ProviderError, uncertain } from '../errors.ts';
import type { ProviderOptionsSnapshot } from '../provider.ts';
import { clusterPinOf, livePinOf, shortPin } from './cluster-pin.ts';
import { KubeClient } from './kube-client.ts';
import { field, isRecord, type KubeObject } from './kube-object.ts';
import { LABELS, MANAGED_BY, projectHashOf } from './names.ts';
import { parseSnapshot } from './options-snapshot.ts';
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

/** Where a lease's policies live: the namespace and the cluster (by pin) its snapshot recorded. */
interface LeasePlace {
  namespace: string;
  clusterPin: string;
}

export class CiliumNetworkPolicyVerifier {
  private readonly kubeConfig: KubeConfig;
  private readonly kube: KubeClient;
  /** What a new lease of the provider built beside this verifier records. */
  private readonly started: LeasePlace;
  private readonly timeoutMs: number;

  constructor(deps: CiliumNetworkPolicyVerifierDeps) {
    // Throws ClusterTrustError for http://, insecure-skip-tls-verify or no CA: refused at start-up.
    this.started = { namespace: deps.options.namespace, clusterPin: clusterPinOf(deps.kubeConfig) };
    this.kubeConfig = deps.kubeConfig;
    this.kube = new KubeClient(deps.kubeConfig);
    this.timeoutMs = deps.timeoutMs ?? 5_000;
  }

  async verify(
    tenantId: string,
    projectId: string,
    generation: number,
    lease?: { providerOptions: ProviderOptionsSnapshot },
  ): Promise<CiliumVerdict> {
    if (!Number.isSafeInteger(generation) || generation < 1) {
      return { verified: false, reason: `network policy generation ${generation} is not an integer ≥ 1` };
    }
    let place: LeasePlace;
    try {
      place = lease === undefined ? this.started : parseSnapshot(lease.providerOptions);
    } catch (error) {
      const why = error instanceof Error ? error.message : String(error);
      return { verified: false, reason: `the lease records no cluster to verify its policy in: ${why}` };
    }
    const live = livePinOf(this.kubeConfig);
    if (live !== place.clusterPin) {
      return {
        verified: false,
        reason:
          `CiliumNetworkPolicies would be read from cluster ${shortPin(live)}, but the lease's objects ` +
          `live in cluster ${shortPin(place.clusterPin)}; nothing was read from it`,
      };
    }
    const { namespace } = place;
    const projectHash = projectHashOf(tenantId, projectId);
    // No caller to cancel it: the deadline alone bounds the list (and reads as a timeout).
    const call = { signal: new AbortController().signal, deadline: new Date(Date.now() + this.timeoutMs) };
    let policies: KubeObject[];
    try {
      policies = await this.kube.listCustom(
        'CiliumNetworkPolicy',
        namespace,
        `${LABELS.projectHash}=${projectHash}`,
        call,
      );
    } catch (error) {
      if (error instanceof ProviderError) throw error;
      throw uncertain('adapter-error', 'Listing CiliumNetworkPolicies failed unexpectedly', error);
    }
    return judgePolicies(policies, { projectHash, generation, namespace });
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
