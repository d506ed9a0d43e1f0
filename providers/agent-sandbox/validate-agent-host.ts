// Read-back of the AgentHost launch profile, on the template and on the actual Pod: the same fixed
// volumes, read-only mounts, UID/GID/fsGroup, HTTPS port and probes, working directory (the lease's
// Workspace mount path) and labels the builder added.
// And the Sandbox's own Service: controlled by the Sandbox (by UID), a private ClusterIP Service
// exposing exactly HTTPS on TCP 8443, whose selector resolves to exactly the actual Pod. Any
// difference is an ownership error: the Pod or Service is not what the lease's snapshot describes.
import { ownership } from '../errors.ts';
import {
  AGENT_HOST_LABELS,
  AGENT_HOST_PORT,
  AGENT_HOST_PORT_NAME,
  LIVE_PATH,
  profileVolumes,
  READY_PATH,
} from './agent-host-profile.ts';
import { CONTAINER_NAME, RUN_AS } from './builders.ts';
import { field, isRecord, type OwnerReference } from './kube-object.ts';
import { isLabelValue } from './names.ts';
import type { AgentHostProfile } from './options.ts';

const list = (value: unknown): unknown[] => (Array.isArray(value) ? (value as unknown[]) : []);
const named = (items: unknown, name: string) => list(items).filter((item) => field(item, 'name') === name);

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** A probe's httpGet must be HTTPS on 8443 (by number or port name) at `path`. */
function httpsProbe(probe: unknown, path: string): boolean {
  const get = field(probe, 'httpGet');
  const port = field(get, 'port');
  return (
    field(get, 'scheme') === 'HTTPS' &&
    field(get, 'path') === path &&
    (port === AGENT_HOST_PORT || port === AGENT_HOST_PORT_NAME)
  );
}

/**
 * Every way `podSpec` (and the Pod's labels) differ from the profile; empty when it carries it.
 * `workspacePath` is the lease's Workspace mount path, the Host's working directory.
 */
export function agentHostDrift(
  podSpec: unknown,
  labels: unknown,
  profile: AgentHostProfile,
  workspacePath: string,
): string[] {
  const problems: string[] = [];
  for (const [key, value] of Object.entries(AGENT_HOST_LABELS)) {
    if (!isRecord(labels) || labels[key] !== value) problems.push(`label ${key}=${value}`);
  }
  const security = field(podSpec, 'securityContext');
  for (const key of ['runAsUser', 'runAsGroup', 'fsGroup']) {
    if (field(security, key) !== RUN_AS) problems.push(`${key} ${RUN_AS}`);
  }
  const containers = named(field(podSpec, 'containers'), CONTAINER_NAME);
  const container = containers.length === 1 ? containers[0] : undefined;
  if (container === undefined) return [...problems, `one ${CONTAINER_NAME} container`];
  for (const volume of profileVolumes(profile)) {
    const sources = named(field(podSpec, 'volumes'), volume.name);
    const [kind] = Object.keys(volume.source);
    const actual = sources.length === 1 && kind !== undefined ? field(sources[0], kind) : undefined;
    // The fixed fields must match; a server may add defaults (medium, optional…) beside them.
    const wanted = kind === undefined ? {} : (volume.source[kind] as Record<string, unknown>);
    if (!isRecord(actual) || Object.entries(wanted).some(([k, v]) => !sameJson(actual[k], v))) {
      problems.push(`volume ${volume.name}`);
    }
    const mounts = named(field(container, 'volumeMounts'), volume.name);
    if (
      mounts.length !== 1 ||
      field(mounts[0], 'mountPath') !== volume.mountPath ||
      (field(mounts[0], 'readOnly') === true) !== volume.readOnly
    ) {
      problems.push(`${volume.readOnly ? 'read-only ' : ''}mount of ${volume.name} at ${volume.mountPath}`);
    }
  }
  if (field(container, 'workingDir') !== workspacePath) problems.push(`working directory ${workspacePath}`);
  const ports = list(field(container, 'ports'));
  const https = ports.filter((port) => field(port, 'containerPort') === AGENT_HOST_PORT);
  if (
    ports.length !== 1 ||
    https.length !== 1 ||
    field(https[0], 'name') !== AGENT_HOST_PORT_NAME ||
    (field(https[0], 'protocol') ?? 'TCP') !== 'TCP'
  ) {
    problems.push(`exactly TCP port ${AGENT_HOST_PORT} named ${AGENT_HOST_PORT_NAME}`);
  }
  if (!httpsProbe(field(container, 'readinessProbe'), READY_PATH)) problems.push('HTTPS readiness probe');
  if (!httpsProbe(field(container, 'livenessProbe'), LIVE_PATH)) problems.push('HTTPS liveness probe');
  return problems;
}

export function assertAgentHost(
  podSpec: unknown,
  labels: unknown,
  profile: AgentHostProfile,
  workspacePath: string,
  code: string,
  what: string,
): void {
  const drift = agentHostDrift(podSpec, labels, profile, workspacePath);
  if (drift.length > 0) {
    throw ownership(code, `${what} does not carry the AgentHost launch profile (${drift.join('; ')})`);
  }
}

export interface ServiceShape {
  metadata?: { name?: string; uid?: string; ownerReferences?: OwnerReference[] };
  spec?: unknown;
}

const SELECTOR_KEY =
  /^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

/**
 * The Service must be the Sandbox's own (controller reference by UID), of type ClusterIP (private
 * to the cluster: no external IPs, no external name, no load balancer), exposing exactly TCP 8443
 * to the Pod's 8443. Returns its selector as an exact equality label selector.
 */
export function validateAgentHostService(
  service: ServiceShape,
  sandbox: { name: string; uid: string },
): string {
  const name = `Service ${sandbox.name}`;
  const refuse = (why: string) => ownership('service-mismatch', `${name} ${why}`);
  const controllers = (service.metadata?.ownerReferences ?? []).filter((r) => r.controller === true);
  const controller = controllers.length === 1 ? controllers[0] : undefined;
  if (service.metadata?.name !== sandbox.name || !service.metadata.uid) throw refuse('has no identity');
  if (controller?.kind !== 'Sandbox' || controller.uid !== sandbox.uid || controller.name !== sandbox.name) {
    throw ownership('service-owner-mismatch', `${name} is not controlled by Sandbox ${sandbox.uid}`);
  }
  const spec = service.spec;
  if (
    field(spec, 'type') !== 'ClusterIP' ||
    list(field(spec, 'externalIPs')).length > 0 ||
    field(spec, 'externalName') !== undefined ||
    field(spec, 'loadBalancerIP') !== undefined
  ) {
    throw refuse('is not a private ClusterIP Service');
  }
  const ports = list(field(spec, 'ports'));
  const target = field(ports[0], 'targetPort');
  if (
    ports.length !== 1 ||
    field(ports[0], 'port') !== AGENT_HOST_PORT ||
    (field(ports[0], 'protocol') ?? 'TCP') !== 'TCP' ||
    (target !== AGENT_HOST_PORT && target !== AGENT_HOST_PORT_NAME)
  ) {
    throw refuse(`does not expose exactly TCP ${AGENT_HOST_PORT} to the Pod's ${AGENT_HOST_PORT}`);
  }
  const selector = field(spec, 'selector');
  const entries = isRecord(selector) ? Object.entries(selector) : [];
  if (
    entries.length === 0 ||
    entries.some(
      ([key, value]) => !SELECTOR_KEY.test(key) || typeof value !== 'string' || !isLabelValue(value),
    )
  ) {
    throw refuse('has no usable selector');
  }
  return entries
    .map(([key, value]) => `${key}=${String(value)}`)
    .sort()
    .join(',');
}

/** The selector must resolve to exactly the actual Pod: one match, by UID. */
export function assertSelectsExactly(
  selected: { metadata?: { name?: string; uid?: string } }[],
  pod: { name: string; uid: string },
  selector: string,
): void {
  if (selected.length !== 1 || selected[0]?.metadata?.uid !== pod.uid) {
    const names = selected.map((p) => p.metadata?.name ?? '?').join(', ') || 'none';
    throw ownership(
      'service-selector-mismatch',
      `Service selector ${selector} resolves to ${names}, not exactly Pod ${pod.name} (${pod.uid})`,
    );
  }
}
