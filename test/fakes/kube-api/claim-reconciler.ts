// One reconcile of a SandboxClaim, after agent-sandbox's claim controller. Warm pools are not
// simulated: every claim cold-starts a Sandbox named after itself from its pool's template, owned by
// the claim (controller + blockOwnerDeletion) and labelled with the claim UID. The claim's Ready
// condition is the Sandbox's, copied; failures to resolve the pool or template get their own reasons.
import {
  conditionsOf,
  controllerReference,
  findCondition,
  isControlledBy,
  nameHash,
  removeCondition,
  setCondition,
  type ConditionInput,
} from './conditions.ts';
import { KubeError } from './errors.ts';
import { CLAIM_UID, LAUNCH_TYPE, TEMPLATE_REF_ANNOTATION, TEMPLATE_REF_HASH } from './labels.ts';
import { SANDBOX, SANDBOX_CLAIM, SANDBOX_TEMPLATE, SANDBOX_WARM_POOL } from './resources.ts';
import type { ReconcileContext } from './sandbox-reconciler.ts';
import { clone, isObject, sameJson, type Condition, type JsonObject, type KubeObject } from './types.ts';

export interface ClaimSettings {
  /** Label domains additionalPodMetadata may use (agent-sandbox defaults to sandbox.users.io). */
  allowedLabelDomains: string[];
}

const RESTRICTED_DOMAINS = ['kubernetes.io', 'k8s.io', 'agents.x-k8s.io'];

class ClaimFailure extends Error {
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

type StringMap = Record<string, string>;

interface ClaimSpec {
  warmPoolRef: { name: string };
  additionalPodMetadata?: { labels?: StringMap; annotations?: StringMap };
  env?: { name: string; value: string; containerName?: string }[];
  volumeClaimTemplates?: { metadata?: { name?: string } }[];
}

function domainOf(key: string): string | undefined {
  const slash = key.indexOf('/');
  return slash >= 0 ? key.slice(0, slash).toLowerCase() : undefined;
}

function inDomain(domain: string, allowed: string): boolean {
  return domain === allowed || domain.endsWith(`.${allowed}`);
}

function mergeMetadata(
  target: { labels?: StringMap; annotations?: StringMap },
  extra: ClaimSpec['additionalPodMetadata'],
  settings: ClaimSettings,
): void {
  for (const [field, map] of [
    ['labels', extra?.labels],
    ['annotations', extra?.annotations],
  ] as const) {
    for (const [key, value] of Object.entries(map ?? {})) {
      const domain = domainOf(key);
      if (field === 'labels' && (!domain || !settings.allowedLabelDomains.some((d) => inDomain(domain, d)))) {
        throw new ClaimFailure(
          'InvalidMetadata',
          `invalid additionalPodMetadata: label domain of "${key}" is not in the allowlist`,
        );
      }
      if (domain && RESTRICTED_DOMAINS.some((d) => inDomain(domain, d))) {
        throw new ClaimFailure(
          'InvalidMetadata',
          `invalid additionalPodMetadata: restricted system domain: "${key}"`,
        );
      }
      const existing = target[field]?.[key];
      if (existing !== undefined && existing !== value) {
        throw new ClaimFailure(
          'InvalidMetadata',
          `metadata override conflict: ${field} "${key}" is defined in template with value "${existing}"`,
        );
      }
      target[field] = { ...target[field], [key]: value };
    }
  }
}

function injectEnv(podSpec: JsonObject, env: NonNullable<ClaimSpec['env']>, policy: string): void {
  if (policy !== 'Allowed' && policy !== 'Overrides') {
    throw new ClaimFailure(
      'EnvVarsInjectionRejected',
      'environment variable injection is not allowed by the template policy',
    );
  }
  const containers = (podSpec['containers'] ?? []) as {
    name: string;
    env?: { name: string; value?: string }[];
  }[];
  for (const variable of env) {
    const container = variable.containerName
      ? containers.find((c) => c.name === variable.containerName)
      : containers[0];
    if (!container)
      throw new ClaimFailure(
        'ReconcilerError',
        `Error seen: target container "${variable.containerName ?? ''}" not found in template`,
      );
    const list = (container.env ??= []);
    const index = list.findIndex((e) => e.name === variable.name);
    if (index >= 0 && policy !== 'Overrides') {
      throw new ClaimFailure(
        'EnvVarsInjectionRejected',
        `environment variable override is not allowed by the template policy for variable "${variable.name}"`,
      );
    }
    if (index >= 0) list[index] = { name: variable.name, value: variable.value };
    else list.push({ name: variable.name, value: variable.value });
  }
}

function mergeClaimVolumes(
  blueprint: JsonObject,
  fromClaim: NonNullable<ClaimSpec['volumeClaimTemplates']>,
  policy: string,
): void {
  const fromTemplate = (blueprint['volumeClaimTemplates'] ?? []) as { metadata?: { name?: string } }[];
  const names = new Set(fromTemplate.map((v) => v.metadata?.name));
  if (policy === 'Allowed' && fromClaim.some((v) => names.has(v.metadata?.name))) {
    throw new ClaimFailure(
      'VolumeClaimTemplatesError',
      'overriding volume claim templates is forbidden by the template',
    );
  }
  if (policy !== 'Allowed' && policy !== 'Overrides') {
    throw new ClaimFailure(
      'VolumeClaimTemplatesError',
      'volume claim templates are disallowed by the template',
    );
  }
  const overrides = new Map(fromClaim.map((v) => [v.metadata?.name, v]));
  const merged = fromTemplate.map((v) => overrides.get(v.metadata?.name) ?? v);
  blueprint['volumeClaimTemplates'] = [...merged, ...fromClaim.filter((v) => !names.has(v.metadata?.name))];
}

function policy(templateSpec: JsonObject, field: string): string {
  const value = templateSpec[field];
  return typeof value === 'string' ? value : 'Disallowed';
}

function coldSandbox(claim: KubeObject, template: KubeObject, settings: ClaimSettings): JsonObject {
  const spec = claim.spec as unknown as ClaimSpec;
  const templateSpec = template.spec ?? {};
  const blueprint: JsonObject = {};
  for (const field of ['podTemplate', 'volumeClaimTemplates', 'service']) {
    if (templateSpec[field] !== undefined) blueprint[field] = clone(templateSpec[field]);
  }
  const podTemplate = (isObject(blueprint['podTemplate']) ? blueprint['podTemplate'] : {}) as {
    metadata?: { labels?: StringMap; annotations?: StringMap };
    spec?: JsonObject;
  };
  const hash = nameHash(template.metadata.name);
  podTemplate.metadata = {
    ...podTemplate.metadata,
    labels: { ...podTemplate.metadata?.labels, [CLAIM_UID]: claim.metadata.uid, [TEMPLATE_REF_HASH]: hash },
  };
  mergeMetadata(podTemplate.metadata, spec.additionalPodMetadata, settings);
  const podSpec = (podTemplate.spec ??= {});
  if (spec.env && spec.env.length > 0)
    injectEnv(podSpec, spec.env, policy(templateSpec, 'envVarsInjectionPolicy'));
  if (spec.volumeClaimTemplates && spec.volumeClaimTemplates.length > 0) {
    mergeClaimVolumes(
      blueprint,
      spec.volumeClaimTemplates,
      policy(templateSpec, 'volumeClaimTemplatesPolicy'),
    );
  }
  podSpec['automountServiceAccountToken'] ??= false;
  return {
    apiVersion: 'agents.x-k8s.io/v1beta1',
    kind: 'Sandbox',
    metadata: {
      name: claim.metadata.name,
      labels: { [CLAIM_UID]: claim.metadata.uid, [LAUNCH_TYPE]: 'cold', [TEMPLATE_REF_HASH]: hash },
      annotations: { [TEMPLATE_REF_ANNOTATION]: template.metadata.name },
      ownerReferences: [controllerReference(SANDBOX_CLAIM, claim)],
    },
    spec: blueprint,
  };
}

function resolveSandbox(ctx: ReconcileContext, claim: KubeObject, settings: ClaimSettings): KubeObject {
  const { store, api } = ctx;
  const namespace = claim.metadata.namespace;
  const bound = claim.status?.['sandbox'];
  const boundName =
    isObject(bound) && typeof bound['name'] === 'string' && bound['name'] !== ''
      ? bound['name']
      : claim.metadata.name;
  const existing = store.read(SANDBOX, namespace, boundName);
  if (existing && isControlledBy(existing, claim)) return existing;
  const poolName = (claim.spec as unknown as ClaimSpec).warmPoolRef.name;
  const pool = store.read(SANDBOX_WARM_POOL, namespace, poolName);
  if (!pool) throw new ClaimFailure('WarmPoolNotFound', `SandboxWarmPool "${poolName}" not found`);
  const templateRef = pool.spec?.['sandboxTemplateRef'];
  const templateName = isObject(templateRef) ? String(templateRef['name']) : '';
  const template = store.read(SANDBOX_TEMPLATE, namespace, templateName);
  if (!template)
    throw new ClaimFailure(
      'TemplateNotFound',
      `SandboxTemplate "${templateName}" of SandboxWarmPool "${poolName}" not found`,
    );
  if (existing) {
    throw new ClaimFailure(
      'ReconcilerError',
      `Error seen: sandbox "${boundName}" exists and is not controlled by claim "${claim.metadata.name}"`,
    );
  }
  const desired = coldSandbox(claim, template, settings);
  try {
    return api.create(SANDBOX, namespace, desired);
  } catch (error) {
    const text = error instanceof KubeError || error instanceof Error ? error.message : String(error);
    throw new ClaimFailure('ReconcilerError', `Error seen: sandbox create error: ${text}`);
  }
}

export function reconcileClaim(ctx: ReconcileContext, claim: KubeObject, settings: ClaimSettings): void {
  if (claim.metadata.deletionTimestamp) return;
  const generation = claim.metadata.generation;
  let conditions: Condition[] = conditionsOf(claim);
  const status: JsonObject = { ...(claim.status ?? {}) };
  try {
    const sandbox = resolveSandbox(ctx, claim, settings);
    // Copied verbatim, observedGeneration included: it is the Sandbox's, as in agent-sandbox.
    const ready: ConditionInput = findCondition(sandbox, 'Ready') ?? {
      type: 'Ready',
      status: 'False',
      reason: 'SandboxNotReady',
      message: 'Sandbox is not ready',
      observedGeneration: generation,
    };
    conditions = setCondition(conditions, ready);
    const finished = findCondition(sandbox, 'Finished');
    if (finished) conditions = setCondition(conditions, { ...finished });
    else conditions = removeCondition(conditions, 'Finished');
    const ips = sandbox.status?.['podIPs'];
    status['sandbox'] = {
      name: sandbox.metadata.name,
      ...(Array.isArray(ips) && ips.length > 0 ? { podIPs: ips } : {}),
    };
  } catch (error) {
    if (!(error instanceof ClaimFailure)) throw error;
    conditions = setCondition(conditions, {
      type: 'Ready',
      status: 'False',
      reason: error.reason,
      message: error.message,
      observedGeneration: generation,
    });
  }
  status['conditions'] = conditions;
  if (sameJson(status, claim.status ?? {})) return;
  ctx.api.replace(
    SANDBOX_CLAIM,
    claim.metadata.namespace,
    claim.metadata.name,
    { ...claim, status },
    'status',
  );
}
