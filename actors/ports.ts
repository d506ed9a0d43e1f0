// Ports for services Sandlot does not own. Each has an embedded implementation backed by our own
// tables (store/) and, in production, a client of the real thing (an HTTP service, or for network
// policies the Kubernetes API). Implementations accept an optional `via` handle so a recheck made
// inside a transaction reads through that transaction; those that read no table ignore it.
import type { ProviderIdentity, ProviderOptionsSnapshot } from '../providers/provider.ts';
import type { AttemptRow } from '../store/attempts.ts';
import type { Queryable } from '../store/db.ts';
import type {
  AcceptedBuildTestCommand,
  BuildTestCheckpointRef,
  JournalAcknowledgment,
} from './build-test/accepted-command.ts';
import type { AgentHostActivationReceipt, AgentHostSessionState } from './agenthost/activation.ts';
import type { AgentHostFlushReceipt, AgentHostWorkspaceResume } from './agenthost/flush.ts';
import type {
  RuntimeOperation,
  RuntimeRegistration,
  RuntimeStepRef,
  SavedOperationEvidence,
  SavedOperationVerdict,
} from './runtime-core/runtime-operation.ts';

export type { AcceptedBuildTestCommand, BuildTestCheckpointRef, JournalAcknowledgment };

export const permissions = ['ReadProjects', 'WriteProjects', 'ReadRunSelection'] as const;
export type Permission = (typeof permissions)[number];

export interface Caller {
  tenantId: string;
  subject: string;
}

export interface ProjectsAuthority {
  /** The caller's current permissions on one project of its own tenant (empty when none). */
  permissions(caller: Caller, projectId: string, via?: Queryable): Promise<ReadonlySet<Permission>>;
}

/** A provider a run may use: what the provider advertises, and whether the run requires it alone. */
export interface ProviderCandidate extends ProviderIdentity {
  exclusive: boolean;
}

export interface RunSelection {
  tenantId: string;
  projectId: string;
  runId: string;
  candidates: ProviderCandidate[];
  /** SHA-256 of the canonical candidate list: what an Environment pins at registration. */
  selectionHash: string;
}

export interface RunSelectionSource {
  get(tenantId: string, projectId: string, runId: string, via?: Queryable): Promise<RunSelection | null>;
}

export type NetworkPolicyVerdict = { verified: true } | { verified: false; reason: string };

export interface NetworkPolicyVerifier {
  /**
   * Fresh verification that `generation` is the project's current network policy and is in force
   * where `lease` (what the lease records, or at admission is about to record) says its objects
   * live: `verified: false` with a reason when it is not, or when the source answers from elsewhere
   * (on Kubernetes, another cluster than the lease's pin). Throws when the source of truth cannot
   * answer (a failed or partial read), so an outage is never mistaken for a verdict either way.
   * Without `lease` (the dispatch check, which passes none yet) an implementation compares with
   * what a new lease of the configured provider records.
   */
  verify(
    tenantId: string,
    projectId: string,
    generation: number,
    lease?: LeaseProviderRecord,
    via?: Queryable,
  ): Promise<NetworkPolicyVerdict>;
}

/**
 * The one attempt runner (workers/), as use cases reach it: runs a committed attempt now, through
 * the same begin → provider call → complete path every queued attempt takes, and answers its row
 * once resolved, or as it stands when `timeoutMs` ran out (still Pending or Dispatched).
 */
export interface AttemptRunner {
  runNow(attemptId: string, timeoutMs: number): Promise<AttemptRow | null>;
}

/**
 * Where the AgentHost of one exact Pod answers: Sandlot connects to the observed Pod IP and
 * verifies TLS for the Service DNS name (never the IP), against the `service-backend-ca` root.
 */
export interface AgentHostEndpoint {
  podIp: string;
  podUid: string;
  /** The DNS name the Host's certificate must carry (its private Service's name). */
  serverName: string;
  port: number;
}

/** The exact lease an AgentHost is asked about. */
export interface AgentHostTarget {
  environmentId: string;
  operationId: string;
  resourceGeneration: number;
  providerFence: number;
  resourceId: string;
  /** Null where the provider has no network endpoint (the simulated provider). */
  endpoint: AgentHostEndpoint | null;
}

/**
 * What the Host reports of itself: whether it was configured (its authenticated configuration
 * handshake completed), and for which lease, Pod, Workspace mount, network generation and runtime
 * profile. Sandlot compares every binding with the lease; a Host configured for something else is
 * not configured.
 */
export type AgentHostReadiness =
  | { configured: false; reason: string }
  | {
      configured: true;
      environmentId: string;
      operationId: string;
      resourceGeneration: number;
      podUid: string | null;
      workspaceMountPath: string;
      networkPolicyGeneration: number;
      /** When the Host completed its configuration (ISO instant). */
      configuredAt: string;
      /**
       * The resolved runtime profile (`rp_…`) whose configure endpoint configured the Host, when it
       * names one: readiness then requires its stored mapping to be this lease's at its current
       * endpoint (actors/runtime-profiles/current.ts).
       */
      profileId?: string | undefined;
    };

/**
 * The exact binding a Workspace call names: the lease (as `AgentHostTarget`), its Pod, the Workspace
 * volume and data generation it holds, and its network generation. A Host holding anything else
 * refuses; a Host answer naming anything else is refused.
 */
export interface AgentHostWorkspaceBinding extends AgentHostTarget {
  /** Null where the provider has no Pod (the simulated provider). */
  podUid: string | null;
  workspaceVolumeId: string;
  /** The data generation the Workspace is at now; a verified flush moves it to this plus one. */
  dataGeneration: number;
  networkPolicyGeneration: number;
}

/** A flush's own identity: stable across retries, so a replay answers the saved receipt. */
export interface AgentHostFlushRequest {
  flushOperationId: string;
  /** The Workspace transition revision this flush is for. */
  transitionRevision: number;
}

export type { AgentHostFlushReceipt, AgentHostWorkspaceResume } from './agenthost/flush.ts';

/** Which resume a read-only Workspace resume read is for (Core's resume operation). */
export interface AgentHostWorkspaceResumeRequest {
  resumeOperationId: string;
}

/** One server-issued resume bootstrap attempt, as the Host is asked to start its Runtime with it. */
export interface AgentHostActivationRequest {
  resumeOperationId: string;
  /** Server-issued; stable across redeliveries of the same attempt. */
  attemptId: string;
  /** 1, 2, ... within one resume operation. */
  attemptSeq: number;
  /** Distinct per attempt. */
  bootstrapId: string;
  consumeId: string;
  exchangeId: string;
  /** Core's current Runtime registration. */
  registration: { registrationId: string; profileId: string; sessionId: string; generation: number };
  /** The acknowledged server configuration: exactly these bytes, whose SHA-256 is `sha256`. */
  configuration: { sha256: string; bytes: Uint8Array };
}

export type { AgentHostActivationReceipt, AgentHostSessionState } from './agenthost/activation.ts';

/** A `/health/live` probe's verdict; `live: false` names why (never a credential). */
export type LiveProbeResult = { live: true } | { live: false; code: string; message: string };

export interface AgentHost {
  /**
   * Fresh configuration and readiness evidence of the Host serving the exact target. Throws when
   * the Host cannot be asked (unreachable, bad TLS, bad answer): an outage is not a verdict.
   */
  readiness(target: AgentHostTarget, signal: AbortSignal): Promise<AgentHostReadiness>;
  /** One `/health/live` probe over a fresh connection (no pooling, no redirects, no credentials). */
  probeLive(endpoint: AgentHostEndpoint, signal: AbortSignal): Promise<LiveProbeResult>;
  /**
   * The trusted Workspace flush on the Host holding exactly `binding`: it stops and drains native
   * turns, writes its caches to the Workspace, and answers a receipt checked field by field (a
   * replay of the same flush operation answers the saved receipt). Throws
   * `AgentHostFlushRefusedError` for a refusal or any answer that does not match, and
   * `AgentHostUnavailableError` when the Host cannot be asked: then the outcome is unknown.
   */
  flush(
    binding: AgentHostWorkspaceBinding,
    request: AgentHostFlushRequest,
    signal: AbortSignal,
  ): Promise<AgentHostFlushReceipt>;
  /**
   * Read-only (`/runtime/v1/workspace/resume`): the native content proof of the Workspace the Host
   * holding exactly `binding` reads now for one resume, with its tree hash. Throws
   * `AgentHostWorkspaceResumeRefusedError` or `AgentHostUnavailableError` like `flush`.
   */
  workspaceResume(
    binding: AgentHostWorkspaceBinding,
    request: AgentHostWorkspaceResumeRequest,
    signal: AbortSignal,
  ): Promise<AgentHostWorkspaceResume>;
  /**
   * Starts the Runtime on the Host holding exactly `binding` with one resume attempt, and answers
   * its receipt checked field by field (a redelivery of the same attempt answers the saved
   * receipt). Throws `AgentHostActivationRefusedError` for a refusal (`session-active`,
   * `attempt-conflict`, ...) or an answer that does not match, and `AgentHostUnavailableError` when
   * the Host cannot be asked: then the outcome is unknown.
   */
  activate(
    binding: AgentHostWorkspaceBinding,
    request: AgentHostActivationRequest,
    signal: AbortSignal,
  ): Promise<AgentHostActivationReceipt>;
  /**
   * Read-only: whether the Host holding exactly `binding` has an Active session (and for which
   * attempt) or none (`Missing`). Throws like `activate`.
   */
  sessionState(binding: AgentHostWorkspaceBinding, signal: AbortSignal): Promise<AgentHostSessionState>;
}

/**
 * What a lease records of the provider it was admitted for (at admission: what the new lease is
 * about to record): its options snapshot, opaque here. A check made for the lease compares with
 * these, never with the running process's settings; on Kubernetes the snapshot holds the cluster
 * pin and the namespace the lease's objects live under.
 */
export interface LeaseProviderRecord {
  providerOptions: ProviderOptionsSnapshot;
}

/** A Workspace's storage provider and options revision: what a volume's storage is pinned to. */
export interface StorageSelection {
  providerId: string;
  optionsRevision: string;
}

/** The exact volume generation a provision names, and whose it is. */
export interface WorkspaceVolumeRef {
  tenantId: string;
  projectId: string;
  environmentId: string;
  volumeId: string;
  resourceGeneration: number;
  dataGeneration: number;
}

/** A claim as its PersistentVolume's `spec.claimRef` names it. */
export interface StorageClaimRef {
  namespace: string | null;
  name: string | null;
  uid: string | null;
}

/**
 * What storage actually holds for one volume, read back afresh: no verdict, just facts (null where
 * storage holds nothing). actors/workspace/storage.ts judges them against the Workspace record.
 */
export interface StorageEvidence {
  /**
   * Which cluster storage answers from, by pin, and which one the lease recorded; null for storage
   * in no cluster (the embedded table). When the two differ nothing was read, so the fields below
   * are null and say nothing: the check refuses on the cluster alone.
   */
  cluster: { recorded: string; live: string } | null;
  /** The storage selection the volume's claim was made under (null when it names none). */
  selection: StorageSelection | null;
  /** The Workspace PVC, or null when it does not exist. */
  pvc: {
    namespace: string;
    name: string;
    uid: string;
    /** The owner-generation annotations, verbatim (null when absent). */
    environmentId: string | null;
    resourceGeneration: string | null;
    dataGeneration: string | null;
    /** `status.phase` (`Bound` when bound). */
    phase: string | null;
    /** `spec.volumeName`: the bound PersistentVolume. */
    volumeName: string | null;
    deleting: boolean;
    /** SHA-256 of the canonical JSON of the claim's whole `spec`: its full claim specification. */
    claimSpecSha256: string;
  } | null;
  /** The PersistentVolume the PVC names, or null when it names none or it does not exist. */
  pv: {
    name: string;
    uid: string;
    claimRef: StorageClaimRef | null;
    /** `spec.mountOptions`, in order (empty when it names none). */
    mountOptions: readonly string[];
  } | null;
}

export interface WorkspaceStorage {
  /** The storage configured now: what a volume's first verified admission pins it to. */
  readonly selection: StorageSelection;
  /**
   * Fresh evidence of the volume's storage, read where the lease's objects live (its recorded
   * cluster and namespace). Throws when storage cannot be read (a failed call, a timeout, the
   * signal, a cluster identity that cannot be computed now): an outage is never a verdict, and
   * absence is only ever a null field.
   */
  inspect(
    volume: WorkspaceVolumeRef,
    lease: LeaseProviderRecord,
    signal: AbortSignal,
  ): Promise<StorageEvidence>;
}

/**
 * Who Core is asked for: the original actor of the BuildTest request, with the bearer it presented
 * and when that bearer expires. Core authorizes every call itself; an expired bearer is never sent.
 */
export interface CoreActor {
  tenantId: string;
  subject: string;
  bearer: string;
  expiresAt: Date;
}

export type AcknowledgmentVerdict = { verified: true } | { verified: false; reason: string };

/**
 * Core's BuildTest side (actors/build-test/; docs/build-test.md). Every method throws
 * CoreUnavailableError when Core cannot answer, CoreDeniedError when it refuses the actor (or the
 * bearer expired), and CoreAnswerRefusedError when its answer breaks the contract: none of these is
 * a verdict.
 */
export interface Core {
  /**
   * The immutable accepted command of a checkpoint, or null when Core has none the actor may see
   * (another tenant's checkpoint reads as none).
   */
  acceptedCommand(
    actor: CoreActor,
    checkpoint: BuildTestCheckpointRef,
    signal: AbortSignal,
  ): Promise<AcceptedBuildTestCommand | null>;
  /**
   * The version 2 seed bytes of `command`, exactly its bound length and SHA-256, after Core's
   * metadata was read again and found unchanged (CoreCommandChangedError otherwise). Version 1
   * has no seed (CoreAnswerRefusedError `no-seed`).
   */
  workspaceSeed(
    actor: CoreActor,
    command: AcceptedBuildTestCommand,
    signal: AbortSignal,
  ): Promise<Uint8Array>;
  /** Whether Core vouches for this exact Events journal acknowledgment of a capture. */
  verifyAcknowledgment(
    actor: CoreActor,
    acknowledgment: JournalAcknowledgment,
    signal: AbortSignal,
  ): Promise<AcknowledgmentVerdict>;
}

export type {
  RuntimeOperation,
  RuntimeRegistration,
  RuntimeStepRef,
  SavedOperationEvidence,
  SavedOperationVerdict,
};

/**
 * Core's suspend/resume side (actors/runtime-core/; docs/suspend-resume.md), asked with the same
 * `CoreActor` as `Core`. Every method throws CoreUnavailableError when Core cannot answer,
 * CoreDeniedError when it refuses the actor (or the bearer expired), and CoreAnswerRefusedError
 * when its answer breaks the contract (including one about another Environment, step or
 * operation): none of these is a verdict.
 */
export interface RuntimeCore {
  /**
   * Core's current suspend or resume operation for the Environment serving `ref` (Reserved, Fenced
   * or Committed), or null when there is none the actor may see (another tenant's reads as none).
   */
  currentRuntimeOperation(
    actor: CoreActor,
    ref: RuntimeStepRef,
    signal: AbortSignal,
    via?: Queryable,
  ): Promise<RuntimeOperation | null>;
  /**
   * Whether Core confirms `evidence` as the saved evidence of exactly `operation` as held (same
   * state revision, not abandoned): asked before a provider release or a resume step relies on it.
   */
  confirmSavedOperation(
    actor: CoreActor,
    operation: RuntimeOperation,
    evidence: SavedOperationEvidence,
    signal: AbortSignal,
    via?: Queryable,
  ): Promise<SavedOperationVerdict>;
  /** The current Runtime registration Core owns for the Environment serving `ref`, or null. */
  currentRuntimeRegistration(
    actor: CoreActor,
    ref: RuntimeStepRef,
    signal: AbortSignal,
    via?: Queryable,
  ): Promise<RuntimeRegistration | null>;
}
