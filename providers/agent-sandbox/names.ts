// Kubernetes names and label keys of the Agent Sandbox adapter. Every name derives from the operation
// ID alone, so a retried or concurrent provision of one operation meets the same objects
// (AlreadyExists) instead of making a second set.
import { createHash } from 'node:crypto';
import { canonicalJson } from '../../lib/canonical-json.ts';
import { base32 } from '../../lib/base32.ts';

export const GROUP = 'extensions.agents.x-k8s.io';
export const CORE_GROUP = 'agents.x-k8s.io';
export const VERSION = 'v1beta1';
export const CILIUM_GROUP = 'cilium.io';
export const CILIUM_VERSION = 'v2';

export const LABELS = {
  managedBy: 'app.kubernetes.io/managed-by',
  ownerHash: 'sandlot.dev/owner-hash',
  lifecycleGeneration: 'sandlot.dev/lifecycle-generation',
  resourceGeneration: 'sandlot.dev/resource-generation',
  providerFence: 'sandlot.dev/provider-fence',
  operationId: 'sandlot.dev/operation-id',
  networkPolicyGeneration: 'sandlot.dev/network-policy-generation',
  projectHash: 'sandlot.dev/project-hash',
} as const;

export const MANAGED_BY = 'sandlot';

/** Owner fields too long or too free-form for a label value ride in annotations. */
export const ANNOTATIONS = {
  tenantId: 'sandlot.dev/tenant-id',
  projectId: 'sandlot.dev/project-id',
  runId: 'sandlot.dev/run-id',
  environmentId: 'sandlot.dev/environment-id',
  volumeResourceGeneration: 'sandlot.dev/volume-resource-generation',
  volumeDataGeneration: 'sandlot.dev/volume-data-generation',
  workspacePvc: 'sandlot.dev/workspace-pvc',
  workspacePvcUid: 'sandlot.dev/workspace-pvc-uid',
  workspaceMountPath: 'sandlot.dev/workspace-mount-path',
  workspaceReadOnly: 'sandlot.dev/workspace-read-only',
} as const;

/**
 * The project's label value: the first 40 hex digits of SHA-256 over the canonical JSON of
 * `[tenantId, projectId]` (`["acme","checkout"]`). Pods carry it, and the project's Cilium policies
 * are labelled and select by it.
 */
export function projectHashOf(tenantId: string, projectId: string): string {
  return createHash('sha256')
    .update(canonicalJson([tenantId, projectId]))
    .digest('hex')
    .slice(0, 40);
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

export const isDnsLabel = (value: string): boolean => value.length <= 63 && DNS_LABEL.test(value);
export const isLabelValue = (value: string): boolean => value.length <= 63 && LABEL_VALUE.test(value);

export interface ObjectNames {
  claim: string;
  template: string;
  pool: string;
}

/**
 * `sl-` + base32 of the first 20 bytes of SHA-256(operation ID): operation IDs of any length map to
 * a fixed 35-character stem, so the pool (40) and the Pod and Sandbox named after the claim stay
 * within a 63-character DNS label.
 */
export function objectNames(operationId: string): ObjectNames {
  const digest = createHash('sha256').update(`sandlot.agent-sandbox.v1\0${operationId}`).digest();
  const claim = `sl-${base32(digest.subarray(0, 20))}`;
  return { claim, template: `${claim}-tpl`, pool: `${claim}-pool` };
}

/** The Workspace PVC of a volume: `vol_<hex>` → `vol-<hex>`; anything that is not a DNS label is refused. */
export function pvcNameOf(volumeId: string): string | undefined {
  if (!/^vol[_-][a-z0-9_-]+$/.test(volumeId)) return undefined;
  const name = volumeId.replaceAll('_', '-');
  return isDnsLabel(name) ? name : undefined;
}

/** The resource ID the port sees: the claim's name and UID, so a re-created claim is a new resource. */
export function resourceIdOf(claimName: string, claimUid: string): string {
  return `${claimName}/${claimUid}`;
}

const UID = /^[A-Za-z0-9-]{1,128}$/;

export function parseResourceId(resourceId: string): { name: string; uid: string } | undefined {
  const [name, uid, ...rest] = resourceId.split('/');
  if (name === undefined || uid === undefined || rest.length > 0) return undefined;
  return isDnsLabel(name) && UID.test(uid) ? { name, uid } : undefined;
}
