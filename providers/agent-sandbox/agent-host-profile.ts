// The optional AgentHost launch profile: what the adapter adds to the legacy template when the
// snapshot pins one. Only the ConfigMap and TLS Secret names come from settings; everything else is
// fixed here: private state and temporary volumes, read-only configuration, TLS and
// service-backend-ca mounts, HTTPS on TCP 8443 with health probes, the negotiated Workspace (the
// lease's mount path) as the Host's working directory, where its SDK runs, the two stable Pod labels,
// and `service: true`, which asks the Sandbox controller for the Sandbox's own private Service. Without
// a profile none of this is added (validate-agent-host.ts checks the same constants on read-back).
import type { AgentHostProfile } from './options.ts';

export const AGENT_HOST_PORT = 8443;
export const AGENT_HOST_PORT_NAME = 'https';
export const READY_PATH = '/health/ready';
export const LIVE_PATH = '/health/live';

export const AGENT_HOST_LABELS: Readonly<Record<string, string>> = {
  'agentweaver.io/workload': 'agenthost',
  // Selects the existing Identity Broker network rule; it grants no application authority.
  'agentweaver.io/identity-client': 'true',
};

/** The internal CA the Host's own HTTPS clients trust: a ConfigMap of that name in the namespace. */
export const SERVICE_BACKEND_CA = 'service-backend-ca';

export interface ProfileVolume {
  name: string;
  mountPath: string;
  readOnly: boolean;
  /** The volume source, exactly as the template carries it. */
  source: Record<string, unknown>;
}

/** The profile's volumes beside the legacy Workspace and /tmp ones, in template order. */
export function profileVolumes(profile: AgentHostProfile): ProfileVolume[] {
  return [
    {
      name: 'agenthost-state',
      mountPath: '/var/lib/agenthost',
      readOnly: false,
      source: { emptyDir: { sizeLimit: '1Gi' } },
    },
    {
      name: 'agenthost-config',
      mountPath: '/etc/agenthost/config',
      readOnly: true,
      source: { configMap: { name: profile.configMapName } },
    },
    {
      name: 'agenthost-tls',
      mountPath: '/etc/agenthost/tls',
      readOnly: true,
      // 0440: readable by the fsGroup (1000) the Host runs in, by no one else.
      source: { secret: { secretName: profile.tlsSecretName, defaultMode: 0o440 } },
    },
    {
      name: SERVICE_BACKEND_CA,
      mountPath: '/var/run/service-backend-ca',
      readOnly: true,
      source: { configMap: { name: SERVICE_BACKEND_CA } },
    },
  ];
}

const probe = (path: string, periodSeconds: number) => ({
  httpGet: { path, port: AGENT_HOST_PORT, scheme: 'HTTPS' },
  periodSeconds,
  timeoutSeconds: 2,
  failureThreshold: 3,
});

/** What the profile adds to the one container; `workspacePath` is the lease's Workspace mount path. */
export function profileContainer(profile: AgentHostProfile, workspacePath: string) {
  return {
    workingDir: workspacePath,
    ports: [{ name: AGENT_HOST_PORT_NAME, containerPort: AGENT_HOST_PORT, protocol: 'TCP' }],
    readinessProbe: probe(READY_PATH, 5),
    livenessProbe: probe(LIVE_PATH, 10),
    volumeMounts: profileVolumes(profile).map(({ name, mountPath, readOnly }) => ({
      name,
      mountPath,
      ...(readOnly ? { readOnly: true } : {}),
    })),
  };
}

export function profileVolumeSources(profile: AgentHostProfile): Record<string, unknown>[] {
  return profileVolumes(profile).map(({ name, source }) => ({ name, ...source }));
}
