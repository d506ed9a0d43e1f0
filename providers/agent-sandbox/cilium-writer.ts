// The network policy writer for Kubernetes: a resume's new generation gets a copy of every
// CiliumNetworkPolicy of the source generation, in the labels and selector the verifier reads
// (cilium-verifier.ts), so the new Sandbox's Pods run under exactly the rules already accepted.
// It satisfies the NetworkPolicyWriter port (actors/sandbox/network-policy-writer.ts), which this layer may
// not import; the answer types below mirror it.
//
// For each source policy `<stem>-g<from>` (or any other name `<name>`), the copy is named
// `<stem>-g<to>` (`<name>-g<to>`), carries the source's labels with
// `sandlot.dev/network-policy-generation: "<to>"`, and the source's spec with only the generation
// in `spec.endpointSelector.matchLabels` changed. Create-only: AlreadyExists means "read it back
// and compare", and a copy that differs is a refusal, never overwritten. The copies are made one by
// one, so for a moment the new generation can hold only some of them; no Pod carries the new
// generation's label before the reapply answers, so none runs under the partial set.
//
// A failed or uncertain call throws a ProviderError (uncertain): an outage is never a refusal.
import type { KubeConfig } from './client-node.ts';
import { canonicalJson, sha256Hex } from '../../lib/canonical-json.ts';
import { ProviderError, uncertain } from '../errors.ts';
import type { CallOptions } from '../provider.ts';
import { judgePolicies } from './cilium-verifier.ts';
import { clusterPinOf } from './cluster-pin.ts';
import { KubeClient } from './kube-client.ts';
import { field, isRecord, type KubeObject } from './kube-object.ts';
import { CILIUM_GROUP, CILIUM_VERSION, LABELS, projectHashOf } from './names.ts';
import type { AgentSandboxOptions } from './options.ts';

export type CiliumRefusalCode =
  | 'invalid-generation'
  | 'generation-missing'
  | 'generation-not-current'
  | 'source-unverified'
  | 'target-conflict';

export type CiliumReapply =
  | { outcome: 'applied'; generation: number; digest: string }
  | { outcome: 'refused'; code: CiliumRefusalCode; reason: string };

export interface CiliumNetworkPolicyWriterDeps {
  /** The namespace the adapter's Pods run in: where the project's policies live. */
  options: Pick<AgentSandboxOptions, 'namespace'>;
  /** Must select an https:// cluster with a CA to pin (checked at construction). */
  kubeConfig: KubeConfig;
  /** Budget of one whole reapply: its list, creates, reads and final list (default 10 s). */
  timeoutMs?: number;
}

const KIND = 'CiliumNetworkPolicy';
const GENERATION = /^[1-9][0-9]{0,15}$/;
const SOURCE_PREFIX = /^(k8s|any):/;

interface Question {
  projectHash: string;
  from: number;
  to: number;
  namespace: string;
}

const refused = (code: CiliumRefusalCode, reason: string): CiliumReapply => ({
  outcome: 'refused',
  code,
  reason,
});
const nameOf = (policy: KubeObject) => policy.metadata?.name ?? '(unnamed)';

export class CiliumNetworkPolicyWriter {
  private readonly kube: KubeClient;
  private readonly namespace: string;
  private readonly timeoutMs: number;

  constructor(deps: CiliumNetworkPolicyWriterDeps) {
    clusterPinOf(deps.kubeConfig);
    this.kube = new KubeClient(deps.kubeConfig);
    this.namespace = deps.options.namespace;
    this.timeoutMs = deps.timeoutMs ?? 10_000;
  }

  async reapply(
    tenantId: string,
    projectId: string,
    fromGeneration: number,
    toGeneration: number,
    signal: AbortSignal,
  ): Promise<CiliumReapply> {
    if (!Number.isSafeInteger(fromGeneration) || fromGeneration < 1) {
      return refused('invalid-generation', `source generation ${fromGeneration} is not an integer ≥ 1`);
    }
    if (toGeneration !== fromGeneration + 1) {
      return refused(
        'invalid-generation',
        `target generation ${toGeneration} is not source generation ${fromGeneration} + 1`,
      );
    }
    const question: Question = {
      projectHash: projectHashOf(tenantId, projectId),
      from: fromGeneration,
      to: toGeneration,
      namespace: this.namespace,
    };
    const call: CallOptions = { signal, deadline: new Date(Date.now() + this.timeoutMs) };
    try {
      return await this.copy(question, call);
    } catch (error) {
      if (error instanceof ProviderError) throw error;
      throw uncertain('adapter-error', 'Reapplying CiliumNetworkPolicies failed unexpectedly', error);
    }
  }

  private async copy(question: Question, call: CallOptions): Promise<CiliumReapply> {
    const plan = planCopies(await this.list(question.projectHash, call), question);
    if ('outcome' in plan) return plan;
    for (const copy of plan.missing) {
      const made = await this.kube.createCustom(KIND, this.namespace, copy, call);
      if (made.created) continue;
      const found = await this.kube.getCustom(KIND, this.namespace, nameOf(copy), call);
      // It existed a moment ago and is gone now: someone else is changing the project's policies.
      if (found === null) {
        throw uncertain('policy-changed', `CiliumNetworkPolicy ${nameOf(copy)} vanished after AlreadyExists`);
      }
      const problem = difference(found, copy, question.projectHash);
      if (problem !== null) return refused('target-conflict', problem);
    }
    // Read back: the new generation must hold exactly the copies, and verify as the verifier would.
    return confirmCopies(await this.list(question.projectHash, call), plan.expected, question);
  }

  private list(projectHash: string, call: CallOptions): Promise<KubeObject[]> {
    return this.kube.listCustom(KIND, this.namespace, `${LABELS.projectHash}=${projectHash}`, call);
  }
}

interface Plan {
  expected: KubeObject[];
  missing: KubeObject[];
}

function generationOf(policy: KubeObject): number | null {
  const label = policy.metadata?.labels?.[LABELS.networkPolicyGeneration];
  return label !== undefined && GENERATION.test(label) ? Number(label) : null;
}

const deleting = (policy: KubeObject) => policy.metadata?.deletionTimestamp != null;

/** What to create, or the refusal, from one complete list of the project's policies (pure). */
function planCopies(listed: readonly KubeObject[], question: Question): Plan | CiliumReapply {
  const { projectHash, from, to } = question;
  const ours = listed.filter((p) => p.metadata?.labels?.[LABELS.projectHash] === projectHash);
  const hidden = ours.find((p) => generationOf(p) === null);
  if (hidden !== undefined) {
    return refused(
      'source-unverified',
      `CiliumNetworkPolicy ${nameOf(hidden)} carries no valid ${LABELS.networkPolicyGeneration} label`,
    );
  }
  const sources = ours.filter((p) => generationOf(p) === from && !deleting(p));
  if (sources.length === 0) {
    return refused('generation-missing', `network policy generation ${from} does not exist`);
  }
  const newest = Math.max(...ours.map((p) => generationOf(p) ?? 0));
  if (newest > to) {
    return refused(
      'generation-not-current',
      `network policy generation ${from} is not current (newest is ${newest})`,
    );
  }
  const expected = sources.map((source) => copyOf(source, question));
  const targets = ours.filter((p) => generationOf(p) === to);
  if (targets.length === 0) {
    // A first reapply copies only what the verifier accepts now as the current generation.
    const verdict = judgePolicies(listed, { projectHash, generation: from, namespace: question.namespace });
    if (!verdict.verified) return refused('source-unverified', verdict.reason);
  }
  for (const target of targets) {
    const twin = expected.find((copy) => nameOf(copy) === nameOf(target));
    if (twin === undefined) {
      return refused(
        'target-conflict',
        `CiliumNetworkPolicy ${nameOf(target)} already holds generation ${to} and is no copy of generation ${from}`,
      );
    }
    const problem = difference(target, twin, projectHash);
    if (problem !== null) return refused('target-conflict', problem);
  }
  const present = new Set(targets.map(nameOf));
  return { expected, missing: expected.filter((copy) => !present.has(nameOf(copy))) };
}

/** The final read: exactly the expected copies at `to`, verified as the current generation. */
function confirmCopies(
  listed: readonly KubeObject[],
  expected: readonly KubeObject[],
  question: Question,
): CiliumReapply {
  const { projectHash, to } = question;
  const ours = listed.filter((p) => p.metadata?.labels?.[LABELS.projectHash] === projectHash);
  const targets = ours.filter((p) => generationOf(p) === to);
  for (const target of targets) {
    const twin = expected.find((copy) => nameOf(copy) === nameOf(target));
    const problem =
      twin === undefined
        ? `CiliumNetworkPolicy ${nameOf(target)} appeared at generation ${to} and is no copy`
        : difference(target, twin, projectHash);
    if (problem !== null) return refused('target-conflict', problem);
  }
  if (targets.length !== expected.length) {
    throw uncertain(
      'policy-changed',
      `generation ${to} lost a CiliumNetworkPolicy while it was being copied`,
    );
  }
  const verdict = judgePolicies(listed, { projectHash, generation: to, namespace: question.namespace });
  if (!verdict.verified) {
    const newer = ours.some((p) => (generationOf(p) ?? 0) > to);
    return refused(newer ? 'generation-not-current' : 'target-conflict', verdict.reason);
  }
  return { outcome: 'applied', generation: to, digest: rulesDigest(expected) };
}

/** The copy of one source policy for generation `to`: its name, labels and spec. */
function copyOf(source: KubeObject, question: Question): KubeObject {
  const { from, to, namespace } = question;
  const name = nameOf(source);
  const stem = name.endsWith(`-g${from}`) ? name.slice(0, -`-g${from}`.length) : name;
  const spec = structuredClone(source.spec ?? {});
  const matchLabels = field(spec, 'endpointSelector', 'matchLabels');
  if (isRecord(matchLabels)) {
    for (const key of Object.keys(matchLabels)) {
      if (key.replace(SOURCE_PREFIX, '') === LABELS.networkPolicyGeneration) matchLabels[key] = String(to);
    }
  }
  return {
    apiVersion: `${CILIUM_GROUP}/${CILIUM_VERSION}`,
    kind: KIND,
    metadata: {
      name: `${stem}-g${to}`,
      namespace,
      labels: { ...source.metadata?.labels, [LABELS.networkPolicyGeneration]: String(to) },
    },
    spec,
  };
}

/** Why `found` is not the copy we would make, or null. Labels and spec must match exactly. */
function difference(found: KubeObject, copy: KubeObject, projectHash: string): string | null {
  const name = `CiliumNetworkPolicy ${nameOf(found)}`;
  if (deleting(found)) return `${name} is being deleted`;
  if (found.metadata?.labels?.[LABELS.projectHash] !== projectHash)
    return `${name} belongs to another project`;
  if (canonicalJson(found.metadata?.labels ?? {}) !== canonicalJson(copy.metadata?.labels ?? {})) {
    return `${name} exists with other labels; it is never overwritten`;
  }
  if (canonicalJson(found.spec ?? {}) !== canonicalJson(copy.spec ?? {})) {
    return `${name} exists with other rules; it is never overwritten`;
  }
  return null;
}

/**
 * SHA-256 over the generation's rules: each policy's spec with the generation left out of its
 * selector, in a stable order, names ignored. Equal for a source generation and its copy.
 */
export function rulesDigest(policies: readonly KubeObject[]): string {
  const rules = policies.map((policy) => {
    const spec = structuredClone(policy.spec ?? {});
    const matchLabels = field(spec, 'endpointSelector', 'matchLabels');
    if (isRecord(matchLabels)) {
      for (const key of Object.keys(matchLabels)) {
        if (key.replace(SOURCE_PREFIX, '') === LABELS.networkPolicyGeneration) delete matchLabels[key];
      }
    }
    return canonicalJson(spec);
  });
  return sha256Hex(`[${rules.sort().join(',')}]`);
}
