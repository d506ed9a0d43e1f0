// Helpers for suspend tests in embedded mode: an Environment with an Active lease and its Workspace
// attached (one per run, so each case owns its volume's transitions), and Core's suspend operation
// and Runtime registration in the embedded RuntimeCore stand-in, moved to the state a case needs.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { EmbeddedAgentHost } from '../../actors/agenthost/embedded.ts';
import { TableNetworkPolicyWriter } from '../../actors/sandbox/network-policy-writer-embedded.ts';
import type { RuntimeOperation, RuntimeStepRef } from '../../actors/ports.ts';
import { EmbeddedRuntimeEvents } from '../../actors/runtime-events/runtime-events-embedded.ts';
import {
  EmbeddedRuntimeCore,
  moveRuntimeOperation,
  registerRuntimeOperation,
  registerRuntimeRegistration,
  saveRuntimeOperationEvidence,
} from '../../actors/runtime-core/runtime-core-embedded.ts';
import type {
  RuntimeOperationState,
  SavedOperationEvidence,
} from '../../actors/runtime-core/runtime-operation.ts';
import { readCurrentLease, type LeaseRow } from '../../store/leases.ts';
import { readVolume, type VolumeRow } from '../../store/workspaces.ts';
import { actorOf } from './build-test-commands.ts';
import { openBackend, type BackendHandle } from './databases.ts';
import { buildHarness, type Harness, type HarnessOptions } from './harness.ts';
import { provisionBody, setupScenario, waitForLease, type Scenario } from './sandbox-flow.ts';

/** A suspend test's world: PostgreSQL, workers, the embedded Host with its trees in `stateDir`. */
export interface SuspendBackend {
  handle: BackendHandle;
  h: Harness;
  host: EmbeddedAgentHost;
  stateDir: string;
  close(): Promise<void>;
}

/**
 * Opens it with the embedded RuntimeCore and Events stand-ins and network policy writer; `options`
 * (or what they are made of the database) add to, or replace, the defaults.
 */
export async function openSuspendBackend(
  options: HarnessOptions | ((db: BackendHandle['db']) => HarnessOptions) = {},
): Promise<SuspendBackend> {
  const handle = await openBackend('postgres');
  const stateDir = await mkdtemp(join(tmpdir(), 'sandlot-suspend-'));
  const host = new EmbeddedAgentHost({ db: handle.db, stateDir });
  const h = await buildHarness(handle.db, {
    workers: {},
    agentHost: host,
    runtimeCore: new EmbeddedRuntimeCore(handle.db),
    networkPolicyWriter: new TableNetworkPolicyWriter(handle.db),
    runtimeEvents: new EmbeddedRuntimeEvents(handle.db),
    provider: { phaseDelaysMs: { imageReady: 10, started: 30 } },
    ...(typeof options === 'function' ? options(handle.db) : options),
  });
  return {
    handle,
    h,
    host,
    stateDir,
    async close() {
      await h.close();
      await handle.close();
      await rm(stateDir, { recursive: true, force: true });
    },
  };
}

export interface ActiveSandbox {
  s: Scenario;
  run: string;
  project: string;
  lease: LeaseRow;
  volume: VolumeRow;
}

/** A fresh Environment in its own run, provisioned to Active with its Workspace attached. */
export async function activeSandbox(h: Harness, run: string, project = 'checkout'): Promise<ActiveSandbox> {
  const s = await setupScenario(h, { run, project });
  const provisioned = await h.request('POST', `${s.base}/sandbox/provision`, {
    token: s.token,
    body: provisionBody(s),
  });
  expect(provisioned.status).toBe(202);
  // The Host is configured once its sandbox started: a flush before then is refused.
  await waitForLease(h, s, (l) => l['state'] === 'Active' && l['phase'] === 'started');
  const lease = (await readCurrentLease(h.db, s.environmentId))!;
  const volume = (await readVolume(h.db, s.volume.volumeId))!;
  expect(volume).toMatchObject({ state: 'Attached', attachedLease: lease.resourceGeneration });
  return { s, run, project, lease, volume };
}

export const stepRefOf = (sandbox: ActiveSandbox, stepId = 'agent_1'): RuntimeStepRef => ({
  tenantId: 'acme',
  projectId: sandbox.project,
  runId: sandbox.run,
  stepId,
  environmentId: sandbox.s.environmentId,
});

export const coreActor = actorOf('acme', 'alice', 'acme-alice-token');

/**
 * Core's suspend operation for the sandbox's lease and volume at its current transition revision,
 * with a Runtime registration, moved along `states` (e.g. ['fenced']); answered as Core holds it.
 */
export async function coreSuspends(
  h: Harness,
  sandbox: ActiveSandbox,
  { operationId = `op-suspend-${sandbox.run}`, states = ['fenced'] as RuntimeOperationState[] } = {},
): Promise<RuntimeOperation> {
  const ref = stepRefOf(sandbox);
  const volume = (await readVolume(h.db, sandbox.volume.volumeId))!;
  const created = await registerRuntimeOperation(
    h.db,
    {
      ref,
      operationId,
      terms: {
        kind: 'suspend',
        placement: {
          leaseOperationId: sandbox.lease.operationId,
          resourceGeneration: sandbox.lease.resourceGeneration,
          providerFence: sandbox.lease.providerFence,
        },
        workspace: { volumeId: volume.volumeId, transitionRevision: volume.revision },
        requireReleaseCurrent: true,
      },
    },
    'test',
  );
  expect(created).toBe('created');
  await registerRuntimeRegistration(
    h.db,
    {
      ref,
      registrationId: `reg-${sandbox.run}`,
      sessionId: 'session-1',
      generation: 1,
      profileId: 'profile-1',
    },
    'test',
  );
  let revision = 1;
  for (const to of states) {
    const moved = await moveRuntimeOperation(h.db, ref, operationId, revision, to);
    expect(moved).toMatchObject({ result: 'moved' });
    revision += 1;
  }
  return (await new EmbeddedRuntimeCore(h.db).currentRuntimeOperation(
    coreActor,
    ref,
    AbortSignal.timeout(5_000),
  ))!;
}

/** The flush request Core sends for its saved Fenced operation. */
export const flushBodyOf = (operation: RuntimeOperation, volume: VolumeRow) => ({
  stepId: operation.ref.stepId,
  operationId: operation.operationId,
  transitionRevision: operation.workspace.transitionRevision,
  nextDataGeneration: volume.dataGeneration + 1,
});

/** What the flush route answers for a verified flush (the fields the suspend tests read). */
export interface VerifiedFlush {
  transitionRevision: number;
  nextDataGeneration: number;
  hostReceiptSha256: string;
  receipt: { flush: { treeHash: string; fileCount: number; byteCount: number } };
}

/**
 * Flushes the sandbox's Workspace for Core's Fenced suspend operation (must verify), and answers
 * the flush, the evidence Core saves for it (with `manifestSha256`), and the volume it left.
 */
export async function flushVerified(
  h: Harness,
  sandbox: ActiveSandbox,
  fenced: RuntimeOperation,
  manifestSha256 = 'a'.repeat(64),
): Promise<{ flush: VerifiedFlush; evidence: SavedOperationEvidence; volume: VolumeRow }> {
  const res = await h.request(
    'POST',
    `${sandbox.s.base}/workspace-volumes/${sandbox.volume.volumeId}/flush`,
    {
      token: sandbox.s.token,
      body: flushBodyOf(fenced, sandbox.volume),
    },
  );
  if (res.status !== 200) throw new Error(`flush: ${res.status} ${await res.text()}`);
  const { flush } = (await res.json()) as { flush: VerifiedFlush };
  const evidence = {
    transitionRevision: flush.transitionRevision,
    dataGeneration: flush.nextDataGeneration,
    hostReceiptSha256: flush.hostReceiptSha256,
    manifestSha256,
  };
  return { flush, evidence, volume: (await readVolume(h.db, sandbox.volume.volumeId))! };
}

/**
 * Core saves `evidence` for its Fenced operation (state revision 2) and commits; answers the
 * Committed operation as Core holds it.
 */
export async function coreCommits(
  h: Harness,
  sandbox: ActiveSandbox,
  operationId: string,
  evidence: SavedOperationEvidence,
): Promise<RuntimeOperation> {
  const ref = stepRefOf(sandbox);
  expect(await saveRuntimeOperationEvidence(h.db, ref, operationId, evidence)).toBe('created');
  expect(await moveRuntimeOperation(h.db, ref, operationId, 2, 'committed')).toMatchObject({
    result: 'moved',
  });
  return (await new EmbeddedRuntimeCore(h.db).currentRuntimeOperation(
    coreActor,
    ref,
    AbortSignal.timeout(5_000),
  ))!;
}

/** The sandbox's owner abandons its lease under its own key (not Core's release); answers 202. */
export async function ownerAbandons(
  h: Harness,
  sandbox: ActiveSandbox,
  idempotencyKey: string,
): Promise<void> {
  const { s, lease } = sandbox;
  const abandoned = await h.request('POST', `${s.base}/sandbox/abandon`, {
    token: s.token,
    body: {
      resourceGeneration: lease.resourceGeneration,
      providerFence: lease.providerFence,
      idempotencyKey,
    },
  });
  expect(abandoned.status).toBe(202);
  await waitForLease(h, s, (l) => l['state'] === 'Released');
}
