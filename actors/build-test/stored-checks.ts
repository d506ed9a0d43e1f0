// The checks BuildTest makes against what is stored: the binding a lease offers (from its
// validated recovery record, never from the caller), the profile the lease accepted, and whether an
// acknowledgment names exactly an operation's capture and Pods.
import { canonicalJson } from '../../lib/canonical-json.ts';
import type { BuildTestOperationRow } from '../../store/build-test-operations.ts';
import type { LeaseRow } from '../../store/leases.ts';
import { recordedRequestOf } from '../sandbox/readiness.ts';
import {
  sameCheckpoint,
  type BuildTestCheckpointRef,
  type JournalAcknowledgment,
} from './accepted-command.ts';
import { BuildTestRefusedError } from './errors.ts';
import { leaseProfileOf, type BuildTestProfileRef } from './lease-profile.ts';
import type { ExpectedSandboxBinding } from './requests.ts';

/** The binding a lease offers now, from its validated recovery record (never from the caller). */
export function bindingOfLease(lease: LeaseRow): ExpectedSandboxBinding | null {
  const recorded = recordedRequestOf(lease);
  if (recorded === null) return null;
  const { volumeId, resourceGeneration, dataGeneration } = recorded.workspace;
  return {
    leaseOperationId: lease.operationId,
    resourceGeneration: lease.resourceGeneration,
    providerFence: lease.providerFence,
    workspace: { volumeId, resourceGeneration, dataGeneration },
    networkPolicyGeneration: recorded.networkPolicyGeneration,
  };
}

export const sameJson = (a: unknown, b: unknown) => canonicalJson(a) === canonicalJson(b);

/**
 * The AcceptedBuildTestProfile the lease recorded when it was reserved. A lease reserved while no
 * profile was configured (or before leases recorded one) never runs BuildTest: 409.
 */
export function profileOfLease(lease: LeaseRow): BuildTestProfileRef {
  const profile = leaseProfileOf(lease);
  if (profile === null) {
    throw new BuildTestRefusedError(
      'build-test-lease-without-profile',
      'this lease was reserved without an AcceptedBuildTestProfile; provision a new lease to run BuildTest',
    );
  }
  return profile;
}

/** The acknowledgment must name exactly this operation's checkpoint, capture, fingerprint and Pods. */
export function acknowledgmentProblem(
  row: BuildTestOperationRow,
  operationId: string,
  ack: JournalAcknowledgment,
): string | null {
  if (row.state !== 'Succeeded' || row.capture === null) return 'the operation has no sealed capture';
  if (ack.operationId !== operationId) return 'the acknowledgment names another operation';
  if (!sameCheckpoint(ack.checkpoint, row.checkpoint as BuildTestCheckpointRef))
    return 'the acknowledgment names another checkpoint';
  if (ack.capture.sha256 !== row.capture.sha256 || ack.capture.length !== row.capture.length)
    return 'the acknowledgment names another capture';
  if (ack.capture.requestFingerprint !== row.requestFingerprint)
    return 'the acknowledgment names another request fingerprint';
  if (
    ack.capture.collectorPodUid !== row.collectorPod?.['uid'] ||
    ack.capture.commandPodUid !== row.commandPod?.['uid']
  )
    return 'the acknowledgment names other Pods';
  return null;
}
