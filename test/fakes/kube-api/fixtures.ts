// Ready-made objects for tests against the fake: a RuntimeClass, a SandboxTemplate, a zero-replica
// SandboxWarmPool (so claims cold-start) and a SandboxClaim, all valid against the CRD schemas.
import type { JsonObject } from './types.ts';

export const EXTENSIONS_API = 'extensions.agents.x-k8s.io/v1beta1';
export const AGENTS_API = 'agents.x-k8s.io/v1beta1';

export function runtimeClass(name = 'kata'): {
  apiVersion: string;
  kind: string;
  metadata: { name: string };
  handler: string;
} {
  return { apiVersion: 'node.k8s.io/v1', kind: 'RuntimeClass', metadata: { name }, handler: name };
}

export interface TemplateOptions {
  runtimeClassName?: string;
  service?: boolean;
  /** Adds a `workspace` volume backed by this PVC name (which must exist for the pod to schedule). */
  claimName?: string;
  labels?: Record<string, string>;
  extraSpec?: JsonObject;
}

export function podSpec(options: TemplateOptions = {}): JsonObject {
  return {
    runtimeClassName: options.runtimeClassName ?? 'kata',
    securityContext: { runAsNonRoot: true, runAsUser: 1000 },
    containers: [
      {
        name: 'main',
        image: 'ghcr.io/acme/runner:1.0',
        ports: [{ containerPort: 8080, name: 'http' }],
        ...(options.claimName ? { volumeMounts: [{ name: 'workspace', mountPath: '/workspace' }] } : {}),
      },
    ],
    ...(options.claimName
      ? { volumes: [{ name: 'workspace', persistentVolumeClaim: { claimName: options.claimName } }] }
      : {}),
  };
}

export function sandboxTemplate(name: string, options: TemplateOptions = {}): JsonObject {
  return {
    apiVersion: EXTENSIONS_API,
    kind: 'SandboxTemplate',
    metadata: { name },
    spec: {
      podTemplate: { metadata: { labels: options.labels ?? { app: 'sandlot' } }, spec: podSpec(options) },
      ...(options.service !== undefined ? { service: options.service } : {}),
      ...options.extraSpec,
    },
  };
}

export function warmPool(name: string, template: string, replicas = 0): JsonObject {
  return {
    apiVersion: EXTENSIONS_API,
    kind: 'SandboxWarmPool',
    metadata: { name },
    spec: { replicas, sandboxTemplateRef: { name: template } },
  };
}

export function sandboxClaim(name: string, pool: string, extra: JsonObject = {}): JsonObject {
  return {
    apiVersion: EXTENSIONS_API,
    kind: 'SandboxClaim',
    metadata: { name, labels: { 'sandlot.dev/lease': name } },
    spec: { warmPoolRef: { name: pool }, ...extra },
  };
}
