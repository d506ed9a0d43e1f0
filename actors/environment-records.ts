// Derived rows of the Environment machine, written in the transition's transaction: the lease row
// (one current per Environment), the Workspace attachment CAS, and an attempt row for every
// provider effect, so no provider call can happen without a durable attempt written before it.
import type { EnvironmentEvent } from '../machines/environment-events.ts';
import type {
  AttemptResolution,
  LeaseContext,
  LeaseRecord,
  ProviderEffect,
} from '../machines/sandbox-context.ts';
import { insertAttempt, resolveAttempt } from '../store/attempts.ts';
import { canonicalJson, sha256Hex } from '../lib/canonical-json.ts';
import type { Queryable } from '../store/db.ts';
import type { EnvironmentRow } from '../store/environments.ts';
import { insertLease, updateLease } from '../store/leases.ts';
import { attachVolume, detachVolume } from '../store/workspaces.ts';
import type { DeclaredAction, InitEvent } from './definition.ts';
import { WorkspaceConflictError } from './errors.ts';

export async function applyEnvironmentAction(
  tx: Queryable,
  row: EnvironmentRow,
  action: DeclaredAction,
  event: EnvironmentEvent | InitEvent,
): Promise<void> {
  switch (action.type) {
    case 'record.leaseReserved':
      return reserveLease(tx, row, action.params as LeaseContext, event);
    case 'record.lease':
      return recordLease(tx, row, action.params as LeaseRecord);
    case 'record.attemptsResolved':
      for (const r of action.params as AttemptResolution[]) {
        await resolveAttempt(tx, r.attemptId, { state: r.state, resolution: r.resolution });
      }
      return;
    case 'effect.provider':
      return openAttempt(tx, row, action.params as ProviderEffect);
  }
}

async function reserveLease(
  tx: Queryable,
  row: EnvironmentRow,
  lease: LeaseContext,
  event: EnvironmentEvent | InitEvent,
) {
  if (event.type !== 'sandbox.provision') throw new Error('a lease is reserved only by sandbox.provision');
  await insertLease(tx, {
    environmentId: row.environmentId,
    resourceGeneration: lease.resourceGeneration,
    operationId: lease.operationId,
    lifecycleGeneration: lease.lifecycleGeneration,
    providerFence: lease.providerFence,
    currentFencingGeneration: lease.currentFencingGeneration,
    idempotencyKey: lease.idempotencyKey,
    runSelection: event.runSelection,
    providerIdentity: event.providerIdentity,
    providerOptions: event.providerOptions,
    recoveryRequest: {
      operationId: lease.operationId,
      ownerHash: lease.ownerHash,
      resourceGeneration: lease.resourceGeneration,
      providerFence: lease.providerFence,
    },
    workspace: lease.workspace,
    networkPolicyGeneration: lease.networkPolicyGeneration,
    revision: row.revision,
  });
  const attached = await attachVolume(tx, {
    volumeId: lease.workspace.volumeId,
    environmentId: row.environmentId,
    resourceGeneration: lease.workspace.resourceGeneration,
    dataGeneration: lease.workspace.dataGeneration,
    lease: lease.resourceGeneration,
  });
  if (!attached) throw new WorkspaceConflictError(lease.workspace.volumeId);
}

async function recordLease(tx: Queryable, row: EnvironmentRow, record: LeaseRecord) {
  await updateLease(tx, { environmentId: row.environmentId, ...record, revision: row.revision });
  // Released is reached only on exact proof (a release receipt, or an exact listOwned showing the
  // resource absent); Failed only when the provider proved nothing was created. Then detach.
  const confirmedGone = record.state === 'Released' || record.state === 'Failed';
  if (confirmedGone) {
    const { rows } = await tx.query<{ volumeId: string }>(
      `SELECT workspace->>'volumeId' AS "volumeId" FROM sandbox_leases WHERE environment_id = $1 AND resource_generation = $2`,
      [row.environmentId, record.resourceGeneration],
    );
    const volumeId = rows[0]?.volumeId;
    if (volumeId !== undefined) await detachVolume(tx, volumeId, record.resourceGeneration);
  }
}

async function openAttempt(tx: Queryable, row: EnvironmentRow, effect: ProviderEffect) {
  await insertAttempt(tx, {
    attemptId: effect.attemptId,
    environmentId: row.environmentId,
    operationId: effect.operationId,
    kind: effect.kind,
    tenantId: row.tenantId,
    projectId: row.projectId,
    runId: row.runId,
    lifecycleGeneration: effect.fences.lifecycleGeneration,
    resourceGeneration: effect.fences.resourceGeneration,
    providerFence: effect.fences.providerFence,
    fencingGeneration: effect.fences.fencingGeneration,
    request: effect.request,
    requestFingerprint: sha256Hex(
      canonicalJson({ kind: effect.kind, operationId: effect.operationId, ...effect.request }),
    ),
  });
}
