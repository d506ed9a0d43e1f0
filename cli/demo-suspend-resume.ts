// `sandlot demo --suspend-resume`: the whole suspend → resume cycle on the demo's Active lease, over
// HTTP like Core would drive it (docs/suspend-resume.md). The operator plays Core through the
// embedded-only admin routes of the RuntimeCore stand-in (http/routes/admin-runtime-core.ts:
// operations, saved evidence, state moves, Runtime registration) and of the Events stand-in (the
// acknowledged configuration); the user's token makes every Environment call: resolve, flush,
// placement release, resume prepare, verify and bootstrap. The content proof the new Host computes
// must be the tree hash the flush receipt named, and the bootstrapped Host must have been given
// exactly the acknowledged configuration, or the demo fails.
import { randomBytes } from 'node:crypto';
import { canonicalJson, sha256Hex } from '../lib/canonical-json.ts';
import { DemoError, pad, waitFor, type Client, type Out } from './demo-client.ts';

export interface SuspendResumeDemo {
  client: Client;
  out: Out;
  operator: string;
  user: string;
  tenant: string;
  project: string;
  runId: string;
  environmentId: string;
  /** `api/projects/…/environments/{id}`: the demo's Environment, with an Active lease. */
  env: string;
  /** The idempotency key the demo created its Workspace volume with: a repeat reads it as it is now. */
  volumeKey: string;
  timeoutMs: number;
}

/** The Environment's lifecycle generation after the resume: the demo's release must name it. */
export interface SuspendResumeResult {
  lifecycleGeneration: number;
}

interface Operation {
  ref: Record<string, string>;
  operationId: string;
  kind: 'suspend' | 'resume';
  state: string;
  stateRevision: number;
  placement: { leaseOperationId: string; resourceGeneration: number; providerFence: number };
  workspace: { volumeId: string; transitionRevision: number };
  requireReleaseCurrent: boolean;
}

interface Flush {
  flushOperationId: string;
  state: string;
  transitionRevision: number;
  dataGeneration: number;
  nextDataGeneration: number;
  hostReceiptSha256: string;
  receipt: {
    flush: { treeHash: string; fileCount: number; byteCount: number };
    cache: { cacheSha256: string };
  };
}

interface Restored {
  lifecycleGeneration: number;
  lease: { operationId: string; lifecycleGeneration: number; resourceId: string };
  workspace: { volumeId: string; state: string; transitionRevision: number; dataGeneration: number };
  networkPolicyGeneration: number;
}

const STEP = 'agent_1';
const SESSION = 'session-1';
const short = (hash: string) => `${hash.slice(0, 12)}…`;
const files = (n: number) => `${n} file${n === 1 ? '' : 's'}`;

export async function suspendResumeDemo(d: SuspendResumeDemo): Promise<SuspendResumeResult> {
  const { client, out, operator, user } = d;
  out.line('');
  out.line('Suspend and resume (Core played by the embedded stand-in, as the operator):');

  const { lease } = (
    await client.call<{
      lease: {
        operationId: string;
        resourceGeneration: number;
        providerFence: number;
        lifecycleGeneration: number;
        networkPolicyGeneration: number;
        state: string;
      };
    }>('read sandbox', 'GET', `${d.env}/sandbox`, user)
  ).body;
  if (lease.state !== 'Active') throw new DemoError(`suspend: the lease is ${lease.state}, not Active`);
  const volume = (
    await client.call<{
      volumeId: string;
      dataGeneration: number;
      transitionRevision: number;
      state: string;
    }>('read workspace', 'POST', `${d.env}/workspace-volumes`, user, { idempotencyKey: d.volumeKey })
  ).body;
  const placement = {
    leaseOperationId: lease.operationId,
    resourceGeneration: lease.resourceGeneration,
    providerFence: lease.providerFence,
  };
  const ref = {
    tenantId: d.tenant,
    projectId: d.project,
    runId: d.runId,
    stepId: STEP,
    environmentId: d.environmentId,
  };
  const step = `admin/tenants/${d.tenant}/projects/${d.project}/runs/${d.runId}/core/runtime/steps/${STEP}/environments/${d.environmentId}`;
  const suffix = randomBytes(3).toString('hex');

  /** Core reserves an operation; answered as Core holds it (Reserved, state revision 1). */
  const reserve = async (
    operationId: string,
    terms: Omit<Operation, 'ref' | 'operationId' | 'state' | 'stateRevision'>,
  ): Promise<Operation> => {
    await client.call('Core operation', 'PUT', `${step}/operations/${operationId}`, operator, terms);
    return { ref, operationId, ...terms, state: 'reserved', stateRevision: 1 };
  };
  /** Core moves its operation on from the revision it holds; answered as Core now holds it. */
  const move = async (operation: Operation, to: string): Promise<Operation> => {
    const moved = await client.call<{ state: string; stateRevision: number }>(
      `Core ${to}`,
      'POST',
      `${step}/operations/${operation.operationId}/state`,
      operator,
      { fromRevision: operation.stateRevision, to },
    );
    return { ...operation, state: moved.body.state, stateRevision: moved.body.stateRevision };
  };
  const saveEvidence = (operationId: string, evidence: Record<string, unknown>) =>
    client.call(
      'Core evidence',
      'PUT',
      `${step}/operations/${operationId}/saved-evidence`,
      operator,
      evidence,
    );

  // Suspend: Core reserves, Environment resolves, Core fences, Environment flushes.
  const suspendId = `op-suspend-${suffix}`;
  let suspend = await reserve(suspendId, {
    kind: 'suspend',
    placement,
    workspace: { volumeId: volume.volumeId, transitionRevision: volume.transitionRevision },
    requireReleaseCurrent: true,
  });
  const registrationId = `reg-${suffix}`;
  await client.call('Runtime registration', 'PUT', `${step}/registrations/${registrationId}`, operator, {
    profileId: 'demo-profile',
    sessionId: SESSION,
    generation: 1,
  });
  out.line(
    `✓ Core reserved ${suspendId} (step ${STEP}) for lease ${lease.operationId} ` +
      `(generation ${lease.resourceGeneration}, fence ${lease.providerFence}), Runtime ${registrationId} generation 1`,
  );

  const resolved = (
    await client.call<{
      storage: { providerId: string; pvc: { namespace: string; name: string } };
      transitionRevision: number;
      dataGeneration: number;
      nextDataGeneration: number;
    }>('suspend resolve', 'POST', 'internal/runtime/suspend/resolve', user, {
      operation: suspend,
      session: { registrationId, sessionId: SESSION, generation: 1 },
    })
  ).body;
  const { pvc } = resolved.storage;
  out.line(
    `✓ resolved: storage ${resolved.storage.providerId} ${pvc.namespace}/${pvc.name}, transition revision ` +
      `${resolved.transitionRevision}, data generation ${resolved.dataGeneration} → next ${resolved.nextDataGeneration}`,
  );
  suspend = await move(suspend, 'fenced');

  const { flush } = (
    await client.call<{ flush: Flush }>(
      'flush',
      'POST',
      `${d.env}/workspace-volumes/${volume.volumeId}/flush`,
      user,
      {
        stepId: STEP,
        operationId: suspendId,
        transitionRevision: resolved.transitionRevision,
        nextDataGeneration: resolved.nextDataGeneration,
      },
    )
  ).body;
  if (flush.state !== 'Verified') throw new DemoError(`flush: ${flush.state}, not Verified`);
  const tree = flush.receipt.flush;
  out.line(
    `✓ flush ${flush.flushOperationId} Verified: tree ${short(tree.treeHash)} (${files(tree.fileCount)}, ` +
      `${tree.byteCount} bytes), data generation ${flush.dataGeneration} → ${flush.nextDataGeneration}, ` +
      `host receipt sha256 ${short(flush.hostReceiptSha256)}`,
  );

  // Core's manifest of the suspended state: committed now, and the one the resume restores.
  // Events keeps the session's acknowledged server configuration; the manifest names it.
  const configurationBytes = Buffer.from(`{"session":"${SESSION}","model":"demo","tools":["shell"]}\n`);
  const stored = await client.raw(
    'Events configuration',
    'PUT',
    `${step}/sessions/${SESSION}/events/evt-config-${suffix}/protected-material/obj-config-${suffix}`,
    operator,
    configurationBytes,
  );
  if (stored.status !== 201) throw new DemoError(`Events configuration: ${stored.problem}`);
  const acknowledgment = JSON.parse(stored.bytes.toString('utf8')) as { sha256: string; length: number };
  const manifest = {
    source: {
      ...placement,
      lifecycleGeneration: lease.lifecycleGeneration,
      networkPolicyGeneration: lease.networkPolicyGeneration,
    },
    workspace: {
      volumeId: volume.volumeId,
      transitionRevision: flush.transitionRevision,
      dataGeneration: flush.nextDataGeneration,
      treeHash: tree.treeHash,
      fileCount: tree.fileCount,
      byteCount: tree.byteCount,
    },
    hostReceiptSha256: flush.hostReceiptSha256,
    configuration: {
      sessionId: SESSION,
      eventId: `evt-config-${suffix}`,
      objectReference: `obj-config-${suffix}`,
      sha256: acknowledgment.sha256,
      length: acknowledgment.length,
    },
  };
  const evidence = {
    transitionRevision: flush.transitionRevision,
    dataGeneration: flush.nextDataGeneration,
    hostReceiptSha256: flush.hostReceiptSha256,
    manifestSha256: sha256Hex(canonicalJson(manifest)),
  };
  await saveEvidence(suspendId, evidence);
  suspend = await move(suspend, 'committed');
  out.line(`✓ Core saved the evidence and committed manifest sha256 ${short(evidence.manifestSha256)}`);

  const releaseStarted = Date.now();
  const released = await waitFor(
    out,
    'placement',
    d.timeoutMs,
    async () =>
      (
        await client.call<{
          state: string;
          workspace: { state: string; transitionRevision: number; dataGeneration: number };
        }>('release placement', 'POST', 'internal/runtime/suspend/release-placement', user, {
          operation: suspend,
          evidence,
        })
      ).body,
    (r) => ({
      text: `${pad(r.state, 10)} Workspace ${r.workspace.state}`,
      key: `${r.state}/${r.workspace.state}`,
    }),
    (r) => r.state === 'Released',
    () => null,
    releaseStarted,
  );
  out.line(
    `✓ placement Released: lease ${lease.operationId}; Workspace ${released.workspace.state} at data ` +
      `generation ${released.workspace.dataGeneration} (transition revision ${released.workspace.transitionRevision})`,
  );
  suspend = await move(suspend, 'completed');
  out.line(`✓ Core completed ${suspendId}`);

  // Resume: Core reserves, saves the evidence of the same manifest, fences; prepare, then verify.
  const resumeId = `op-resume-${suffix}`;
  let resume = await reserve(resumeId, {
    kind: 'resume',
    placement,
    workspace: { volumeId: volume.volumeId, transitionRevision: flush.transitionRevision },
    requireReleaseCurrent: false,
  });
  await saveEvidence(resumeId, evidence);
  resume = await move(resume, 'fenced');
  out.line(`✓ Core reserved ${resumeId}, saved its evidence and fenced it`);

  const request = {
    operation: resume,
    manifest,
    hostReceiptSha256: flush.hostReceiptSha256,
    transitionRevision: flush.transitionRevision,
  };
  const prepareStarted = Date.now();
  const prepared = await waitFor(
    out,
    'resume',
    d.timeoutMs,
    async () =>
      (
        await client.call<{ state: string; restoredWorkspace?: Restored }>(
          'resume prepare',
          'POST',
          'internal/runtime/resume/prepare',
          user,
          request,
        )
      ).body,
    (p) => ({ text: p.state, key: p.state }),
    (p) => p.state === 'Prepared',
    () => null,
    prepareStarted,
  );
  const restored = prepared.restoredWorkspace;
  if (restored === undefined) throw new DemoError('resume prepare: Prepared without a restored Workspace');
  out.line(
    `✓ Prepared: lease ${restored.lease.operationId} on ${restored.lease.resourceId}, lifecycle generation ` +
      `${lease.lifecycleGeneration} → ${restored.lifecycleGeneration}, network generation ` +
      `${lease.networkPolicyGeneration} → ${restored.networkPolicyGeneration}, Workspace ` +
      `${restored.workspace.state} at data generation ${restored.workspace.dataGeneration}`,
  );

  const verified = (
    await client.call<{ contentProof: { treeHash: string; fileCount: number; byteCount: number } }>(
      'resume verify',
      'POST',
      'internal/runtime/resume/verify',
      user,
      { ...request, restoredWorkspace: restored },
    )
  ).body;
  const proof = verified.contentProof;
  if (proof.treeHash !== tree.treeHash)
    throw new DemoError(
      `resume verify: the new Host's tree hash ${proof.treeHash} is not the flushed ${tree.treeHash}`,
    );
  out.line(
    `✓ verified: the new Host hashes ${short(proof.treeHash)} (${files(proof.fileCount)}, ` +
      `${proof.byteCount} bytes), equal to the flush receipt's tree hash`,
  );

  // Phase 4: Core advances its execution fence, registers the new Runtime, and asks for bootstrap.
  resume = await move(resume, 'committed');
  const runtimeId = `reg-${suffix}-g2`;
  await client.call('Runtime registration', 'PUT', `${step}/registrations/${runtimeId}`, operator, {
    profileId: 'demo-profile',
    sessionId: SESSION,
    generation: 2,
  });
  out.line(`✓ Core committed ${resumeId} and registered Runtime ${runtimeId} generation 2`);
  const registration = {
    registrationId: runtimeId,
    profileId: 'demo-profile',
    sessionId: SESSION,
    generation: 2,
  };
  const started = (
    await client.call<{
      outcome: string;
      attempt: { attemptId: string; attemptSeq: number; deliveries: number };
      receipt: { configurationSha256: string; recovery: { mode: string; cacheSha256?: string } };
    }>('resume bootstrap', 'POST', 'internal/runtime/resume/bootstrap', user, {
      ...request,
      operation: resume,
      restoredWorkspace: restored,
      phase: 4,
      registration,
    })
  ).body;
  if (started.outcome !== 'Activated') throw new DemoError(`resume bootstrap: ${started.outcome}`);
  if (started.receipt.configurationSha256 !== acknowledgment.sha256)
    throw new DemoError('resume bootstrap: the Host was given another configuration than acknowledged');
  const flushedCache = flush.receipt.cache.cacheSha256;
  out.line(
    `✓ bootstrapped: attempt ${started.attempt.attemptSeq} (${started.attempt.attemptId}) Activated after ` +
      `${started.attempt.deliveries} delivery, configuration sha256 ${short(acknowledgment.sha256)}, recovery ` +
      `${started.receipt.recovery.mode}` +
      (started.receipt.recovery.cacheSha256 === undefined
        ? ''
        : ` (cache ${short(started.receipt.recovery.cacheSha256)}${started.receipt.recovery.cacheSha256 === flushedCache ? ', the flushed one' : ''})`),
  );

  out.line('');
  out.line(`  ${pad('', 10)} ${pad('lease', 36)} ${pad('data gen', 9)} ${pad('lifecycle', 10)} tree hash`);
  out.line(
    `  ${pad('suspended', 10)} ${pad(lease.operationId, 36)} ${pad(String(flush.nextDataGeneration), 9)} ` +
      `${pad(String(lease.lifecycleGeneration), 10)} ${short(tree.treeHash)}`,
  );
  out.line(
    `  ${pad('resumed', 10)} ${pad(restored.lease.operationId, 36)} ${pad(String(restored.workspace.dataGeneration), 9)} ` +
      `${pad(String(restored.lifecycleGeneration), 10)} ${short(proof.treeHash)}`,
  );
  return { lifecycleGeneration: restored.lifecycleGeneration };
}
