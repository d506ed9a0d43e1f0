// The objects a Sandbox owns, as agent-sandbox's Sandbox controller builds them: the Pod named after
// the Sandbox (PodSpec copied, system labels dropped, PVC volumes merged in) and the headless Service.
import { controllerOf, controllerReference } from './conditions.ts';
import { CLAIM_UID, SANDBOX_NAME_HASH, TEMPLATE_REF_HASH, isSystemKey } from './labels.ts';
import { EXTENSIONS_GROUP, SANDBOX } from './resources.ts';
import { clone, type JsonObject, type KubeObject } from './types.ts';

export interface VolumeClaimTemplate {
  metadata?: { name?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: JsonObject;
}

export interface SandboxSpec {
  podTemplate: {
    metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
    spec: JsonObject;
  };
  volumeClaimTemplates?: VolumeClaimTemplate[];
  service?: boolean;
  operatingMode?: string;
}

function withoutSystemKeys(map: Record<string, string> | undefined): Record<string, string> {
  return Object.fromEntries(Object.entries(map ?? {}).filter(([k]) => !isSystemKey(k)));
}

export function desiredPod(sandbox: KubeObject, spec: SandboxSpec, hash: string): KubeObject {
  const labels: Record<string, string> = {
    ...withoutSystemKeys(spec.podTemplate.metadata?.labels),
    [SANDBOX_NAME_HASH]: hash,
  };
  const owner = controllerOf(sandbox);
  if (owner && owner.apiVersion.startsWith(`${EXTENSIONS_GROUP}/`)) {
    for (const key of owner.kind === 'SandboxClaim' ? [CLAIM_UID, TEMPLATE_REF_HASH] : [TEMPLATE_REF_HASH]) {
      const value = sandbox.metadata.labels?.[key];
      if (value) labels[key] = value;
    }
  }
  const podSpec = clone(spec.podTemplate.spec);
  const claimVolumes = (spec.volumeClaimTemplates ?? []).map((vct) => ({
    name: vct.metadata?.name ?? '',
    persistentVolumeClaim: { claimName: `${vct.metadata?.name ?? ''}-${sandbox.metadata.name}` },
  }));
  if (claimVolumes.length > 0) {
    const replaced = new Set(claimVolumes.map((v) => v.name));
    const volumes = Array.isArray(podSpec['volumes']) ? (podSpec['volumes'] as { name: string }[]) : [];
    podSpec['volumes'] = [...volumes.filter((v) => !replaced.has(v.name)), ...claimVolumes];
  }
  const annotations = withoutSystemKeys(spec.podTemplate.metadata?.annotations);
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: sandbox.metadata.name,
      labels,
      ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
      ownerReferences: [controllerReference(SANDBOX, sandbox)],
    },
    spec: podSpec,
  } as unknown as KubeObject;
}

export function desiredService(sandbox: KubeObject, spec: SandboxSpec, hash: string): KubeObject {
  const seen = new Set<string>();
  const containers = (spec.podTemplate.spec['containers'] ?? []) as {
    ports?: { containerPort: number; protocol?: string; name?: string }[];
  }[];
  const ports = containers
    .flatMap((c) => c.ports ?? [])
    .flatMap((p) => {
      const protocol = p.protocol ?? 'TCP';
      if (seen.has(`${p.containerPort}/${protocol}`)) return [];
      seen.add(`${p.containerPort}/${protocol}`);
      const name = p.name ?? `p-${p.containerPort}-${protocol.toLowerCase()}`;
      return [{ name, protocol, port: p.containerPort, targetPort: p.containerPort }];
    });
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: sandbox.metadata.name,
      labels: { [SANDBOX_NAME_HASH]: hash },
      ownerReferences: [controllerReference(SANDBOX, sandbox)],
    },
    spec: {
      clusterIP: 'None',
      selector: { [SANDBOX_NAME_HASH]: hash },
      ...(ports.length > 0 ? { ports } : {}),
    },
  } as unknown as KubeObject;
}
