// Helpers for resume tests in embedded mode: a sandbox suspended for real (a file in its Workspace,
// resolve, a verified flush, placement released), its acknowledged server configuration stored in
// the embedded Events, Core's resume operation reserved with the evidence of its complete manifest
// and fenced; then prepare (repeated while Provisioning), verify, and Core's phase-4 state for
// bootstrap (the resume Committed, a new Runtime registration on the acknowledged session).
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { EmbeddedAgentHost } from '../../actors/agenthost/embedded.ts';
import type { RuntimeOperation } from '../../actors/ports.ts';
import {
  savedEvidenceOf,
  type ResumeManifest,
  type RestoredWorkspace,
} from '../../actors/resume/requests.ts';
import {
  EmbeddedRuntimeCore,
  moveRuntimeOperation,
  registerRuntimeOperation,
  registerRuntimeRegistration,
  saveRuntimeOperationEvidence,
} from '../../actors/runtime-core/runtime-core-embedded.ts';
import { storeProtectedMaterial } from '../../actors/runtime-events/runtime-events-embedded.ts';
import type { Harness } from './harness.ts';
import {
  activeSandbox,
  coreActor,
  coreCommits,
  coreSuspends,
  flushVerified,
  stepRefOf,
  type ActiveSandbox,
  type VerifiedFlush,
} from './suspend-flow.ts';

/** The server configuration Core acknowledged for the suspended session (credential-free). */
export const CONFIGURATION_TEXT = '{"model":"embedded","tools":["shell"],"workspace":"/workspace"}\n';

export interface Suspended {
  sandbox: ActiveSandbox;
  flush: VerifiedFlush;
  /** Core's reserved-then-fenced resume operation. */
  resume: RuntimeOperation;
  manifest: ResumeManifest;
  /** The resume request Core sends to prepare (and, with restoredWorkspace, to verify). */
  request: Record<string, unknown> & { operation: RuntimeOperation };
}

/** Suspends a fresh sandbox with a file in its Workspace, and has Core reserve and fence its resume. */
export async function suspended(
  h: Harness,
  host: EmbeddedAgentHost,
  run: string,
  manifestChange: Partial<ResumeManifest> = {},
): Promise<Suspended> {
  // Its own project: a resume moves the project's network policy generation.
  return suspend(h, host, await activeSandbox(h, run, `project-${run}`), manifestChange);
}

/** Suspends `sandbox` (Active, its Workspace attached) and has Core reserve and fence its resume. */
export async function suspend(
  h: Harness,
  host: EmbeddedAgentHost,
  sandbox: ActiveSandbox,
  manifestChange: Partial<ResumeManifest> = {},
): Promise<Suspended> {
  const { run } = sandbox;
  const dir = await host.workspaceDirectory(sandbox.volume.volumeId);
  await writeFile(join(dir, 'notes.md'), `work of ${sandbox.run}\n`);
  const ref = stepRefOf(sandbox);

  // Suspend: resolve while Reserved, flush while Fenced, release once Committed.
  const reserved = await coreSuspends(h, sandbox, { states: [] });
  const resolved = await h.request('POST', '/internal/runtime/suspend/resolve', {
    token: sandbox.s.token,
    body: {
      operation: reserved,
      session: { registrationId: `reg-${sandbox.run}`, sessionId: 'session-1', generation: 1 },
    },
  });
  expect(resolved.status).toBe(200);
  await moveRuntimeOperation(h.db, ref, reserved.operationId, 1, 'fenced');
  const { flush, evidence: suspendEvidence } = await flushVerified(h, sandbox, reserved);
  const committed = await coreCommits(h, sandbox, reserved.operationId, suspendEvidence);
  // The provider's release runs in the workers: 202 until the lease is Released, then 200.
  const until = Date.now() + 30_000;
  for (;;) {
    const released = await h.request('POST', '/internal/runtime/suspend/release-placement', {
      token: sandbox.s.token,
      body: { operation: committed, evidence: suspendEvidence },
    });
    if (released.status === 200) break;
    if (released.status !== 202 || Date.now() > until) {
      throw new Error(`release-placement: ${released.status} ${await released.text()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await moveRuntimeOperation(h.db, ref, reserved.operationId, 3, 'completed');

  // Events keeps the acknowledged configuration of the suspended session.
  const { acknowledgment: configuration } = await storeProtectedMaterial(
    h.db,
    { ref, sessionId: 'session-1', eventId: `evt-config-${run}`, objectReference: `obj-config-${run}` },
    new TextEncoder().encode(CONFIGURATION_TEXT),
    'test',
  );

  // Resume: Core reserves its operation, saves the evidence of its complete manifest, fences it.
  const manifest: ResumeManifest = {
    source: {
      leaseOperationId: sandbox.lease.operationId,
      lifecycleGeneration: sandbox.lease.lifecycleGeneration,
      resourceGeneration: sandbox.lease.resourceGeneration,
      providerFence: sandbox.lease.providerFence,
      networkPolicyGeneration: 1,
    },
    workspace: {
      volumeId: sandbox.volume.volumeId,
      transitionRevision: flush.transitionRevision,
      dataGeneration: flush.nextDataGeneration,
      treeHash: flush.receipt.flush.treeHash,
      fileCount: flush.receipt.flush.fileCount,
      byteCount: flush.receipt.flush.byteCount,
    },
    hostReceiptSha256: flush.hostReceiptSha256,
    configuration,
    ...manifestChange,
  };
  const resumeId = `op-resume-${sandbox.run}`;
  await registerRuntimeOperation(
    h.db,
    {
      ref,
      operationId: resumeId,
      terms: {
        kind: 'resume',
        placement: {
          leaseOperationId: sandbox.lease.operationId,
          resourceGeneration: sandbox.lease.resourceGeneration,
          providerFence: sandbox.lease.providerFence,
        },
        workspace: { volumeId: sandbox.volume.volumeId, transitionRevision: flush.transitionRevision },
        requireReleaseCurrent: false,
      },
    },
    'test',
  );
  const request = {
    manifest,
    hostReceiptSha256: flush.hostReceiptSha256,
    transitionRevision: flush.transitionRevision,
  };
  await saveRuntimeOperationEvidence(
    h.db,
    ref,
    resumeId,
    savedEvidenceOf({ ...request, operation: committed }),
  );
  await moveRuntimeOperation(h.db, ref, resumeId, 1, 'fenced');
  const resume = (await new EmbeddedRuntimeCore(h.db).currentRuntimeOperation(
    coreActor,
    ref,
    AbortSignal.timeout(5_000),
  ))!;
  return { sandbox, flush, resume, manifest, request: { ...request, operation: resume } };
}

/** Prepare, repeated while the new Sandbox is still Provisioning (202), for up to a minute. */
export async function prepareResume(h: Harness, s: Suspended): Promise<Response> {
  const until = Date.now() + 60_000;
  for (;;) {
    const res = await h.request('POST', '/internal/runtime/resume/prepare', {
      token: s.sandbox.s.token,
      body: s.request,
    });
    if (res.status !== 202 || Date.now() > until) return res;
  }
}

/** Prepare and verify, both required to succeed; answers the restored placement Core saved. */
export async function preparedAndVerified(h: Harness, s: Suspended): Promise<RestoredWorkspace> {
  const prepared = await prepareResume(h, s);
  if (prepared.status !== 200) throw new Error(await prepared.text());
  const { restoredWorkspace } = (await prepared.json()) as { restoredWorkspace: RestoredWorkspace };
  const verified = await h.request('POST', '/internal/runtime/resume/verify', {
    token: s.sandbox.s.token,
    body: { ...s.request, restoredWorkspace },
  });
  if (verified.status !== 200) throw new Error(await verified.text());
  return restoredWorkspace;
}

/**
 * Core's phase 4: the resume Committed (its execution fence advanced) and a new Runtime registered
 * on the acknowledged session at `generation`; answers the bootstrap request Core sends.
 */
export async function coreStartsRuntime(
  h: Harness,
  s: Suspended,
  restoredWorkspace: RestoredWorkspace,
  generation = 2,
  profileId = 'profile-1',
): Promise<Record<string, unknown>> {
  const ref = stepRefOf(s.sandbox);
  const core = new EmbeddedRuntimeCore(h.db);
  let operation = (await core.currentRuntimeOperation(coreActor, ref, AbortSignal.timeout(5_000)))!;
  if (operation.state === 'fenced') {
    const moved = await moveRuntimeOperation(
      h.db,
      ref,
      operation.operationId,
      operation.stateRevision,
      'committed',
    );
    expect(moved).toMatchObject({ result: 'moved' });
    operation = (await core.currentRuntimeOperation(coreActor, ref, AbortSignal.timeout(5_000)))!;
  }
  const registration = {
    registrationId: `reg-${s.sandbox.run}-g${generation}`,
    profileId,
    sessionId: 'session-1',
    generation,
  };
  expect(await registerRuntimeRegistration(h.db, { ref, ...registration }, 'test')).toBe('created');
  return { ...s.request, operation, restoredWorkspace, phase: 4, registration };
}

/** The restored placement a 200 prepare answers, as the resume tests read it. */
export interface PreparedPlacement {
  lifecycleGeneration: number;
  lease: { operationId: string; lifecycleGeneration: number };
  workspace: { dataGeneration: number; state: string };
  networkPolicyGeneration: number;
}

/**
 * Reads a 200 prepare answer and checks what every resume must show: Prepared, the lifecycle and
 * network generations one past the manifest's source, the Workspace Attached at the flushed data
 * generation. Answers the whole body and its restored placement.
 */
export async function expectPrepared(
  res: Response,
  manifest: ResumeManifest,
): Promise<{
  prepared: { state: string; restoredWorkspace: Record<string, unknown> };
  restored: PreparedPlacement;
}> {
  const prepared = (await res.json()) as { state: string; restoredWorkspace: Record<string, unknown> };
  const restored = prepared.restoredWorkspace as unknown as PreparedPlacement;
  expect(prepared.state).toBe('Prepared');
  expect(restored.lifecycleGeneration).toBe(manifest.source.lifecycleGeneration + 1);
  expect(restored.lease.lifecycleGeneration).toBe(manifest.source.lifecycleGeneration + 1);
  expect(restored.workspace).toMatchObject({
    state: 'Attached',
    dataGeneration: manifest.workspace.dataGeneration,
  });
  expect(restored.networkPolicyGeneration).toBe(manifest.source.networkPolicyGeneration + 1);
  return { prepared, restored };
}
