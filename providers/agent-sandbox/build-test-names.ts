// Names, labels and annotations of the BuildTest command and collector Pods on Agent Sandbox. Every
// name derives from the BuildTest operation ID alone (hashed, so any ID gives a DNS label), so a
// repeated start of one operation meets the same Pod and the same policy (AlreadyExists), never a
// second set. The Pods carry the lease's owner labels but never the project-hash and
// network-policy-generation labels: the project's Cilium policy selects Pods by those and would
// otherwise open the offline Pods to its allowed egress.
import { createHash } from 'node:crypto';
import { base32 } from '../../lib/base32.ts';
import type { PodRole } from '../build-test.ts';

export const BUILD_TEST_LABELS = {
  operation: 'sandlot.dev/build-test-operation',
  role: 'sandlot.dev/build-test-role',
} as const;

/** What a helper reads from its Pod, and what a read-back compares with the caller's binding. */
export const BUILD_TEST_ANNOTATIONS = {
  requestFingerprint: 'sandlot.dev/request-fingerprint',
  operationId: 'sandlot.dev/operation-id',
  checkpointId: 'sandlot.dev/checkpoint-id',
  acceptedCommandHash: 'sandlot.dev/accepted-command-hash',
  leaseResourceId: 'sandlot.dev/lease-resource-id',
  /** The helper's request (build-test-pods.ts `HelperRequest`), canonical JSON. */
  request: 'sandlot.dev/build-test-request',
  /** The profile's maxLogBytes on the command Pod: how much of its log an observation reads back. */
  maxLogBytes: 'sandlot.dev/max-log-bytes',
  /** Set by the runner once the preparation receipt matched, before the command is released. */
  preparationReceipt: 'sandlot.dev/preparation-receipt',
  /** Set by the runner when the receipt did not match: the command is never released. */
  preparationRefused: 'sandlot.dev/preparation-refused',
} as const;

/** Containers: the helper in the command Pod, the accepted command, and the collector. */
export const PREPARATION_CONTAINER = 'preparation';
export const COMMAND_CONTAINER = 'command';
export const COLLECTOR_CONTAINER = 'collector';
/** The helper's private state: mounted by the helper and the collector, never by the command. */
export const STATE_VOLUME = 'helper-state';
export const STATE_MOUNT = '/var/run/sandlot-helper';

function digest(operationId: string): Buffer {
  return createHash('sha256').update(`sandlot.build-test.v1\0${operationId}`).digest();
}

/** `bt-` + base32 of 20 digest bytes + `-cmd`/`-col`: 39 characters, a DNS label. */
export function buildTestPodName(operationId: string, role: PodRole): string {
  return `bt-${base32(digest(operationId).subarray(0, 20))}-${role === 'command' ? 'cmd' : 'col'}`;
}

/** The deny-all NetworkPolicy of one operation's Pod of `role`. */
export const buildTestPolicyName = (operationId: string, role: PodRole): string =>
  `${buildTestPodName(operationId, role)}-offline`;

/** The label value naming the operation: 40 hex digits, whatever the ID's length or alphabet. */
export const operationLabelOf = (operationId: string): string =>
  digest(operationId).toString('hex').slice(0, 40);

/** Where the operation's repository is prepared inside the Workspace (outside any agent's tree). */
export function repositoryPathOf(mountPath: string, operationId: string): string {
  return `${mountPath.replace(/\/+$/, '')}/.sandlot/build-test/${operationLabelOf(operationId)}/repo`;
}

export function roleLabels(operationId: string, role: PodRole): Record<string, string> {
  return { [BUILD_TEST_LABELS.operation]: operationLabelOf(operationId), [BUILD_TEST_LABELS.role]: role };
}
