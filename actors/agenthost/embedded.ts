// The embedded AgentHost: a stand-in for the Host inside a simulated (or fake-cluster) sandbox. It
// completes its configuration handshake from the lease's own record once the sandbox started, as
// a real Host configured from its launch profile would; tests turn that off and configure a Host
// explicitly (or wrongly) to see readiness refuse. It opens no connection and sees no credential.
//
// It also keeps a real Workspace tree on disk, one directory per Workspace volume under its state
// directory, so a flush and a later resume can be checked by content. A flush writes the Host's
// native cache into that tree, hashes it (actors/workspace/tree.ts) and records the receipt in its own
// table (migration 0016), so a replay of the same flush operation answers the saved receipt; the
// receipt names the session journal boundary the flush closed on (embedded-journal.ts).
// Its Host side (`hostFlush`, `hostWorkspaceResume`) answers as a Host would on the wire, so a
// stand-in HTTPS Host can serve it; its port side checks those answers exactly as the HTTPS client does.
//
// Resume activation and session state (`hostActivate`, `hostSessionState`) keep their logic in
// embedded-activation.ts, on their own table (migration 0021); the same levers apply.
import { createHash } from 'node:crypto';
import { mkdir, open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Queryable } from '../../store/db.ts';
import { readLeaseByOperation } from '../../store/leases.ts';
import {
  AgentHostActivationRefusedError,
  activationRequestBody,
  checkActivationReceipt,
  checkSessionState,
  type ActivationRequestBody,
  type AgentHostActivationReceipt,
  type AgentHostSessionState,
  type SessionStateRequestBody,
} from './activation.ts';
import {
  hostActivate,
  hostSessionState,
  loseSessions,
  type ActivationHostAnswer,
  type ActivationHostSide,
} from './embedded-activation.ts';
import { boundaryOfFlush } from './embedded-journal.ts';
import {
  AgentHostFlushRefusedError,
  AgentHostUnavailableError,
  AgentHostWorkspaceResumeRefusedError,
  bindingDifference,
  checkFlushReceipt,
  checkWorkspaceResume,
  hostBindingOf,
  hostBindingSchema,
  type AgentHostFlushReceipt,
  type AgentHostWorkspaceResume,
  type FlushRequestBody,
  type HostBinding,
  type HostRefusalCode,
  type WorkspaceResumeRequestBody,
} from './flush.ts';
import type {
  AgentHost,
  AgentHostActivationRequest,
  AgentHostFlushRequest,
  AgentHostReadiness,
  AgentHostTarget,
  AgentHostWorkspaceBinding,
  AgentHostWorkspaceResumeRequest,
  LiveProbeResult,
} from '../ports.ts';
import { hashWorkspaceTree, WorkspaceTreeRefusedError } from '../workspace/tree.ts';

type Configured = Extract<AgentHostReadiness, { configured: true }>;
/** What an explicit configuration may say differently from the lease (to test a wrong Host). */
export type HostConfiguration = Partial<Omit<Configured, 'configured'>>;

export interface EmbeddedAgentHostOptions {
  db: Queryable;
  /** Configure every Host as soon as its sandbox started (default true: embedded mode, the demo). */
  autoConfigure?: boolean;
  /** Where Workspace trees live, one directory per volume (default `<os tmpdir>/sandlot-agenthost`). */
  stateDir?: string;
}

/** What a Host answers on the wire: a body for 200, or its refusal for 409. */
export type HostAnswer =
  { status: 200; body: unknown } | { status: 409; body: { refused: HostRefusalCode; message: string } };

/** A test lever for the next Host call. */
type Interference =
  | { kind: 'fail' }
  | { kind: 'stall' }
  | { kind: 'unreachable' }
  | { kind: 'tamper'; change: (answer: Record<string, unknown>) => unknown };

const VOLUME_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
/** The Host's native cache inside the Workspace, written and synced by every flush. */
export const NATIVE_CACHE_PATH = '.agenthost/native-cache.json';

interface SavedFlush {
  request: FlushRequestBody;
  receipt: Record<string, unknown>;
}

export class EmbeddedAgentHost implements AgentHost {
  readonly #configured = new Map<string, HostConfiguration & { configuredAt: string }>();
  readonly #stateDir: string;
  #next: Interference | null = null;

  constructor(private readonly options: EmbeddedAgentHostOptions) {
    this.#stateDir = options.stateDir ?? join(tmpdir(), 'sandlot-agenthost');
  }

  /** The next flush answers that it could not flush (and records nothing). */
  failNextFlush(): void {
    this.#next = { kind: 'fail' };
  }

  /** The next Host answer (flush, Workspace resume, activation, session state) passes through `change` first. */
  tamperNextAnswer(change: (answer: Record<string, unknown>) => unknown): void {
    this.#next = { kind: 'tamper', change };
  }

  /** The next call (flush, Workspace resume, activation, session state) waits until the caller gives up. */
  stallNextCall(): void {
    this.#next = { kind: 'stall' };
  }

  /** The next call (flush, Workspace resume, activation, session state) cannot reach the Host. */
  dropNextCall(): void {
    this.#next = { kind: 'unreachable' };
  }

  /** The Host serving this lease forgets its sessions, as a restarted Host would: they read Missing. */
  async loseSession(lease: string | { operationId: string }): Promise<void> {
    await loseSessions(this.options.db, typeof lease === 'string' ? lease : lease.operationId);
  }

  /** Completes the handshake of the Host serving `operationId`, optionally for other bindings. */
  configure(operationId: string, configuration: HostConfiguration = {}): void {
    this.#configured.set(operationId, { configuredAt: new Date().toISOString(), ...configuration });
  }

  async readiness(target: AgentHostTarget, signal: AbortSignal): Promise<AgentHostReadiness> {
    signal.throwIfAborted();
    return this.#readinessOf(target.operationId);
  }

  async #readinessOf(operationId: string): Promise<AgentHostReadiness> {
    const lease = await readLeaseByOperation(this.options.db, operationId);
    if (lease?.resource?.phase !== 'started') {
      return { configured: false, reason: 'the Host has not started' };
    }
    const explicit = this.#configured.get(operationId);
    if (explicit === undefined && this.options.autoConfigure === false) {
      return { configured: false, reason: 'the Host has not completed its configuration handshake' };
    }
    return {
      configured: true,
      environmentId: lease.environmentId,
      operationId: lease.operationId,
      resourceGeneration: lease.resourceGeneration,
      podUid: lease.resource.placement['podUid'] ?? null,
      workspaceMountPath: lease.workspace.mountPath,
      networkPolicyGeneration: lease.networkPolicyGeneration,
      configuredAt: lease.updatedAt.toISOString(),
      ...explicit,
    };
  }

  probeLive(_endpoint: unknown, signal: AbortSignal): Promise<LiveProbeResult> {
    signal.throwIfAborted();
    return Promise.resolve({ live: true });
  }

  async flush(
    binding: AgentHostWorkspaceBinding,
    request: AgentHostFlushRequest,
    signal: AbortSignal,
  ): Promise<AgentHostFlushReceipt> {
    const body: FlushRequestBody = { binding: hostBindingOf(binding), ...request };
    const answer = await this.hostFlush(binding.operationId, body, signal);
    if (answer.status === 409) throw new AgentHostFlushRefusedError(answer.body.refused, 'the Host refused');
    return checkFlushReceipt(binding, request, answer.body);
  }

  async workspaceResume(
    binding: AgentHostWorkspaceBinding,
    request: AgentHostWorkspaceResumeRequest,
    signal: AbortSignal,
  ): Promise<AgentHostWorkspaceResume> {
    const body: WorkspaceResumeRequestBody = { binding: hostBindingOf(binding), ...request };
    const answer = await this.hostWorkspaceResume(binding.operationId, body, signal);
    if (answer.status === 409) {
      throw new AgentHostWorkspaceResumeRefusedError(answer.body.refused, 'the Host refused');
    }
    return checkWorkspaceResume(binding, request, answer.body);
  }

  async activate(
    binding: AgentHostWorkspaceBinding,
    request: AgentHostActivationRequest,
    signal: AbortSignal,
  ): Promise<AgentHostActivationReceipt> {
    const answer = await this.hostActivate(
      binding.operationId,
      activationRequestBody(binding, request),
      signal,
    );
    if (answer.status === 409) {
      throw new AgentHostActivationRefusedError(answer.body.refused, 'the Host refused');
    }
    return checkActivationReceipt(binding, request, answer.body);
  }

  async sessionState(
    binding: AgentHostWorkspaceBinding,
    signal: AbortSignal,
  ): Promise<AgentHostSessionState> {
    const answer = await this.hostSessionState(
      binding.operationId,
      { binding: hostBindingOf(binding) },
      signal,
    );
    if (answer.status === 409) {
      throw new AgentHostActivationRefusedError(answer.body.refused, 'the Host refused');
    }
    return checkSessionState(binding, answer.body);
  }

  /** The Host side of a resume activation on the Host serving `leaseOperationId`. */
  async hostActivate(
    leaseOperationId: string,
    asked: ActivationRequestBody,
    signal: AbortSignal,
  ): Promise<ActivationHostAnswer> {
    const interference = await this.#interfere(signal, 'activate');
    const change = interference?.kind === 'tamper' ? interference.change : undefined;
    return hostActivate(this.#activationSide(), leaseOperationId, asked, change);
  }

  /** The Host side of the read-only session state on the Host serving `leaseOperationId`. */
  async hostSessionState(
    leaseOperationId: string,
    asked: SessionStateRequestBody,
    signal: AbortSignal,
  ): Promise<ActivationHostAnswer> {
    const interference = await this.#interfere(signal, 'session-state');
    const change = interference?.kind === 'tamper' ? interference.change : undefined;
    return hostSessionState(this.#activationSide(), leaseOperationId, asked, change);
  }

  #activationSide(): ActivationHostSide {
    return {
      db: this.options.db,
      held: (leaseOperationId) => this.#held(leaseOperationId),
      workspaceDirectory: (volumeId) => this.workspaceDirectory(volumeId),
      nativeCachePath: NATIVE_CACHE_PATH,
    };
  }

  /** The Workspace directory of one volume, made on first use. */
  async workspaceDirectory(volumeId: string): Promise<string> {
    if (!VOLUME_ID.test(volumeId)) throw new TypeError('the Workspace volume ID is not a plain name');
    const dir = join(this.#stateDir, 'workspaces', volumeId);
    await mkdir(dir, { recursive: true });
    return dir;
  }

  /**
   * The Host side of a flush on the Host serving `leaseOperationId`: the saved receipt for a replay,
   * a refusal for a binding it does not hold, else drain (nothing to drain here), write and sync the
   * native cache into the Workspace, hash the tree and record the receipt before answering it.
   */
  async hostFlush(
    leaseOperationId: string,
    asked: FlushRequestBody,
    signal: AbortSignal,
  ): Promise<HostAnswer> {
    const interference = await this.#interfere(signal, 'flush');
    if (interference?.kind === 'fail') return refusal('flush-failed', 'the Host could not flush');
    const tamper = (receipt: Record<string, unknown>): HostAnswer => ({
      status: 200,
      body: interference?.kind === 'tamper' ? interference.change(structuredClone(receipt)) : receipt,
    });

    const saved = await this.#savedFlush(asked.flushOperationId);
    if (saved !== undefined) {
      return sameRequest(saved.request, asked)
        ? tamper(saved.receipt)
        : refusal('operation-conflict', 'this flush operation was asked with another request');
    }
    const held = await this.#held(leaseOperationId);
    if (typeof held === 'string') return refusal('not-configured', held);
    if (bindingDifference(asked.binding, held) !== undefined) {
      return refusal('binding-mismatch', 'the Host holds another binding');
    }

    const dir = await this.workspaceDirectory(held.workspaceVolumeId);
    const cache = Buffer.from(
      JSON.stringify({
        format: 'sandlot-embedded-native-cache-v1',
        binding: held,
        flush: asked.flushOperationId,
      }),
      'utf8',
    );
    const stoppedAt = new Date().toISOString();
    await writeSynced(join(dir, NATIVE_CACHE_PATH), cache);
    const writtenAt = new Date().toISOString();
    let digest;
    try {
      digest = await hashWorkspaceTree(dir);
    } catch (error) {
      if (error instanceof WorkspaceTreeRefusedError) return refusal('workspace-refused', error.message);
      throw error;
    }
    const cacheSha256 = sha256Hex(cache);
    // The session's journal boundary this flush closes on, after the volume's earlier flushes.
    const journal = await boundaryOfFlush(this.options.db, held.workspaceVolumeId, held.dataGeneration, {
      flushOperationId: asked.flushOperationId,
      cacheSha256,
    });
    const receipt: AgentHostFlushReceipt = {
      binding: held,
      nativeTurns: {
        flushOperationId: asked.flushOperationId,
        acceptingTurns: false,
        drainedTurns: 0,
        stoppedAt,
      },
      cache: {
        flushOperationId: asked.flushOperationId,
        durable: true,
        cacheSha256,
        cacheBytes: cache.length,
        writtenAt,
      },
      flush: {
        flushOperationId: asked.flushOperationId,
        transitionRevision: asked.transitionRevision,
        workspaceVolumeId: held.workspaceVolumeId,
        dataGeneration: held.dataGeneration,
        nextDataGeneration: held.dataGeneration + 1,
        ...digest,
        flushedAt: new Date().toISOString(),
      },
      journal,
    };
    const inserted = await this.options.db.query(
      `INSERT INTO embedded_agenthost_flushes (flush_operation_id, lease_operation_id, workspace_volume_id,
         transition_revision, data_generation, next_data_generation, tree_hash, request, receipt)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING`,
      [
        asked.flushOperationId,
        leaseOperationId,
        held.workspaceVolumeId,
        asked.transitionRevision,
        held.dataGeneration,
        held.dataGeneration + 1,
        digest.treeHash,
        JSON.stringify(asked),
        JSON.stringify(receipt),
      ],
    );
    if (inserted.rowCount === 1) return tamper(receipt);
    // A concurrent flush won: the same operation (a replay after all) or another one that already
    // advanced this generation (then the binding asked for is no longer held).
    const winner = await this.#savedFlush(asked.flushOperationId);
    if (winner !== undefined && sameRequest(winner.request, asked)) return tamper(winner.receipt);
    return refusal('binding-mismatch', 'another flush advanced this Workspace generation');
  }

  /**
   * The Host side of the read-only Workspace resume on the Host serving `leaseOperationId`: a
   * refusal for a binding it does not hold, else the content proof of its tree as it reads now.
   */
  async hostWorkspaceResume(
    leaseOperationId: string,
    asked: WorkspaceResumeRequestBody,
    signal: AbortSignal,
  ): Promise<HostAnswer> {
    const interference = await this.#interfere(signal, 'workspace-resume');
    const held = await this.#held(leaseOperationId);
    if (typeof held === 'string') return refusal('not-configured', held);
    if (bindingDifference(asked.binding, held) !== undefined) {
      return refusal('binding-mismatch', 'the Host holds another binding');
    }
    const dir = await this.workspaceDirectory(held.workspaceVolumeId);
    let digest;
    try {
      digest = await hashWorkspaceTree(dir);
    } catch (error) {
      if (error instanceof WorkspaceTreeRefusedError) return refusal('workspace-refused', error.message);
      throw error;
    }
    const answer: AgentHostWorkspaceResume = {
      binding: held,
      resumeOperationId: asked.resumeOperationId,
      contentProof: { ...digest, computedAt: new Date().toISOString() },
    };
    return { status: 200, body: interference?.kind === 'tamper' ? interference.change(answer) : answer };
  }

  /** Takes the pending lever: unreachable and stall throw here, the others are for the caller. */
  async #interfere(
    signal: AbortSignal,
    call: 'flush' | 'workspace-resume' | 'activate' | 'session-state',
  ): Promise<Interference | null> {
    signal.throwIfAborted();
    const next = this.#next;
    // A failed flush is a flush's lever only: a Workspace resume read in between leaves it pending.
    if (next?.kind === 'fail' && call !== 'flush') return null;
    this.#next = null;
    if (next?.kind === 'unreachable') {
      throw new AgentHostUnavailableError('unreachable', 'the Host did not answer');
    }
    if (next?.kind === 'stall') {
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
      throw new AgentHostUnavailableError('deadline-exceeded', 'the Host did not answer in time');
    }
    return next;
  }

  /** What the Host serving a lease holds now, or why it holds nothing it could flush. */
  async #held(leaseOperationId: string): Promise<HostBinding | string> {
    const readiness = await this.#readinessOf(leaseOperationId);
    if (!readiness.configured) return readiness.reason;
    const lease = await readLeaseByOperation(this.options.db, leaseOperationId);
    if (lease?.resource == null) return 'the Host has not started';
    const flushed = await this.options.db.query<{ next: number | null }>(
      `SELECT max(next_data_generation) AS next FROM embedded_agenthost_flushes WHERE lease_operation_id = $1`,
      [leaseOperationId],
    );
    return {
      environmentId: readiness.environmentId,
      operationId: readiness.operationId,
      resourceGeneration: readiness.resourceGeneration,
      providerFence: lease.providerFence,
      resourceId: lease.resource.resourceId,
      podUid: readiness.podUid,
      workspaceVolumeId: lease.workspace.volumeId,
      dataGeneration: flushed.rows[0]?.next ?? lease.workspace.dataGeneration,
      networkPolicyGeneration: readiness.networkPolicyGeneration,
    };
  }

  async #savedFlush(flushOperationId: string): Promise<SavedFlush | undefined> {
    const result = await this.options.db.query<SavedFlush>(
      `SELECT request, receipt FROM embedded_agenthost_flushes WHERE flush_operation_id = $1`,
      [flushOperationId],
    );
    return result.rows[0];
  }
}

function refusal(refused: HostRefusalCode, message: string): HostAnswer {
  return { status: 409, body: { refused, message } };
}

/** The same binding and flush identity (jsonb does not keep key order, so fields are compared). */
function sameRequest(saved: FlushRequestBody, asked: FlushRequestBody): boolean {
  const binding = hostBindingSchema.safeParse(saved.binding);
  return (
    binding.success &&
    bindingDifference(asked.binding, binding.data) === undefined &&
    saved.flushOperationId === asked.flushOperationId &&
    Number(saved.transitionRevision) === asked.transitionRevision
  );
}

function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Writes `bytes` at `path` and syncs it, so an acknowledged cache survives a crash. */
async function writeSynced(path: string, bytes: Uint8Array): Promise<void> {
  await mkdir(join(path, '..'), { recursive: true });
  const handle = await open(path, 'w');
  try {
    await handle.writeFile(bytes);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * The AgentHost of a provider whose Hosts Sandlot cannot reach (Agent Sandbox without the
 * `service-backend-ca` trust root configured): nothing can say a Host was configured, so readiness
 * stays Unknown and no lease is ever ready. Never a stand-in that would vouch for a real Pod.
 */
export class UnreachableAgentHost implements AgentHost {
  constructor(private readonly reason: string) {}

  readiness(): Promise<AgentHostReadiness> {
    return Promise.reject(new Error(this.reason));
  }

  probeLive(): Promise<LiveProbeResult> {
    return Promise.resolve({ live: false, code: 'agenthost-unconfigured', message: this.reason });
  }

  flush(): Promise<AgentHostFlushReceipt> {
    return Promise.reject(new AgentHostUnavailableError('agenthost-unconfigured', this.reason));
  }

  workspaceResume(): Promise<AgentHostWorkspaceResume> {
    return Promise.reject(new AgentHostUnavailableError('agenthost-unconfigured', this.reason));
  }

  activate(): Promise<AgentHostActivationReceipt> {
    return Promise.reject(new AgentHostUnavailableError('agenthost-unconfigured', this.reason));
  }

  sessionState(): Promise<AgentHostSessionState> {
    return Promise.reject(new AgentHostUnavailableError('agenthost-unconfigured', this.reason));
  }
}
