// One reconcile of a Sandbox, after agent-sandbox's Sandbox controller: PVCs from
// volumeClaimTemplates, the Pod named after the Sandbox (owner UID is authoritative; a second owned
// Pod is MultiplePods), the headless Service when `service: true`, then status with conditions that
// each carry the Sandbox's generation.
import type { KubeApi } from './api-server.ts';
import {
  conditionsOf,
  controllerOf,
  controllerReference,
  findCondition,
  isControlledBy,
  nameHash,
  removeCondition,
  setCondition,
  type ConditionInput,
} from './conditions.ts';
import type { Deleter } from './deletion.ts';
import { KubeError } from './errors.ts';
import { SANDBOX_NAME_HASH } from './labels.ts';
import { POD, PVC, SANDBOX, SERVICE } from './resources.ts';
import { desiredPod, desiredService, type SandboxSpec } from './sandbox-children.ts';
import type { ObjectStore } from './store.ts';
import { sameJson, type JsonObject, type KubeObject } from './types.ts';

export interface ReconcileContext {
  store: ObjectStore;
  api: KubeApi;
  deleter: Deleter;
  clusterDomain: string;
}

function errorText(error: unknown): string {
  return error instanceof KubeError || error instanceof Error ? error.message : String(error);
}

export function reconcileSandbox(ctx: ReconcileContext, sandbox: KubeObject): void {
  if (sandbox.metadata.deletionTimestamp) return;
  const { store, api } = ctx;
  const spec = sandbox.spec as unknown as SandboxSpec;
  const namespace = sandbox.metadata.namespace ?? '';
  const name = sandbox.metadata.name;
  const hash = nameHash(name);
  const suspended = spec.operatingMode === 'Suspended';
  const errors: string[] = [];

  for (const vct of spec.volumeClaimTemplates ?? []) {
    const claimName = `${vct.metadata?.name ?? ''}-${name}`;
    if (store.read(PVC, namespace, claimName)) continue;
    const metadata = {
      ...vct.metadata,
      name: claimName,
      labels: { ...vct.metadata?.labels, [SANDBOX_NAME_HASH]: hash },
      ownerReferences: [controllerReference(SANDBOX, sandbox)],
    };
    try {
      api.create(PVC, namespace, {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata,
        spec: vct.spec ?? {},
      });
    } catch (error) {
      errors.push(`pvc create failed: ${errorText(error)}`);
    }
  }

  const owned = store.all(POD, namespace, (p) => isControlledBy(p, sandbox));
  let pod: KubeObject | undefined = store.read(POD, namespace, name);
  let multiple = false;
  if (owned.length > 1) {
    multiple = true;
    pod = undefined;
  } else if (pod && !isControlledBy(pod, sandbox)) {
    const owner = controllerOf(pod);
    errors.push(
      owner
        ? `pod "${name}" is owned by ${owner.kind}/${owner.name} (UID: ${owner.uid}), not by sandbox "${name}"`
        : `cannot adopt unowned pod "${name}"`,
    );
    pod = undefined;
  } else if (!pod && owned[0]) {
    pod = owned[0];
  }
  if (!multiple && suspended && pod && !pod.metadata.deletionTimestamp) {
    pod = ctx.deleter.delete(POD, pod, {}).object;
    pod = store.read(POD, namespace, pod.metadata.name);
  } else if (!multiple && !suspended && !pod && errors.length === 0) {
    try {
      pod = api.create(POD, namespace, desiredPod(sandbox, spec, hash));
    } catch (error) {
      errors.push(errorText(error));
    }
  }

  let service = store.read(SERVICE, namespace, name);
  if (service && !isControlledBy(service, sandbox)) {
    if (spec.service === true) errors.push(`service "${name}" is not owned by sandbox "${name}"`);
    service = undefined;
  } else if (service && spec.service === false) {
    ctx.deleter.delete(SERVICE, service, {});
    service = undefined;
  } else if (!service && spec.service === true && !multiple) {
    try {
      service = api.create(SERVICE, namespace, desiredService(sandbox, spec, hash));
    } catch (error) {
      errors.push(`service create failed: ${errorText(error)}`);
    }
  }

  writeStatus(ctx, sandbox, { spec, pod, service, multiple: multiple ? owned.length : 0, errors, hash });
}

interface Observed {
  spec: SandboxSpec;
  pod: KubeObject | undefined;
  service: KubeObject | undefined;
  multiple: number;
  errors: string[];
  hash: string;
}

function readyCondition(observed: Observed, generation: number): ConditionInput {
  const { spec, pod, service } = observed;
  const notReady = (reason: string, message: string): ConditionInput => ({
    type: 'Ready',
    status: 'False',
    reason,
    message,
    observedGeneration: generation,
  });
  if (observed.multiple > 0) {
    return notReady(
      'MultiplePods',
      `multiple Pods (${observed.multiple}) are controlled by this Sandbox; refusing to choose or create a Pod`,
    );
  }
  if (observed.errors.length > 0)
    return notReady('ReconcilerError', `Error seen: ${observed.errors.join('; ')}`);
  if (spec.operatingMode === 'Suspended')
    return notReady('SandboxSuspended', pod ? 'Sandbox is suspending' : 'Sandbox is suspended');
  const phase = typeof pod?.status?.['phase'] === 'string' ? pod.status['phase'] : '';
  if (phase === 'Succeeded') return notReady('PodSucceeded', 'Pod completed successfully');
  if (phase === 'Failed') return notReady('PodFailed', 'Pod failed');
  let message = pod ? `Pod exists with phase: ${phase}` : 'Pod does not exist';
  let podReady = false;
  if (pod && phase === 'Running') {
    const ips = pod.status?.['podIPs'];
    const ready = findCondition(pod, 'Ready')?.status === 'True';
    podReady = ready && Array.isArray(ips) && ips.length > 0;
    message = !ready
      ? 'Pod is Running but not Ready'
      : podReady
        ? 'Pod is Ready'
        : 'Pod is Ready but has no podIPs yet';
  }
  const serviceRequired = spec.service ?? service !== undefined;
  if (serviceRequired) message += service ? '; Service Exists' : '; Service does not exist';
  if (podReady && (!serviceRequired || service)) {
    return {
      type: 'Ready',
      status: 'True',
      reason: 'DependenciesReady',
      message,
      observedGeneration: generation,
    };
  }
  return notReady('DependenciesNotReady', message);
}

function writeStatus(ctx: ReconcileContext, sandbox: KubeObject, observed: Observed): void {
  const generation = sandbox.metadata.generation;
  const { pod, service } = observed;
  let conditions = conditionsOf(sandbox);
  const suspended = observed.spec.operatingMode === 'Suspended';
  conditions = setCondition(conditions, {
    type: 'Suspended',
    status: suspended && !pod ? 'True' : 'False',
    reason: !suspended ? 'NotSuspended' : pod ? 'PodTerminating' : 'PodTerminated',
    message: !suspended
      ? 'Sandbox is not suspended'
      : pod
        ? 'Pod is terminating. Sandbox is suspending'
        : 'Pod has been terminated. Sandbox is suspended',
    observedGeneration: generation,
  });
  const phase = pod?.status?.['phase'];
  if (phase === 'Succeeded' || phase === 'Failed') {
    const succeeded = phase === 'Succeeded';
    conditions = setCondition(conditions, {
      type: 'Finished',
      status: 'True',
      reason: succeeded ? 'PodSucceeded' : 'PodFailed',
      message: succeeded ? 'Pod completed successfully' : 'Pod failed',
      observedGeneration: generation,
    });
  } else {
    conditions = removeCondition(conditions, 'Finished');
  }
  const scheduled = pod ? findCondition(pod, 'PodScheduled') : undefined;
  if (pod) {
    const status = scheduled?.status ?? 'Unknown';
    const reason = scheduled?.reason || (status === 'True' ? 'PodScheduled' : 'PodSchedulingUnknown');
    const message = scheduled ? scheduled.message : 'Pod has not reported a PodScheduled condition yet';
    conditions = setCondition(conditions, {
      type: 'PodScheduled',
      status,
      reason,
      message,
      observedGeneration: generation,
    });
  } else {
    conditions = removeCondition(conditions, 'PodScheduled');
  }
  conditions = setCondition(conditions, readyCondition(observed, generation));

  const status: JsonObject = { conditions };
  const ips = pod?.status?.['podIPs'];
  if (Array.isArray(ips) && ips.length > 0) status['podIPs'] = (ips as { ip: string }[]).map((p) => p.ip);
  const nodeName = pod?.spec?.['nodeName'];
  if (typeof nodeName === 'string') status['nodeName'] = nodeName;
  if (pod) status['selector'] = `${SANDBOX_NAME_HASH}=${observed.hash}`;
  if (service) {
    status['service'] = service.metadata.name;
    status['serviceFQDN'] =
      `${service.metadata.name}.${service.metadata.namespace ?? ''}.svc.${ctx.clusterDomain}`;
  }
  if (sameJson(status, sandbox.status ?? {})) return;
  ctx.api.replace(
    SANDBOX,
    sandbox.metadata.namespace,
    sandbox.metadata.name,
    { ...sandbox, status },
    'status',
  );
}
