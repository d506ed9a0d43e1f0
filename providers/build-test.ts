// BuildTest on a leased sandbox, the provider's side: an optional capability beside SandboxProvider.
// A BuildTest operation runs one accepted command in a command Pod on the lease's exact writable
// Workspace volume, offline, and then (only after the command exited 0) a separate collector Pod
// with the trusted collector command and a read-only mount, which reads the whole prepared
// repository and seals the version 2 output document in its private state. Every call names the
// operation's binding; a repeat of a start answers the Pod it started, never a second one.
//
// The worker, never an implementation, fetches the version 2 seed from Core and hands the verified
// bytes in: an implementation never talks to Core, and never keeps seed bytes where the operation's
// JSON could carry them.
import type { CallOptions, ResourceRef, WorkspaceMount } from './provider.ts';

/** Which BuildTest operation a call is for: every Pod, receipt and document is bound to it. */
export interface BuildTestBinding {
  /** Core's stable operation ID of the accepted command (one per checkpoint). */
  operationId: string;
  /** The full checkpoint reference, as Core named it. */
  checkpoint: {
    tenantId: string;
    projectId: string;
    runId: string;
    stepId: string;
    checkpointId: string;
  };
  /** SHA-256 (hex) of the operation's canonical request: the collector echoes it in its receipt. */
  requestFingerprint: string;
  /** SHA-256 (hex) of the accepted command's canonical JSON. */
  acceptedCommandHash: string;
}

/** Where the operation runs: the current lease, exactly as its validated recovery record names it. */
export interface BuildTestPlacement {
  lease: ResourceRef;
  workspace: WorkspaceMount;
  networkPolicyGeneration: number;
}

/** The AcceptedBuildTestProfile the lease accepted (config/build-test-profile.ts), as data. */
export interface BuildTestProfileSnapshot {
  hash: string;
  images: { command: string; collector: string };
  resources: {
    command: { cpu: string; memory: string; ephemeralStorage: string };
    collector: { cpu: string; memory: string; ephemeralStorage: string };
    commandTimeoutSeconds: number;
    collectorTimeoutSeconds: number;
    maxLogBytes: number;
  };
  egress: 'deny-all';
  collector: { executable: string; args: readonly string[] };
}

/** What runs: the accepted command, never anything a caller supplied. */
export interface AcceptedCommandSpec {
  version: 1 | 2;
  executable: string;
  args: readonly string[];
  /** Relative to the prepared repository (`.` is its root). */
  workingDirectory: string;
  environment: Readonly<Record<string, string>>;
  timeoutSeconds: number;
  /** Declared outputs, repository-relative (version 2 may declare none). */
  outputs: readonly string[];
  /** Version 2's source: the accepted seed and the baseline commit; null for version 1. */
  source: { seedSha256: string; seedLength: number; baseSha: string } | null;
}

export type PodRole = 'command' | 'collector';

/** One Pod of an operation, by its exact UID (deletion is preconditioned on it). */
export interface PodRef {
  role: PodRole;
  name: string;
  uid: string;
}

export interface CommandPodRequest {
  binding: BuildTestBinding;
  placement: BuildTestPlacement;
  profile: BuildTestProfileSnapshot;
  command: AcceptedCommandSpec;
  /** Version 2: the seed bytes, already checked against `command.source`; null for version 1. */
  seed: Uint8Array | null;
}

/** The preparation helper's receipt: the repository was prepared from exactly this source, here. */
export interface PreparationReceipt {
  operationId: string;
  checkpointId: string;
  sourceSha256: string;
  /** The prepared repository's path inside the Pod. */
  path: string;
  podUid: string;
}

/** Bounded command output: logs are never file evidence. */
export interface CommandLog {
  /** Bytes of output seen: all of it (simulated), or the bytes of `tail` read back (Kubernetes). */
  bytes: number;
  /** Whether output before (or, on Kubernetes, past the limit within a last line) was left out. */
  truncated: boolean;
  /** The last bytes of the output, UTF-8 (at most the profile's maxLogBytes). */
  tail: string;
  /**
   * Set when the log could not be read (a stable code: `http-404`, `forbidden-403`, `transport`,
   * `timeout`, `no-log-limit`): the log is then empty. The exit code stands either way.
   */
  unavailable?: string;
}

export type InterruptReason = 'timeout' | 'cancelled' | 'output-limit';

export type CommandObservation =
  | { state: 'absent' }
  | { state: 'running'; pod: PodRef; preparation: PreparationReceipt | null }
  | {
      state: 'exited';
      pod: PodRef;
      preparation: PreparationReceipt | null;
      exitCode: number;
      log: CommandLog;
    }
  | { state: 'interrupted'; pod: PodRef; reason: InterruptReason; message: string }
  /** Preparation refused the source (a seed that is not the accepted one, a receipt that does not match). */
  | { state: 'failed'; pod: PodRef; reason: 'preparation-failed'; message: string };

export interface CollectorRequest {
  binding: BuildTestBinding;
  placement: BuildTestPlacement;
  profile: BuildTestProfileSnapshot;
  command: AcceptedCommandSpec;
  /** The command Pod that exited 0 (the collector reads the repository it prepared). */
  commandPod: PodRef;
  preparation: PreparationReceipt | null;
}

/** One declared output as the collector read it. */
export interface OutputEvidence {
  path: string;
  size: number;
  sha256: string;
}

/** The collector's bounded receipt, bound to its own Pod and to the operation. */
export interface CollectorReceipt {
  podUid: string;
  container: string;
  operationId: string;
  checkpointId: string;
  requestFingerprint: string;
  version: 1 | 2;
  outputs: OutputEvidence[];
  /** Version 2: the sealed output document's reference; null for version 1. */
  capture: { sha256: string; length: number } | null;
}

export type CollectorFailure =
  | 'missing-output'
  | 'invalid-receipt'
  /** The tree could not be captured: a symlink, special file, nested mount, changed file or a limit. */
  | 'capture-refused';

export type CollectorObservation =
  | { state: 'absent' }
  | { state: 'running'; pod: PodRef }
  | { state: 'sealed'; pod: PodRef; receipt: CollectorReceipt }
  | { state: 'failed'; pod: PodRef; reason: CollectorFailure; message: string }
  | { state: 'interrupted'; pod: PodRef; reason: InterruptReason; message: string };

/** A sealed document: read back only by its exact collector Pod, digest and length. */
export interface CaptureRef {
  binding: BuildTestBinding;
  placement: BuildTestPlacement;
  collectorPodUid: string;
  sha256: string;
  length: number;
}

export interface BuildTestRunner {
  /**
   * Creates the operation's command Pod (a repeat answers the same Pod), prepares the repository
   * from the seed (version 2) and starts the accepted command once the preparation receipt matches.
   */
  startCommand(request: CommandPodRequest, options: CallOptions): Promise<PodRef>;
  /** Exact lookup of the operation's command Pod; `absent` only when the provider answered so. */
  observeCommand(
    binding: BuildTestBinding,
    placement: BuildTestPlacement,
    options: CallOptions,
  ): Promise<CommandObservation>;
  /** Creates the collector Pod (a repeat answers the same Pod); refused unless the command exited 0. */
  startCollector(request: CollectorRequest, options: CallOptions): Promise<PodRef>;
  observeCollector(
    binding: BuildTestBinding,
    placement: BuildTestPlacement,
    options: CallOptions,
  ): Promise<CollectorObservation>;
  /**
   * The sealed document's bytes as a stream, exactly `length` bytes with SHA-256 `sha256`: the last
   * chunk comes only once both are checked, else the stream fails instead (lib/capture-stream.ts).
   * The promise rejects when the capture cannot be read at all (no such collector Pod, gone); a
   * stream left early stops the read.
   */
  readCapture(ref: CaptureRef, options: CallOptions): Promise<AsyncIterable<Uint8Array>>;
  /** Deletes exactly these Pod UIDs (a Pod already gone counts as deleted). */
  deletePods(
    binding: BuildTestBinding,
    placement: BuildTestPlacement,
    pods: readonly PodRef[],
    options: CallOptions,
  ): Promise<void>;
}
