// The restored placement of a resume as the owner's rows hold it: prepare answers it, verify and
// bootstrap compare a fresh read with the one Core saved, and the Host calls name its binding. One
// function reads it, so all three steps judge the same facts the same way.
import type { Queryable } from '../../store/db.ts';
import { canonicalJson } from '../../lib/canonical-json.ts';
import { readCurrentLease, type LeaseRow } from '../../store/leases.ts';
import { readVolume } from '../../store/workspaces.ts';
import type { AgentHostWorkspaceBinding, RuntimeOperation } from '../ports.ts';
import { agentHostTargetOf, recordedRequestOf } from '../sandbox/readiness.ts';
import { ResumeRefusedError } from './errors.ts';
import type { RestoredWorkspace } from './requests.ts';

/** The restored placement of `lease`, with the actual mount checked against the volume's record. */
export async function restoredOf(
  q: Queryable,
  operation: RuntimeOperation,
  lease: LeaseRow,
  dataGeneration: number,
): Promise<RestoredWorkspace> {
  const recorded = recordedRequestOf(lease);
  const volume = await readVolume(q, operation.workspace.volumeId);
  if (
    recorded === null ||
    volume === null ||
    lease.resource === null ||
    volume.state !== 'Attached' ||
    volume.attachedLease !== lease.resourceGeneration ||
    volume.dataGeneration !== dataGeneration ||
    recorded.workspace.volumeId !== volume.volumeId ||
    recorded.workspace.dataGeneration !== dataGeneration ||
    recorded.resume?.operationId !== operation.operationId
  ) {
    throw new ResumeRefusedError(
      'resume-mount-mismatch',
      `lease ${lease.operationId} is not resume ${operation.operationId}'s own lease mounting volume ${operation.workspace.volumeId} at data generation ${dataGeneration}`,
    );
  }
  return {
    operationId: operation.operationId,
    lifecycleGeneration: lease.lifecycleGeneration,
    lease: {
      operationId: lease.operationId,
      lifecycleGeneration: lease.lifecycleGeneration,
      resourceGeneration: lease.resourceGeneration,
      providerFence: lease.providerFence,
      resourceId: lease.resource.resourceId,
    },
    workspace: {
      volumeId: volume.volumeId,
      state: 'Attached',
      transitionRevision: volume.revision,
      resourceGeneration: volume.resourceGeneration,
      dataGeneration: volume.dataGeneration,
      mountPath: recorded.workspace.mountPath,
      readOnly: recorded.workspace.readOnly,
    },
    networkPolicyGeneration: recorded.networkPolicyGeneration,
  };
}

/** The exact binding the new Host is asked about: the restored lease, its Pod and its Workspace. */
export function restoredBindingOf(lease: LeaseRow, saved: RestoredWorkspace): AgentHostWorkspaceBinding {
  return {
    ...agentHostTargetOf(lease),
    podUid: lease.resource?.placement['podUid'] ?? null,
    workspaceVolumeId: saved.workspace.volumeId,
    dataGeneration: saved.workspace.dataGeneration,
    networkPolicyGeneration: saved.networkPolicyGeneration,
  };
}

/**
 * A fresh owner-scoped observation of the restored placement: the current lease must be the saved
 * one, Active, and its placement as read now exactly what prepare answered and Core saved.
 */
export async function observeRestored(
  q: Queryable,
  operation: RuntimeOperation,
  saved: RestoredWorkspace,
  dataGeneration: number,
): Promise<LeaseRow> {
  const lease = await readCurrentLease(q, operation.ref.environmentId);
  if (lease === null || lease.operationId !== saved.lease.operationId || lease.state !== 'Active') {
    throw new ResumeRefusedError(
      'resume-placement-mismatch',
      `the current lease is ${lease === null ? 'none' : `${lease.operationId} (${lease.state})`}, not the restored ${saved.lease.operationId} Active`,
    );
  }
  const restored = await restoredOf(q, operation, lease, dataGeneration);
  if (canonicalJson(restored) !== canonicalJson(saved)) {
    throw new ResumeRefusedError(
      'resume-mount-mismatch',
      'the restored placement as observed now is not the one prepare answered',
    );
  }
  return lease;
}
