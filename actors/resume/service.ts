// Resume of a retained Workspace (docs/suspend-resume.md "Resume"): prepare makes the new placement
// (lifecycle generation advanced once, the same accepted network rules at the next generation, a new
// Sandbox on the retained volume at its flushed data generation, the mount checked), and verify
// proves the content (the new Host's read-only Workspace resume answers a content proof whose tree
// hash equals the manifest's) and the new network generation.
//
// Both need the private configuration acknowledgment before anything else, keep the original actor,
// and ask Core to confirm the exact saved operation before relying on it; fresh authority is asked
// before and after every await and inside every owner transaction before it commits. A historical
// fact (the source lease, its flush) is read only to check the manifest: it never authorizes a
// change of current state on its own.
import type { EnvironmentEvent } from '../../machines/environment-events.ts';
import type { EnvironmentContext } from '../../machines/environment-context.ts';
import type { Database, Queryable } from '../../store/db.ts';
import { readLeaseByOperation, type LeaseRow } from '../../store/leases.ts';
import { readVerifiedFlush } from '../../store/workspace-flushes.ts';
import { countUnresolvedAttempts } from '../../store/resume-bootstrap-attempts.ts';
import { readVolume, type VolumeRow } from '../../store/workspaces.ts';
import { checkedBeforeCommit, type Guard, type AuthorityDeps } from '../guard.ts';
import type { EnvironmentAddress } from '../owned.ts';
import type { NetworkPolicyWriter } from '../sandbox/network-policy-writer.ts';
import type { AgentHost, NetworkPolicyVerifier, RuntimeCore, RuntimeOperation } from '../ports.ts';
import type { ActorRuntime } from '../runtime.ts';
import { recordedRequestOf } from '../sandbox/readiness.ts';
import type { SandboxService } from '../sandbox/service.ts';
import { openSuspendStep, type SuspendActor } from '../suspend/open.ts';
import { askCoreForResume } from './core-checks.ts';
import { ResumeRefusedError, refuseResumeOn } from './errors.ts';
import { observeRestored, restoredBindingOf, restoredOf } from './restored.ts';
import {
  resumeKeyOf,
  type RestoredWorkspace,
  type ResumePrepareRequest,
  type ResumeReceipt,
  type ResumeVerifyRequest,
} from './requests.ts';

export interface ResumeDeps extends AuthorityDeps {
  db: Database;
  runtime: ActorRuntime<EnvironmentEvent>;
  sandbox: SandboxService;
  agentHost: AgentHost;
  networkPolicies: NetworkPolicyVerifier;
  runtimeCore?: RuntimeCore;
  networkPolicyWriter?: NetworkPolicyWriter;
  /** Deadline of one Core, Host or network call, and of the wait for the new Sandbox (default 30 s). */
  callTimeoutMs?: number;
}

/** Prepare's answer: the placement (Provisioning until the new Sandbox is Active: ask again). */
export type ResumePreparation =
  | { state: 'Prepared'; restoredWorkspace: RestoredWorkspace }
  | { state: 'Provisioning'; operationId: string; lifecycleGeneration: number; leaseOperationId: string };

export class ResumeService {
  constructor(private readonly deps: ResumeDeps) {}

  async prepare(actor: SuspendActor, request: ResumePrepareRequest): Promise<ResumePreparation> {
    admitted(request, 'prepare');
    const { guard, operation } = await this.#open(actor, request);
    const { manifest } = request;
    const key = resumeKeyOf(operation.operationId);
    const { ref } = operation;

    // The recorded flush, the released source and the retained volume, judged on owner facts; then
    // the lifecycle advance, once under the resume's key (a replay finds it done).
    const { sent } = await this.deps.runtime.step(
      ref.environmentId,
      async (tx, row) => {
        const context = (row.snapshot as { context: EnvironmentContext }).context;
        const done = context.advances[key];
        await this.#judgeSource(tx, request, done !== undefined);
        if (done !== undefined) return { event: null, value: null };
        // An earlier resume's bootstrap attempt without an outcome blocks the advance: its Host
        // may still be starting a Runtime on a lease of the generation this would leave behind.
        const unresolved = await countUnresolvedAttempts(tx, ref.environmentId);
        if (unresolved > 0) {
          throw new ResumeRefusedError(
            'resume-attempt-unresolved',
            `${unresolved} resume bootstrap attempt(s) of this Environment have no outcome yet; bootstrap them again first`,
          );
        }
        if (context.lifecycleGeneration !== manifest.source.lifecycleGeneration) {
          throw new ResumeRefusedError(
            'resume-lifecycle-moved',
            `the Environment is at lifecycle generation ${context.lifecycleGeneration}; the manifest's source lease is at ${manifest.source.lifecycleGeneration}`,
          );
        }
        const event: EnvironmentEvent = {
          type: 'environment.advance',
          operationKey: key,
          expectedLifecycleGeneration: manifest.source.lifecycleGeneration,
        };
        return { event, value: null };
      },
      // Core's operation afresh once the owner's lock and reads are behind it, then authority.
      checkedBeforeCommit(guard.commit(ref.runId), (tx) => this.#askCore(guard, actor, request, tx)),
    );
    if (sent !== null && !sent.accepted) {
      throw new ResumeRefusedError(
        'resume-lifecycle-moved',
        'the lifecycle generation cannot advance now: a lease is current or something is unresolved',
      );
    }

    // The same accepted rules at the source generation plus one (idempotent on a replay).
    const from = manifest.source.networkPolicyGeneration;
    const writer = this.deps.networkPolicyWriter;
    if (writer === undefined) {
      throw new ResumeRefusedError(
        'resume-network-refused',
        'no network policy owner is configured to write',
      );
    }
    const applied = await guard.after(() =>
      writer.reapply(ref.tenantId, ref.projectId, from, from + 1, this.#signal()),
    );
    if (applied.outcome === 'refused') {
      throw new ResumeRefusedError(
        'resume-network-refused',
        `the network rules of generation ${from} were not applied at ${from + 1}: ${applied.reason}`,
      );
    }

    // The new Sandbox on the retained volume at its flushed data generation (idempotent on the key).
    const source = await readLeaseByOperation(this.deps.db, manifest.source.leaseOperationId);
    const mount = source === null ? null : recordedRequestOf(source)?.workspace;
    const volume = await readVolume(this.deps.db, manifest.workspace.volumeId);
    if (mount == null || volume === null) throw new Error('the resume source vanished after its checks');
    const address = { projectId: ref.projectId, runId: ref.runId, environmentId: ref.environmentId };
    const lease = await this.deps.sandbox.provision(actor.caller, address, {
      idempotencyKey: key,
      workspace: {
        volumeId: volume.volumeId,
        resourceGeneration: volume.resourceGeneration,
        dataGeneration: manifest.workspace.dataGeneration,
        mountPath: mount.mountPath,
        readOnly: mount.readOnly,
      },
      networkPolicyGeneration: from + 1,
    });
    const active = await this.#waitStarted(actor, address, lease.operationId);
    await guard.check();
    if (active === null) {
      const row = await readLeaseByOperation(this.deps.db, lease.operationId);
      return {
        state: 'Provisioning',
        operationId: operation.operationId,
        lifecycleGeneration: row?.lifecycleGeneration ?? manifest.source.lifecycleGeneration + 1,
        leaseOperationId: lease.operationId,
      };
    }
    const restored = await restoredOf(this.deps.db, operation, active, manifest.workspace.dataGeneration);
    await guard.check();
    return { state: 'Prepared', restoredWorkspace: restored };
  }

  async verify(actor: SuspendActor, request: ResumeVerifyRequest): Promise<ResumeReceipt> {
    admitted(request, 'verify');
    const { guard, operation } = await this.#open(actor, request);
    const { manifest, restoredWorkspace: saved } = request;
    const { ref } = operation;

    // A fresh owner-scoped observation of the mount and the Sandbox must be exactly what prepare saved.
    const dataGeneration = manifest.workspace.dataGeneration;
    const placed = (q: Queryable) => observeRestored(q, operation, saved, dataGeneration);
    const lease = await guard.after(() => placed(this.deps.db));

    // The new Host's read-only Workspace resume: its content proof's tree hash must be the manifest's.
    const { contentProof } = await guard.after(() =>
      this.deps.agentHost.workspaceResume(
        restoredBindingOf(lease, saved),
        { resumeOperationId: operation.operationId },
        this.#signal(),
      ),
    );
    if (contentProof.treeHash !== manifest.workspace.treeHash) {
      throw new ResumeRefusedError(
        'resume-tree-hash-mismatch',
        `the restored Workspace hashes to ${contentProof.treeHash}; the manifest says ${manifest.workspace.treeHash}`,
      );
    }

    // Then the placement, the network object and Core's current operation once more.
    const network = await this.deps.networkPolicies.verify(
      ref.tenantId,
      ref.projectId,
      saved.networkPolicyGeneration,
      lease,
    );
    if (!network.verified) {
      throw new ResumeRefusedError(
        'resume-network-refused',
        `network policy generation ${saved.networkPolicyGeneration} is not in force: ${network.reason}`,
      );
    }
    await this.#askCore(guard, actor, request);
    await guard.after(() => placed(this.deps.db));
    return {
      operationId: operation.operationId,
      restoredWorkspace: saved,
      contentProof: {
        treeHash: contentProof.treeHash,
        fileCount: contentProof.fileCount,
        byteCount: contentProof.byteCount,
        computedAt: contentProof.computedAt,
      },
      networkPolicyGeneration: saved.networkPolicyGeneration,
      verifiedAt: new Date().toISOString(),
    };
  }

  /** The caller's own Environment, Core's exact Fenced resume operation, and its saved evidence. */
  async #open(actor: SuspendActor, request: ResumePrepareRequest) {
    const { guard } = await openSuspendStep(this.deps, actor, request.operation.ref);
    const operation = await this.#askCore(guard, actor, request);
    return { guard, operation };
  }

  async #askCore(
    guard: Guard,
    actor: SuspendActor,
    request: ResumePrepareRequest,
    via?: Queryable,
  ): Promise<RuntimeOperation> {
    const signal = () => this.#signal();
    const core = this.deps.runtimeCore;
    return (await askCoreForResume(guard, core, actor, request, 'fenced', signal, via)).operation;
  }

  /** The recorded flush, the released source Sandbox and the retained volume match the manifest. */
  async #judgeSource(tx: Queryable, request: ResumePrepareRequest, replay: boolean): Promise<void> {
    const { manifest, operation } = request;
    const { source, workspace } = manifest;
    const lease = await readLeaseByOperation(tx, source.leaseOperationId);
    const recorded = lease === null ? null : recordedRequestOf(lease);
    refuseResumeOn(
      'resume-source-mismatch',
      lease === null || lease.environmentId !== operation.ref.environmentId
        ? `lease ${source.leaseOperationId} is not this Environment's`
        : lease.state !== 'Released'
          ? `the source lease ${lease.operationId} is ${lease.state}, not Released`
          : lease.lifecycleGeneration !== source.lifecycleGeneration ||
              lease.resourceGeneration !== source.resourceGeneration ||
              lease.providerFence !== source.providerFence
            ? `the source lease ${lease.operationId} has other generations than the manifest`
            : recorded?.networkPolicyGeneration !== source.networkPolicyGeneration
              ? `the source lease recorded network policy generation ${recorded?.networkPolicyGeneration ?? '(none)'}, not the manifest's ${source.networkPolicyGeneration}`
              : operation.placement.leaseOperationId !== lease.operationId ||
                  operation.workspace.volumeId !== workspace.volumeId
                ? `Core's resume operation is about another source lease or volume`
                : null,
    );
    const flush = await readVerifiedFlush(tx, workspace.volumeId, request.transitionRevision);
    refuseResumeOn(
      'resume-flush-evidence-mismatch',
      flush === null
        ? `no verified flush of volume ${workspace.volumeId} at transition revision ${request.transitionRevision}`
        : flush.environmentId !== operation.ref.environmentId ||
            flush.leaseOperationId !== source.leaseOperationId ||
            flush.receiptSha256 !== request.hostReceiptSha256 ||
            flush.receiptSha256 !== manifest.hostReceiptSha256 ||
            flush.transitionRevision !== workspace.transitionRevision ||
            flush.dataGeneration + 1 !== workspace.dataGeneration ||
            treeHashOf(flush.receipt) !== workspace.treeHash
          ? `the verified flush of volume ${workspace.volumeId} is not the manifest's (lease, receipt, revision, generation or tree hash)`
          : null,
    );
    const volume = await readVolume(tx, workspace.volumeId);
    refuseResumeOn('resume-source-mismatch', retainedProblem(volume, workspace.dataGeneration, replay));
  }

  /**
   * Polls the new lease until it is Active and its Pod started (observed afresh through the lease
   * inspection: the mount is in use), or null at the deadline (the workers provision it).
   */
  async #waitStarted(
    actor: SuspendActor,
    address: EnvironmentAddress,
    operationId: string,
  ): Promise<LeaseRow | null> {
    const until = Date.now() + (this.deps.callTimeoutMs ?? 30_000);
    for (;;) {
      const lease = await readLeaseByOperation(this.deps.db, operationId);
      if (lease?.state === 'Active' && lease.resource?.phase === 'started') return lease;
      if (lease?.state === 'Active') await this.deps.sandbox.inspect(actor.caller, address, undefined);
      if (lease === null || ['Released', 'Failed'].includes(lease.state)) {
        throw new ResumeRefusedError(
          'resume-placement-mismatch',
          `the new lease ${operationId} is ${lease?.state ?? 'gone'}; the resume cannot use it`,
        );
      }
      if (Date.now() >= until) return null;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  #signal(): AbortSignal {
    return AbortSignal.timeout(this.deps.callTimeoutMs ?? 30_000);
  }
}

/** Checked before any owner call or effect: what the request alone cannot authorize. */
function admitted(request: ResumePrepareRequest, step: 'prepare' | 'verify'): void {
  if (request.manifest.configuration === null) {
    throw new ResumeRefusedError(
      'resume-configuration-missing',
      'the manifest carries no saved configuration acknowledgment: it cannot authorize a resume',
    );
  }
  if (step === 'prepare' && request.restoredWorkspace !== undefined) {
    throw new ResumeRefusedError(
      'resume-restored-workspace-present',
      'prepare takes no restoredWorkspace: it is what prepare answers',
    );
  }
}

/** The retained volume: Available at the flushed generation (or, on a replay, already re-attached). */
function retainedProblem(volume: VolumeRow | null, dataGeneration: number, replay: boolean): string | null {
  if (volume === null) return 'the retained volume does not exist';
  if (volume.dataGeneration !== dataGeneration) {
    return `volume ${volume.volumeId} is at data generation ${volume.dataGeneration}, not the flushed ${dataGeneration}`;
  }
  if (volume.state !== 'Available' && !replay)
    return `volume ${volume.volumeId} is ${volume.state}, not retained`;
  return null;
}

const treeHashOf = (receipt: Record<string, unknown> | null): string | null => {
  const flush = receipt?.['flush'];
  return typeof flush === 'object' &&
    flush !== null &&
    'treeHash' in flush &&
    typeof flush.treeHash === 'string'
    ? flush.treeHash
    : null;
};
